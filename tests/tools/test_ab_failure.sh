#!/usr/bin/env bash
# A job that fails makes gcmpi-ab exit non-zero and say which arm and run
# failed, with what status, showing the end of the job's stderr; a job that
# runs too long is stopped and reported the same way; bad usage exits 2.
. "$(dirname "$0")/common.sh"

status=0
"$GCMPI_AB" --runs 2 --lib "$STATS_PRELOAD" --json "$WORK/ab.json" \
  -- "$MPIRUN" -np 2 "$PROBE" --fail 3 >"$WORK/out" 2>"$WORK/err" || status=$?
cat "$WORK/err"
[ "$status" -eq 1 ] || fail "exit status $status; expected 1"
grep -q "arm A (without libgcmpi), run 1 of 2 failed with exit status 3" "$WORK/err" ||
  fail "the message does not name the arm, the run and the status"
grep -q "failing on request with status 3" "$WORK/err" || fail "the job's stderr is not shown"
python3 -c "
import json, sys
d = json.load(open('$WORK/ab.json'))
assert d['failed'] is True and len(d['runs']) == 1 and d['runs'][0]['status'] == 3, d
" || fail "the JSON does not record the failed run"

status=0
"$GCMPI_AB" --runs 1 --timeout 1 --lib "$STATS_PRELOAD" -- sleep 30 >/dev/null 2>"$WORK/err" || status=$?
[ "$status" -eq 1 ] || fail "a run past --timeout gave exit status $status; expected 1"
grep -q "did not finish within --timeout 1 s" "$WORK/err" || fail "timeout not reported"

status=0
"$GCMPI_AB" --runs 1 --lib "$STATS_PRELOAD" --metric 'no group' -- true 2>"$WORK/err" || status=$?
[ "$status" -eq 2 ] && grep -q "expected exactly one" "$WORK/err" || fail "a bad --metric is not a usage error"
status=0
"$GCMPI_AB" --runs 1 --lib "$WORK/missing.so" -- true 2>"$WORK/err" || status=$?
[ "$status" -eq 2 ] && grep -q "no such file" "$WORK/err" || fail "a missing --lib is not a usage error"
echo "ok: failures are reported with arm, run, status and stderr"
