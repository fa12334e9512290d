#!/usr/bin/env bash
# bench/netem really shapes MPI traffic: a 16 MiB allreduce at 2 ranks takes
# at least 70% of the time the shaped link needs for it (2 x 16 MiB through
# the one loopback at 200 Mbit/s = 1.34 s) and far longer than without it,
# so shared memory was not used. The namespace is gone afterwards, the
# command's exit status comes back, and a bad RATE is refused.
. "$(dirname "$0")/common.sh"

[ "$(id -u)" -eq 0 ] || skip "bench/netem needs root"
command -v ip >/dev/null && command -v tc >/dev/null || skip "iproute2 (ip, tc) not installed"
ip netns add "gcmpi-netem-probe-$$" 2>/dev/null || skip "network namespaces not available here"
ip netns delete "gcmpi-netem-probe-$$"

count=$((4 * 1024 * 1024))
seconds() { field "$1" seconds_min; }
plain=$("$MPIRUN" -np 2 "$PROBE" --count $count --iters 2) || fail "probe failed without netem"
shaped=$("$NETEM" --verbose 200mbit -- "$MPIRUN" -np 2 "$PROBE" --count $count --iters 2 2>"$WORK/err") ||
  fail "probe failed under netem"
echo "without netem: $(seconds "$plain") s; at 200mbit: $(seconds "$shaped") s (link needs 1.34 s)"
[ "$(field "$shaped" metric)" = 1.5000 ] || fail "wrong sums under netem"
awk -v p="$(seconds "$plain")" -v s="$(seconds "$shaped")" 'BEGIN {
  need = 2 * 4 * 4 * 1024 * 1024 * 8 / 200e6
  if (s < 0.7 * need) { print "FAIL: faster than the link allows: shared memory?"; exit 1 }
  if (s < 5 * p) { print "FAIL: shaping made little difference"; exit 1 }
}' || exit 1
# Only this run's namespace: other jobs on the machine may run netem now.
ns=$({ grep -o 'namespace gcmpi-netem-[0-9]*' "$WORK/err" || true; } | head -n1 | cut -d' ' -f2)
[ -n "$ns" ] || fail "no namespace name in netem's --verbose output"
ip netns list | grep -q "^$ns\b" && fail "namespace $ns was left behind"

status=0
"$NETEM" 1gbit -- sh -c 'exit 7' || status=$?
[ "$status" -eq 7 ] || fail "exit status $status; expected the command's 7"
status=0
"$NETEM" 1gigabit -- true 2>"$WORK/err" || status=$?
[ "$status" -eq 2 ] && grep -q "RATE '1gigabit' is not a rate" "$WORK/err" || fail "a bad RATE is not refused"
echo "ok: shaped, cleaned up, status passed on, bad RATE refused"
