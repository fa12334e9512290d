#!/usr/bin/env python3
"""gpu_vs_torch.py - PyTorch doing the work of some libgcmpi codecs on the
same device tensor, beside `gcmpi-codec-bench --device cuda` (one table).

PyTorch work per codec (what a framework would do instead):
  topk, dgc  torch.topk of |x| at 1% (values and indices)
  int8       scale by 127 / max|x| and cast to int8
  fp16       cast to float16
  sign       sign of x cast to int8
Each is timed two ways, best of --reps each, on a tensor of --size
bytes of float32 (generalised-Gaussian-like: normal times a random
exponent), and reported as GB/s of input and as the ratio to a
device-to-device copy of the same bytes timed the same way: with CUDA
events (the kernels alone), and by the host clock around the work and a
torch.cuda.synchronize() (what a caller waits before the result can go
to MPI; libgcmpi's figures are timed this way, each call being
synchronous). The
libgcmpi figures come from running the codec benchmark with --json on the
same size; the table shows both per codec: libgcmpi's encode (no
residual), and its decode_add from a payload in device memory (the
kernels' rate, held against the copy) and from one in page-locked host
memory (the host-to-device copy of the payload included).

usage: gpu_vs_torch.py [--bench PATH] [--size BYTES] [--reps N]
Needs torch with CUDA; exits 77 (skipped) without a device or without torch.
"""
import argparse
import json
import subprocess
import sys
import time


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if s and s[-1].upper() in mult:
        return int(s[:-1]) * mult[s[-1].upper()]
    return int(s)


def torch_rates(torch, nbytes, reps):
    n = nbytes // 4
    dev = torch.device("cuda")
    g = torch.Generator(device=dev)
    g.manual_seed(1)
    x = torch.randn(n, device=dev, generator=g) * torch.exp2(
        torch.randint(-8, 8, (n,), device=dev, generator=g).float()) * 1e-3

    def best(fn):
        """(events seconds, host-clock seconds with the synchronize)"""
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        fn()  # warm up (allocator, kernels)
        torch.cuda.synchronize()
        t = w = float("inf")
        for _ in range(reps):
            start.record()
            fn()
            stop.record()
            torch.cuda.synchronize()
            t = min(t, start.elapsed_time(stop) / 1e3)
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            w = min(w, time.perf_counter() - t0)
        return t, w

    k = max(1, (n + 99) // 100)
    work = {
        "topk": lambda: torch.topk(x.abs(), k, sorted=False),
        "int8": lambda: (x * (127.0 / x.abs().max())).round().to(torch.int8),
        "fp16": lambda: x.to(torch.float16),
        "sign": lambda: torch.sign(x).to(torch.int8),
    }
    work["dgc"] = work["topk"]
    y = torch.empty_like(x)
    copy_s = best(lambda: y.copy_(x))[0]
    return copy_s, {name: best(fn) for name, fn in work.items()}


def gcmpi_rates(bench, size, reps):
    out = subprocess.run([bench, "--device", "cuda", "--size", str(size), "--reps", str(reps),
                          "--json"], check=True, capture_output=True, text=True).stdout
    return {r["codec"]: r for r in json.loads(out)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default="build-device/bench/gcmpi-codec-bench")
    ap.add_argument("--size", default="64M")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("SKIP: torch is not installed")
        return 77
    if not torch.cuda.is_available():
        print("SKIP: torch sees no CUDA device")
        return 77
    nbytes = parse_size(a.size)
    copy_s, torch_s = torch_rates(torch, nbytes, a.reps)
    ours = gcmpi_rates(a.bench, nbytes, a.reps)
    gb = nbytes / 1e9
    print(f"{nbytes} bytes float32, best of {a.reps}; torch copy {gb / copy_s:.1f} GB/s, "
          f"libgcmpi copy {next(iter(ours.values()))['copy_gbps']:.1f} GB/s" if ours else "")
    print(f"{'codec':<10} {'gcmpi enc GB/s':>15} {'enc/copy':>9} {'torch GB/s':>11} "
          f"{'torch/copy':>11} {'torch+sync':>11} {'dec GB/s':>9} {'dec/copy':>9} {'dec host GB/s':>14} "
          f"{'host/copy':>10}  torch work")
    for name in sorted(ours):
        r = ours[name]
        t = torch_s.get(name)
        tcol = (f"{gb / t[0]:11.2f} {copy_s / t[0]:11.3f} {gb / t[1]:11.2f}" if t
                else f"{'-':>11} {'-':>11} {'-':>11}")
        what = {"topk": "topk 1%", "dgc": "topk 1%", "int8": "scale+cast int8",
                "fp16": "cast fp16", "sign": "sign to int8"}.get(name, "")
        print(f"{name:<10} {r['encode_gbps']:15.2f} {r['encode_vs_copy']:9.3f} {tcol} "
              f"{r['decode_gbps']:9.2f} {r['decode_vs_copy']:9.3f} "
              f"{r['decode_host_gbps']:14.2f} {r['decode_host_vs_copy']:10.3f}  {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
