#!/usr/bin/env python3
"""auto_vs_native.py - from gcmpi-coll-bench --json files run with --algo
including auto and the forced algorithms: per size and codec, auto against
the native allreduce of the same row and against the fastest forced
algorithm (issue 14 target: <= 1.05x and <= 1.1x)."""
import json, sys
worst_n = worst_b = 0
for f in sys.argv[1:]:
    rows = json.load(open(f))
    by = {}
    for r in rows:
        by.setdefault((r['size_bytes'], r['codec']), []).append(r)
    print(f"== {f}: {rows[0]['ranks']} ranks")
    for (size, codec), v in sorted(by.items()):
        auto = [r for r in v if str(r['algo']).startswith('auto')]
        forced = [r for r in v if not str(r['algo']).startswith('auto')]
        if not auto: continue
        a = auto[0]
        best = min(forced, key=lambda r: r['compressed_ms'])
        rn = a['compressed_ms'] / a['native_ms']; rb = a['compressed_ms'] / best['compressed_ms']
        worst_n = max(worst_n, rn); worst_b = max(worst_b, rb)
        print(f"{size:>9} {codec:5} {a['algo']:18} auto {a['compressed_ms']:8.3f} ms  native {a['native_ms']:8.3f}  auto/native {rn:5.2f}  best {best['algo']:12} {best['compressed_ms']:8.3f}  auto/best {rb:5.2f}")
print(f"worst auto/native {worst_n:.2f}, worst auto/best {worst_b:.2f}")
