#!/usr/bin/env bash
# gcmpi-ab --plot writes a PNG (run by a python3 that has matplotlib).
. "$(dirname "$0")/common.sh"

py=""
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c 'import matplotlib' 2>/dev/null; then py=$candidate; break; fi
done
[ -n "$py" ] || skip "no python3 with matplotlib"
"$py" "$GCMPI_AB" --runs 1 --lib "$STATS_PRELOAD" --metric 'metric=([0-9.]+)' --plot "$WORK/ab.png" \
  -- "$MPIRUN" -np 2 "$PROBE" --count 1000 --iters 1 >/dev/null 2>"$WORK/err" ||
  { cat "$WORK/err" >&2; fail "gcmpi-ab --plot failed"; }
[ "$(head -c 8 "$WORK/ab.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
  fail "$WORK/ab.png is not a PNG"
[ "$(stat -c %s "$WORK/ab.png")" -gt 10000 ] || fail "the PNG is too small to hold two panels"
echo "ok: PNG written"
