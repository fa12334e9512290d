#!/usr/bin/env python3
"""auto_vs_native.py - from gcmpi-coll-bench --json files run with --algo
including auto and the forced algorithms: per size and codec, auto against
the native allreduce of the same row and against the fastest forced
algorithm (issue 14 target: <= 1.05x and <= 1.1x).

    auto_vs_native.py [--summary] FILE...

--summary prints one Markdown row per file (LINK-npP.json): how many of
its (size, codec) rows meet each target and the worst ratios."""
import json, os, re, sys

summary = "--summary" in sys.argv
files = [a for a in sys.argv[1:] if a != "--summary"]
worst_n = worst_b = 0
if summary:
    print("| link | ranks | rows | auto <= 1.05x native | worst auto/native | "
          "auto <= 1.1x best forced | worst auto/best |")
    print("|---|---|---|---|---|---|---|")
for f in files:
    rows = [r for r in json.load(open(f)) if not r.get("error")]
    by = {}
    for r in rows:
        by.setdefault((r['size_bytes'], r['codec']), []).append(r)
    if not summary:
        print(f"== {f}: {rows[0]['ranks']} ranks")
    n = ok_n = ok_b = 0
    fw_n = fw_b = 0
    for (size, codec), v in sorted(by.items()):
        auto = [r for r in v if str(r['algo']).startswith('auto')]
        forced = [r for r in v if not str(r['algo']).startswith('auto')]
        if not auto or not forced:
            continue
        a = auto[0]
        best = min(forced, key=lambda r: r['compressed_ms'])
        rn = a['compressed_ms'] / a['native_ms']
        rb = a['compressed_ms'] / best['compressed_ms']
        n += 1
        ok_n += rn <= 1.05
        ok_b += rb <= 1.1
        fw_n, fw_b = max(fw_n, rn), max(fw_b, rb)
        if not summary:
            print(f"{size:>9} {codec:5} {a['algo']:18} auto {a['compressed_ms']:8.3f} ms  "
                  f"native {a['native_ms']:8.3f}  auto/native {rn:5.2f}  best {best['algo']:12} "
                  f"{best['compressed_ms']:8.3f}  auto/best {rb:5.2f}")
    worst_n, worst_b = max(worst_n, fw_n), max(worst_b, fw_b)
    if summary:
        m = re.match(r"(.+)-np(\d+)\.json", os.path.basename(f))
        link, np_ = m.groups() if m else (os.path.basename(f), str(rows[0]['ranks']))
        print(f"| {link} | {np_} | {n} | {ok_n} | {fw_n:.2f} | {ok_b} | {fw_b:.2f} |")
print(f"{'' if not summary else chr(10)}worst auto/native {worst_n:.2f}, worst auto/best {worst_b:.2f}")
