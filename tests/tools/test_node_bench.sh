#!/usr/bin/env bash
# gcmpi-node-bench (hier's node phases, cached and streamed copies in
# turns) runs at 2 and 3 ranks, prints one row per size with positive
# times, and every sum exact; a bad option is refused with the usage.
source "$(dirname "$0")/common.sh"
[ -n "${NODE_BENCH:-}" ] || skip "gcmpi-node-bench not built"

for np in 2 3; do
  "$MPIRUN" -np "$np" "$NODE_BENCH" --sizes 64K,1M,3M --reps 3 >"$WORK/out" 2>"$WORK/err" \
    || { cat "$WORK/out" "$WORK/err" >&2; fail "np $np: gcmpi-node-bench failed"; }
  python3 - "$WORK/out" "$np" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
if not lines[0].startswith(f"{sys.argv[2]} ranks sharing memory"):
    sys.exit(f"FAIL: header {lines[0]!r}")
rows = [l.split() for l in lines[2:]]
if [int(r[0]) for r in rows] != [65536, 1 << 20, 3 << 20]:
    sys.exit(f"FAIL: sizes {rows}")
for r in rows:
    if not all(float(x) > 0 for x in r[1:4]) or r[5] != "yes":
        sys.exit(f"FAIL: row {r}")
PY
done
if "$MPIRUN" -np 1 "$NODE_BENCH" --bogus >"$WORK/out" 2>&1; then fail "--bogus accepted"; fi
grep -q "usage: mpirun -np N gcmpi-node-bench" "$WORK/out" || { cat "$WORK/out" >&2; fail "no usage"; }
echo "PASS"
