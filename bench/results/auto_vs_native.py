#!/usr/bin/env python3
"""auto_vs_native.py - from gcmpi-coll-bench --json files run with --algo
including auto and the forced algorithms: per size and codec, auto against
the native allreduce of the same row and against the fastest forced
algorithm (issue 14 target: <= 1.05x and <= 1.1x).

    auto_vs_native.py [--summary] FILE...

--summary prints one Markdown row per file (LINK-npP.json): how many of
its (size, codec) rows meet each target and the worst ratios.

The auto row times the code of its pick (gcmpi-coll-bench resolves the
pick, then times it as the forced row of that algorithm does), so where
its pick is the best forced algorithm, auto/best is two timings of one
algorithm. The pick column separates the choice from that noise: the
forced row of auto's pick against the best forced row, both timed in the
same rounds under --interleave (1.0 when auto picked the best)."""
import json, os, re, sys

summary = "--summary" in sys.argv
files = [a for a in sys.argv[1:] if a != "--summary"]
worst_n = worst_b = 0
if summary:
    print("| link | ranks | rows | auto <= 1.05x native | worst auto/native | "
          "auto <= 1.1x best forced | worst auto/best | pick <= 1.1x best | worst pick/best |")
    print("|---|---|---|---|---|---|---|---|---|")
for f in files:
    rows = [r for r in json.load(open(f)) if not r.get("error")]
    by = {}
    for r in rows:
        by.setdefault((r['size_bytes'], r['codec']), []).append(r)
    if not summary:
        print(f"== {f}: {rows[0]['ranks']} ranks")
    n = ok_n = ok_b = ok_p = 0
    fw_n = fw_b = fw_p = 0
    for (size, codec), v in sorted(by.items()):
        auto = [r for r in v if str(r['algo']).startswith('auto')]
        forced = [r for r in v if not str(r['algo']).startswith('auto')]
        if not auto or not forced:
            continue
        a = auto[0]
        best = min(forced, key=lambda r: r['compressed_ms'])
        rn = a['compressed_ms'] / a['native_ms']
        rb = a['compressed_ms'] / best['compressed_ms']
        pick = str(a['algo']).split(':', 1)[-1]
        same = [r for r in forced if r['algo'] == pick]
        rp = same[0]['compressed_ms'] / best['compressed_ms'] if same else rb
        n += 1
        ok_n += rn <= 1.05
        ok_b += rb <= 1.1
        ok_p += rp <= 1.1
        fw_n, fw_b, fw_p = max(fw_n, rn), max(fw_b, rb), max(fw_p, rp)
        if not summary:
            print(f"{size:>9} {codec:5} {a['algo']:18} auto {a['compressed_ms']:8.3f} ms  "
                  f"native {a['native_ms']:8.3f}  auto/native {rn:5.2f}  best {best['algo']:12} "
                  f"{best['compressed_ms']:8.3f}  auto/best {rb:5.2f}  pick/best {rp:5.2f}")
    worst_n, worst_b = max(worst_n, fw_n), max(worst_b, fw_b)
    if summary:
        m = re.match(r"(.+)-np(\d+)\.json", os.path.basename(f))
        link, np_ = m.groups() if m else (os.path.basename(f), str(rows[0]['ranks']))
        print(f"| {link} | {np_} | {n} | {ok_n} | {fw_n:.2f} | {ok_b} | {fw_b:.2f} | {ok_p} | {fw_p:.2f} |")
print(f"{'' if not summary else chr(10)}worst auto/native {worst_n:.2f}, worst auto/best {worst_b:.2f}")
