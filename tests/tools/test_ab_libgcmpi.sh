#!/usr/bin/env bash
# gcmpi-ab with the real libgcmpi.so around gcmpi-train: both arms train,
# arm B (fp16 gradients) has its statistics read from GCMPI_STATS, sends
# fewer bytes than it is offered, and reaches the accuracy of arm A.
. "$(dirname "$0")/common.sh"

[ -f "${GCMPI_LIB:-}" ] || skip "libgcmpi.so not built"
# The fixed rule: over shared memory auto rightly passes the calls
# through (or sums them exactly in the node's window), sending no fewer bytes.
"$GCMPI_AB" --runs 1 --lib "$GCMPI_LIB" --env 'GCMPI_CODEC=fp16' --env 'GCMPI_ALGO=rule' \
  --json "$WORK/ab.json" \
  -- "$MPIRUN" -np 2 "$GCMPI_TRAIN" --subset 2560 --test-subset 2000 --epochs 1 --quiet \
  >"$WORK/table" 2>"$WORK/err" || { cat "$WORK/err" >&2; fail "gcmpi-ab failed"; }
cat "$WORK/table"
python3 - "$WORK/ab.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]
def check(cond, what):
    if not cond:
        sys.exit(f"FAIL: {what}: {json.dumps(s)}")
check(s["A"]["runs"] == 1 and s["B"]["runs"] == 1, "both arms ran")
check(s["B"]["bytes_offered"], "libgcmpi reported the bytes offered (GCMPI_STATS)")
check(s["B"]["bytes_sent"] < s["B"]["bytes_offered"], "fp16 sends less than it is offered")
check(abs(s["A"]["metric_median"] - s["B"]["metric_median"]) < 0.02, "accuracy of A and B agree")
print("ok")
PY
