#!/bin/sh
# profile_kernels.sh — where the time of one encode and one decode_add
# goes, kernel by kernel: Nsight Compute (ncu) times every kernel of one
# rep of `gcmpi-codec-bench --device cuda` per codec (64 MiB), and
# kernel_table.py sums them per call beside the call's wall time from the
# same bench without the profiler. Not a pass/fail step: it explains the
# step-5 figures (launch gaps and host waits are wall minus kernels).
#   PROFILE_CODECS="topk dgc int8 fp16" (default) which codecs
# Writes $OUT/kernels-CODEC.csv and $OUT/kernels.txt; skips without ncu.
. "$(dirname "$0")/common.sh"
bench=$BUILD/bench/gcmpi-codec-bench
NCU=${NCU:-$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)}
if [ -z "$NCU" ] || [ ! -x "$NCU" ]; then
    summary profile SKIP "ncu not found"
    exit 0
fi
: >"$OUT/kernels.txt"
for c in ${PROFILE_CODECS:-topk dgc int8 fp16}; do
    timeout 120 "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
        "$bench" --device cuda --codec "$c" --size 64M --reps 1 \
        >"$OUT/kernels-$c.csv" 2>"$OUT/kernels-$c.err" || {
        summary profile FAIL "ncu on $c (see kernels-$c.err)"
        continue
    }
    timeout 60 "$bench" --device cuda --codec "$c" --size 64M --reps 5 >"$OUT/wall-$c.txt" 2>&1
    python3 "$ROOT/gpu/device-steps/kernel_table.py" "$OUT/kernels-$c.csv" "$OUT/wall-$c.txt" \
        >>"$OUT/kernels.txt" 2>&1
done
cat "$OUT/kernels.txt"
summary profile PASS "per-kernel times in kernels.txt"
