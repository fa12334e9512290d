#!/usr/bin/env bash
# A container's small /dev/shm (Docker's default is 64 MiB): hier's window
# is made smaller to fit it, or, with no room for one, given up for MPI's
# own reduce-scatter with a note naming the host; the job neither hangs
# nor stops (Open MPI 4.1 fails a window it cannot back on one rank and
# leaves the others waiting), and codec none's sums stay exact. Needs a
# private mount namespace (unshare -m as root): skipped where there is none.
source "$(dirname "$0")/common.sh"
[ -n "${COLL_BENCH:-}" ] || skip "gcmpi-coll-bench not built"
command -v unshare >/dev/null || skip "no unshare"
unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm' 2>/dev/null \
  || skip "cannot mount a private /dev/shm here"

run() { # /dev/shm-size codecs algorithms
  GCMPI_AUTO_CACHE=off timeout 150 unshare -m sh -c \
    'mount -t tmpfs -o size="$0" tmpfs /dev/shm && exec "$@"' "$1" \
    "$MPIRUN" -np 4 "$COLL_BENCH" --sizes 4M --codec "$2" --ratio 0.01 --algo "$3" \
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
# 1 MiB: no window fits; MPI sums inside each node, and each node says so;
# auto's calibration finds it so too.
run 1m none,topk hier,auto
notes=$(grep -c "no room for hier's window" "$WORK/1m.err" || true)
[ "$notes" -ge 1 ] || { cat "$WORK/1m.err" >&2; fail "/dev/shm of 1 MiB: no note"; }
echo "small /dev/shm: window fitted at 16 MiB, given up at 1 MiB ($notes notes)"
