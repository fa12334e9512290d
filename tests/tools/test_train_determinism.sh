#!/usr/bin/env bash
# gcmpi-train is a pure function of its options and rank count: two runs with
# the same seed print identical epochs (times aside), and a different seed
# prints different ones (so the comparison can fail).
. "$(dirname "$0")/common.sh"

train() { # seed
  "$MPIRUN" -np 2 "$GCMPI_TRAIN" --subset 3000 --test-subset 2000 --epochs 2 --seed "$1" |
    grep -E '^(epoch|RESULT)' | sed -E 's/ (total_)?seconds=[0-9.]+//g'
}
train 7 >"$WORK/a"
train 7 >"$WORK/b"
train 8 >"$WORK/c"
cat "$WORK/a"
[ "$(grep -c '^epoch=' "$WORK/a")" -eq 2 ] && grep -q '^RESULT ' "$WORK/a" || fail "missing epoch or RESULT lines"
diff "$WORK/a" "$WORK/b" || fail "two runs with --seed 7 differ"
! diff -q "$WORK/a" "$WORK/c" >/dev/null || fail "--seed 8 gives the same run as --seed 7"
echo "ok: identical with the same seed, different with another"
