#!/usr/bin/env python3
"""kernel_table.py CSV WALL - the kernels of one profiled rep of
gcmpi-codec-bench --device cuda (ncu --csv --print-units base, metric
gpu__time_duration.sum) in launch order, with their durations in us, and a
subtotal per segment: a segment starts at each non-finite check (one per
encode: the residual encode, then the plain one), the kernels after the
second encode are the two decode_adds. WALL is the bench's own output
without the profiler, printed below for the per-call wall times."""
import csv
import sys


def rows(path):
    with open(path) as f:
        lines = f.readlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return []
    return [r for r in csv.DictReader(lines[start:])
            if r.get("Metric Name") == "gpu__time_duration.sum"]


def main():
    csv_path, wall_path = sys.argv[1], sys.argv[2]
    print(f"== {csv_path}")
    segment, total, seg = 0, 0.0, 0.0
    for r in rows(csv_path):
        name = r["Kernel Name"].split("(")[0]
        us = float(r["Metric Value"].replace(",", "")) / 1e3
        if "nonfinite" in name:
            if segment:
                print(f"   -- segment {segment}: {seg:.1f} us")
            segment, seg = segment + 1, 0.0
        seg += us
        total += us
        print(f"  {name[:48]:48s} grid {r.get('Grid Size', '?'):>16s} {us:9.1f} us")
    print(f"   -- segment {segment} (to the end): {seg:.1f} us; all kernels {total:.1f} us")
    with open(wall_path) as f:
        print("  wall (no profiler):", *("  " + l.rstrip() for l in f), sep="\n")


if __name__ == "__main__":
    main()
