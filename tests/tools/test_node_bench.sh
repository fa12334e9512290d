#!/usr/bin/env bash
# gcmpi-node-bench (hier's node phases, cached and streamed copies and
# window part sizes in turns) runs at 2 and 3 ranks as one node and at 4 as
# two nodes of 2, prints one row per size and part with positive times,
# and every sum exact, with the copy beside them; a bad option is refused with the usage.
source "$(dirname "$0")/common.sh"
[ -n "${NODE_BENCH:-}" ] || skip "gcmpi-node-bench not built"

check() { # file ranks node-size sizes parts
  python3 - "$@" <<'PY'
import sys
path, ranks, q, sizes, parts = sys.argv[1:6]
lines = open(path).read().splitlines()
if not lines[0].startswith(f"{ranks} ranks, nodes of {q} sharing memory"):
    sys.exit(f"FAIL: header {lines[0]!r}")
rows = [l.split() for l in lines[2:]]
want = [(s, p) for s in map(int, sizes.split(",")) for p in map(int, parts.split(","))]
if [(int(r[0]), int(r[1])) for r in rows] != want:
    sys.exit(f"FAIL: rows {rows}, want sizes and parts {want}")
for r in rows:
    if not all(float(x) > 0 for x in r[2:5] + [r[7]]) or r[6] != "yes":
        sys.exit(f"FAIL: row {r}")
PY
}

for np in 2 3; do
  "$MPIRUN" -np "$np" "$NODE_BENCH" --sizes 64K,1M,3M --reps 3 >"$WORK/out" 2>"$WORK/err" \
    || { cat "$WORK/out" "$WORK/err" >&2; fail "np $np: gcmpi-node-bench failed"; }
  check "$WORK/out" "$np" "$np" 65536,1048576,3145728 1048576 || fail "np $np"
done
"$MPIRUN" -np 4 "$NODE_BENCH" --sizes 64K,1M --reps 2 --node-size 2 --parts 1K,64K \
  >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/out" "$WORK/err" >&2; fail "two nodes failed"; }
check "$WORK/out" 4 2 65536,1048576 1024,65536 || fail "two nodes of 2, two part sizes"
if "$MPIRUN" -np 1 "$NODE_BENCH" --bogus >"$WORK/out" 2>&1; then fail "--bogus accepted"; fi
grep -q "usage: mpirun -np N gcmpi-node-bench" "$WORK/out" || { cat "$WORK/out" >&2; fail "no usage"; }
echo "PASS"
