#!/usr/bin/env python3
"""train_ddp.py — Horovod-style data-parallel training of an MLP on
Fashion-MNIST with PyTorch on CUDA and mpi4py, as a framework does it: every
rank computes gradients on its share of the batch, the gradients are fused
into one flat CUDA tensor, MPI_Allreduce'd (sum), divided by the number of
ranks and applied by SGD with momentum. Nothing in it knows libgcmpi.

    mpirun -np 2 [-x LD_PRELOAD=libgcmpi.so -x GCMPI_CODEC=...] \\
        python3 train_ddp.py --data DIR --epochs 2 --arm NAME [--host-staged] --json OUT

--host-staged copies the flat gradient to host memory by hand, allreduces
it there and copies it back: what users of an MPI without CUDA support do
today. Otherwise the CUDA tensor itself goes to MPI_Allreduce (which only
works with libgcmpi preloaded, or with a CUDA-aware MPI).

Prints one line: arm, final test accuracy, median step time; writes them to
--json (rank 0)."""
import argparse
import gzip
import json
import os
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F
from mpi4py import MPI


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(data_dir, name):
    for suffix in (".gz", ""):
        p = os.path.join(data_dir, name + suffix)
        if os.path.exists(p):
            return read_idx(p)
    raise FileNotFoundError(os.path.join(data_dir, name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128, help="per rank")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--arm", default="?")
    ap.add_argument("--host-staged", action="store_true")
    ap.add_argument("--json", default="")
    a = ap.parse_args()

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    dev = torch.device("cuda")
    torch.manual_seed(0)  # same initial weights on every rank
    xtr = torch.tensor(load(a.data, "train-images-idx3-ubyte"), dtype=torch.float32).view(-1, 784) / 255
    ytr = torch.tensor(load(a.data, "train-labels-idx1-ubyte"), dtype=torch.int64)
    xte = torch.tensor(load(a.data, "t10k-images-idx3-ubyte"), dtype=torch.float32).view(-1, 784) / 255
    yte = torch.tensor(load(a.data, "t10k-labels-idx1-ubyte"), dtype=torch.int64)
    xtr, ytr, xte, yte = xtr.to(dev), ytr.to(dev), xte.to(dev), yte.to(dev)

    model = torch.nn.Sequential(torch.nn.Linear(784, a.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(a.hidden, a.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(a.hidden, 10)).to(dev)
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=a.lr, momentum=a.momentum)
    flat = torch.zeros(sum(p.numel() for p in params), dtype=torch.float32, device=dev)
    host = np.zeros(flat.numel(), dtype=np.float32) if a.host_staged else None

    steps_per_epoch = xtr.shape[0] // (a.batch * size)
    times = []
    for epoch in range(a.epochs):
        g = torch.Generator().manual_seed(1000 + epoch)  # same order on every rank
        order = torch.randperm(xtr.shape[0], generator=g).to(dev)
        for s in range(steps_per_epoch):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            lo = (s * size + rank) * a.batch
            idx = order[lo:lo + a.batch]
            loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            opt.zero_grad(set_to_none=False)
            loss.backward()
            at = 0
            for p in params:  # fuse
                flat[at:at + p.numel()].copy_(p.grad.view(-1))
                at += p.numel()
            if a.host_staged:
                torch.cuda.synchronize()
                host[:] = flat.cpu().numpy()
                comm.Allreduce(MPI.IN_PLACE, host, op=MPI.SUM)
                flat.copy_(torch.from_numpy(host))
            else:
                torch.cuda.synchronize()  # MPI reads the buffer outside torch's stream
                comm.Allreduce(MPI.IN_PLACE, flat, op=MPI.SUM)
            flat.div_(size)
            at = 0
            for p in params:  # unfuse
                p.grad.view(-1).copy_(flat[at:at + p.numel()])
                at += p.numel()
            opt.step()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)

    with torch.no_grad():
        acc = (model(xte).argmax(1) == yte).float().mean().item()
    steady = times[len(times) // 10:] or times
    step_ms = 1e3 * statistics.median(steady)
    accs = comm.allgather(acc)
    if rank == 0:
        res = {"arm": a.arm, "epochs": a.epochs, "ranks": size, "params": flat.numel(),
               "test_accuracy": acc, "ranks_agree": len(set(accs)) == 1,
               "median_step_ms": step_ms, "steps": len(times),
               "host_staged": a.host_staged,
               "gcmpi": {k: v for k, v in os.environ.items() if k.startswith("GCMPI_")},
               "gpu": torch.cuda.get_device_name(0)}
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=1)
        print(f"arm {a.arm}: test accuracy {acc:.4f}, median step {step_ms:.2f} ms over "
              f"{len(times)} steps, ranks agree: {res['ranks_agree']}", flush=True)


if __name__ == "__main__":
    main()
