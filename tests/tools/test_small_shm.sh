#!/usr/bin/env bash
# A container's small /dev/shm (Docker's default is 64 MiB): hier's window
# is made smaller to fit it, or, with no room for one, given up for MPI's
# own reduce-scatter with a note naming the host; the job neither hangs
# nor stops (Open MPI 4.1 fails a window it cannot back on one rank and
# leaves the others waiting), and codec none's sums stay exact. Giving up
# is checked exactly by test_algos (a room set by the test); here, real
# tmpfs sizes. Needs a private mount namespace (unshare -m as root):
# skipped where there is none, or where the MPI itself does not run in it.
source "$(dirname "$0")/common.sh"
[ -n "${COLL_BENCH:-}" ] || skip "gcmpi-coll-bench not built"
command -v unshare >/dev/null || skip "no unshare"
unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm' 2>/dev/null \
  || skip "cannot mount a private /dev/shm here"

in_small_shm() { # /dev/shm-size command...
  timeout 150 unshare -m sh -c 'mount -t tmpfs -o size="$0" tmpfs /dev/shm && exec "$@"' "$@"
}

run() { # /dev/shm-size codecs algorithms
  # The MPI itself must start there (MPICH over UCX does not in 16 MiB).
  in_small_shm "$1" "$MPIRUN" -np 4 "$PROBE" >/dev/null 2>&1 \
    || skip "this MPI does not run 4 ranks in a /dev/shm of $1 without the library"
  GCMPI_AUTO_CACHE=off in_small_shm "$1" "$MPIRUN" -np 4 "$COLL_BENCH" --sizes 4M \
    --codec "$2" --ratio 0.01 --algo "$3" \
    --node-size 2 --reps 2 --warmup 1 --json >"$WORK/$1.json" 2>"$WORK/$1.err" \
    || { cat "$WORK/$1.err" >&2; fail "/dev/shm of $1: the job failed"; }
  python3 - "$WORK/$1.json" "$2" "$3" <<'PY' || fail "/dev/shm of $1: wrong rows"
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == len(sys.argv[2].split(",")) * len(sys.argv[3].split(",")), rows
for r in rows:
    assert r["error"] is None, r
    if r["codec"] == "none":
        assert r["rel_error"] == 0, r
PY
}

# 16 MiB: four ranks' 16 MiB vectors go through smaller parts, in rounds
# (the two nodes' windows made one after the other: they share the host's
# /dev/shm; each of the bench's cases has windows of its own).
run 16m none hier
if grep -q "no room for hier's window" "$WORK/16m.err"; then
  cat "$WORK/16m.err" >&2
  fail "/dev/shm of 16 MiB: the window was given up although smaller parts fit"
fi
# 20 MiB, four cases each with windows of its own beside Open MPI's own
# 16 MiB: later windows are smaller still, or find no room and sum
# through MPI (each node that gives up says so); auto's calibration meets
# the same. Which of them gives up depends on the order the nodes came in;
# that none stops or errs, and codec none stays exact, does not.
run 20m none,topk hier,auto
notes=$(grep -c "no room for hier's window" "$WORK/20m.err" || true)
echo "small /dev/shm: windows fitted in 16 MiB; in 20 MiB with four cases $notes nodes gave up"
