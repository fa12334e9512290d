#!/usr/bin/env python3
"""mpi4py_tensors.py CODEC BOUND — an ordinary mpi4py program that
allreduces and allgathers PyTorch CUDA tensors (mpi4py passes MPI the device
pointer through __cuda_array_interface__). Nothing in it knows libgcmpi.

Checks on every rank, against sums computed on the CPU: float32 allreduce
(sendbuf and in place, 1 Mi elements) and allgather within BOUND (relative
L2 error; 0 means bit-exact), every rank holding the same bytes; int64 sum
and float32 MAX exact. Prints one line "mpi4py_tensors CODEC: ..." on rank 0
and exits 1 when a check fails."""
import sys

import torch
from mpi4py import MPI


def rel_err(got, want):
    d = (got.double() - want.double()).norm().item()
    w = want.double().norm().item()
    return d / w if w > 0 else d


def main():
    codec = sys.argv[1] if len(sys.argv) > 1 else "?"
    bound = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    torch.cuda.set_device(0)
    dev = torch.device("cuda")
    n = 1 << 20
    problems = []

    def check(name, got, want, exact=False):
        err = rel_err(got.float().cpu(), want.float().cpu())
        ok = torch.equal(got.cpu(), want.cpu()) if (exact or bound == 0.0) else err <= bound
        digest = torch.tensor([int(got.cpu().view(torch.uint8).long().sum().item())],
                              dtype=torch.int64)
        lo, hi = digest.clone(), digest.clone()
        comm.Allreduce(MPI.IN_PLACE, lo.numpy(), op=MPI.MIN)
        comm.Allreduce(MPI.IN_PLACE, hi.numpy(), op=MPI.MAX)
        if not ok:
            problems.append(f"{name}: relative error {err:.3g} > {bound}")
        if lo.item() != hi.item():
            problems.append(f"{name}: ranks hold different bytes")
        return err

    base = torch.arange(n, dtype=torch.float32) % 97 - 48
    x = (base * (rank + 1) / 8).to(dev)
    want = base * sum(r + 1 for r in range(size)) / 8
    torch.cuda.synchronize()

    y = torch.empty_like(x)
    comm.Allreduce(x, y, op=MPI.SUM)
    e1 = check("allreduce", y, want)
    z = x.clone()
    comm.Allreduce(MPI.IN_PLACE, z, op=MPI.SUM)
    e2 = check("allreduce in place", z, want)

    m = n // 4
    blocks = torch.empty(size * m, dtype=torch.float32, device=dev)
    comm.Allgather(x[:m].contiguous(), blocks)
    wantg = torch.cat([base[:m] * (r + 1) / 8 for r in range(size)])
    e3 = check("allgather", blocks, wantg)

    xi = torch.arange(n, dtype=torch.int64, device=dev) + rank
    comm.Allreduce(MPI.IN_PLACE, xi, op=MPI.SUM)
    check("int64 sum", xi, torch.arange(n, dtype=torch.int64) * size + sum(range(size)), exact=True)

    xm = x.clone()
    comm.Allreduce(MPI.IN_PLACE, xm, op=MPI.MAX)
    check("float max", xm, torch.maximum(base * size / 8, base / 8), exact=True)

    if rank == 0:
        state = "FAILED: " + "; ".join(problems) if problems else "ok"
        print(f"mpi4py_tensors {codec}: {state} (relative errors: allreduce {e1:.3g}, "
              f"in place {e2:.3g}, allgather {e3:.3g}; bound {bound})", flush=True)
    bad = comm.allreduce(len(problems), op=MPI.SUM)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
