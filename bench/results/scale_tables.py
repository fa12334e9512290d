#!/usr/bin/env python3
"""scale_tables.py — the Markdown tables of bench/results/run-scale.sh.

    bench/results/scale_tables.py OUT_DIR

Reads OUT_DIR/LINK-npP.json and OUT_DIR/cluster.json (gcmpi-coll-bench
--json: one row per size, codec, algorithm; each compressed time paired
with a native PMPI_Allreduce timed right before it) and prints:
  1. auto against native and against the best forced algorithm, per link,
     ranks, codec and size: auto ms / native ms and auto ms / best ms (the
     best of every forced algorithm, passthrough included, in the same run),
     and pick / best: the forced row of auto's pick against the best (auto's
     row times its pick's code, so this is the cost of the choice alone;
     auto_vs_native.py);
  2. the cluster run: each algorithm's time and speedup over native;
  3. the cost model against what was measured: predicted / measured per
     row, and the share of rows within 25 %.
"""

import glob
import json
import os
import re
import sys


def load(path):
    """The rows of one run; a run cut short keeps the rows it finished
    (gcmpi-coll-bench prints one row per line)."""
    rows = []
    for line in open(path):
        line = line.strip().rstrip(",")
        if line.startswith("{") and line.endswith("}"):
            r = json.loads(line)
            if r.get("error") is None:
                rows.append(r)
    return rows


def mib(b):
    return f"{b / 1048576:g} MiB" if b >= 1048576 else f"{b / 1024:g} KiB"


def main():
    out = sys.argv[1]
    files = sorted(glob.glob(os.path.join(out, "*-np*.json")),
                   key=lambda p: (os.path.basename(p).split("-np")[0], int(re.findall(r"np(\d+)", p)[0])))
    pred_rows = []
    print("| link | ranks | codec | size | auto picks | auto ms | native ms | auto/native | best forced | auto/best | pick/best |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    worst_native = worst_best = worst_pick = 0.0
    for path in files:
        link, np_ = re.match(r"(.+)-np(\d+)\.json", os.path.basename(path)).groups()
        rows = load(path)
        pred_rows += [(link, np_, r) for r in rows]
        keys = sorted({(r["codec"], r["size_bytes"]) for r in rows})
        for codec, size in keys:
            case = [r for r in rows if r["codec"] == codec and r["size_bytes"] == size]
            auto = [r for r in case if r["algo"].startswith("auto:")]
            forced = [r for r in case if not r["algo"].startswith("auto:")]
            if not auto or not forced:
                continue
            a = auto[0]
            best = min(forced, key=lambda r: r["compressed_ms"])
            rn = a["compressed_ms"] / a["native_ms"]
            rb = a["compressed_ms"] / best["compressed_ms"]
            same = [r for r in forced if r["algo"] == a["algo"][5:]]
            rp = same[0]["compressed_ms"] / best["compressed_ms"] if same else rb
            worst_native, worst_best = max(worst_native, rn), max(worst_best, rb)
            worst_pick = max(worst_pick, rp)
            print(f"| {link} | {np_} | {codec} | {mib(size)} | {a['algo'][5:]} | {a['compressed_ms']:.2f} | "
                  f"{a['native_ms']:.2f} | {rn:.2f} | {best['algo']} {best['compressed_ms']:.2f} | {rb:.2f} | {rp:.2f} |")
    print(f"\nworst auto/native {worst_native:.2f}, worst auto/best {worst_best:.2f}, "
          f"worst pick/best {worst_pick:.2f}\n")

    cluster = os.path.join(out, "cluster.json")
    if os.path.exists(cluster):
        print("| codec | algorithm | ms | native ms (same run) | speedup over native |")
        print("|---|---|---|---|---|")
        for r in load(cluster):
            print(f"| {r['codec']} | {r['algo']} | {r['compressed_ms']:.0f} | {r['native_ms']:.0f} | "
                  f"{r['native_ms'] / r['compressed_ms']:.2f}x |")
            pred_rows.append(("cluster 2x4 1gbit", "8", r))
        print()

    within = total = 0
    print("| link | ranks | codec | size | algorithm | predicted ms | measured ms | predicted/measured |")
    print("|---|---|---|---|---|---|---|---|")
    for link, np_, r in pred_rows:
        p = r.get("predicted_ms")
        if p is None or not p or r["compressed_ms"] <= 0:
            continue
        q = p / r["compressed_ms"]
        total += 1
        within += abs(q - 1) <= 0.25
        print(f"| {link} | {np_} | {r['codec']} | {mib(r['size_bytes'])} | {r['algo']} | {p:.2f} | "
              f"{r['compressed_ms']:.2f} | {q:.2f} |")
    if total:
        print(f"\n{within} of {total} predictions within 25 % of the measured time")


if __name__ == "__main__":
    main()
