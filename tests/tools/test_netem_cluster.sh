#!/usr/bin/env bash
# bench/netem --nodes: a 2-node x 2-rank job runs and sums right; the
# shared-memory split sees 2 nodes, node by node, one hostname each; traffic
# between the nodes is shaped (a 4 MiB message from node0 to node1, and a
# 4 MiB allreduce between one rank of each node, take at least 70% of the
# 1.34 s the 25 Mbit/s link needs to bring 4 MiB to a rank) and traffic
# inside a node is not (an allreduce among the ranks of a node takes less
# than half of that). Nothing is left behind after
# a normal exit nor after SIGTERM in the middle of a job; bad values are
# refused.
. "$(dirname "$0")/common.sh"

[ "$(id -u)" -eq 0 ] || skip "bench/netem needs root"
command -v ip >/dev/null && command -v tc >/dev/null || skip "iproute2 (ip, tc) not installed"
command -v unshare >/dev/null || skip "unshare (util-linux) not installed"
ip netns add "gcmpi-netem-probe-$$" 2>/dev/null || skip "network namespaces not available here"
ip netns delete "gcmpi-netem-probe-$$"
unshare --uts true 2>/dev/null || skip "UTS namespaces not available here"

# Every job gets a time limit well under the test's 180 s, so that a hung job
# fails the test with a message of its own instead of the test timing out; at
# the limit, timeout's SIGTERM makes netem end the job and remove the cluster.
# MPICH 4.0 (Debian 12) with UCX over tcp hangs now and then in MPI_Finalize
# (seen in 5-15% of these jobs, more under load): one rank spins flushing its
# endpoints while the others already wait in the PMI barrier, which does not
# progress UCX, and no longer read what it sends them. The job's work is done
# by then; that bug is not netem's, so a hung job is run up to twice more
# before the test fails (a CI run of 2026-12-04 saw node_probe, which runs
# without the library, hang twice in a row, and pass three times of three
# when run again). stdin is /dev/null: timeout gives the job a process group of
# its own, which must not read a terminal.
JOB_LIMIT=30
exec 3>&2 # the test's stderr, for notes from jobs whose stderr is captured
netem_job() { # what, netem args...
  local what=$1 try status
  shift
  for try in 1 2 3; do
    status=0
    timeout -k 10 "$JOB_LIMIT" "$NETEM" "$@" </dev/null || status=$?
    [ "$status" -eq 124 ] || [ "$status" -eq 137 ] || return "$status"
    echo "note: $what did not finish within $JOB_LIMIT s (try $try of 3); ended through netem's SIGTERM" >&3
  done
  echo "FAIL: $what hung three times (each time ended after $JOB_LIMIT s)" >&2
  return 1
}

# The namespace prefix of a run (the last try's), from its --verbose lines on stderr.
prefix_of() { { grep -o 'namespaces gcmpi-netem-[0-9]*' "$1" || true; } | tail -n1 | cut -d' ' -f2; }
assert_gone() { # prefix
  [ -n "$1" ] || fail "no namespace prefix in netem's --verbose output"
  ! ip netns list | grep -q "^$1-" || fail "namespaces of $1 were left behind: $(ip netns list | grep "^$1-")"
  ! ls -d "/etc/netns/$1-"* >/dev/null 2>&1 || fail "/etc/netns/$1-* was left behind"
}

# Placement, correctness and shaping, seen from inside the job.
out=$(netem_job "node_probe in a 2 x 2 cluster" --verbose --nodes 2 25mbit -- "$MPIRUN" -np 4 "$NODE_PROBE" \
  --count $((1024 * 1024)) --iters 2 2>"$WORK/err") || { cat "$WORK/err" >&2; fail "node_probe failed in a 2 x 2 cluster"; }
echo "$out"
grep -q '^node=0 host=node0 ranks=0-1$' <<<"$out" && grep -q '^node=1 host=node1 ranks=2-3$' <<<"$out" ||
  fail "ranks are not placed node by node on node0 and node1"
[ "$(field "$out" nodes)" = 2 ] && [ "$(field "$out" sizes)" = 2,2 ] ||
  fail "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) does not see 2 nodes of 2 ranks"
[ "$(field "$out" block)" = 1 ] && [ "$(field "$out" hosts_ok)" = 1 ] || fail "nodes and hostnames disagree"
[ "$(field "$out" metric)" = 1.5000 ] || fail "wrong sums inside or between nodes"
awk -v intra="$(field "$out" intra_seconds)" -v inter="$(field "$out" inter_seconds)" \
  -v send="$(field "$out" send_seconds)" 'BEGIN {
  need = 1024 * 1024 * 4 * 8 / 25e6
  if (send < 0.7 * need || inter < 0.7 * need) { print "FAIL: between nodes faster than the link allows"; exit 1 }
  if (intra > 0.5 * need) { print "FAIL: inside a node as slow as the link: shaped?"; exit 1 }
}' || exit 1
assert_gone "$(prefix_of "$WORK/err")"

# A whole-job allreduce over both nodes.
out=$(netem_job "allreduce_probe in a 2 x 2 cluster" --verbose --nodes 2 1gbit -- "$MPIRUN" -np 4 "$PROBE" \
  --count 100000 --iters 2 2>"$WORK/err") || { cat "$WORK/err" >&2; fail "allreduce_probe failed in a 2 x 2 cluster"; }
[ "$(field "$out" ranks)" = 4 ] && [ "$(field "$out" metric)" = 1.5000 ] || fail "wrong sums over 2 nodes: $out"

# SIGTERM while the launcher's daemons run on both nodes: all is removed.
"$NETEM" --verbose --nodes 2 1gbit -- "$MPIRUN" -np 4 sleep 60 2>"$WORK/err" &
netem_pid=$!
for _ in $(seq 100); do
  prefix=$(prefix_of "$WORK/err")
  [ -n "$prefix" ] && [ -n "$(ip netns pids "$prefix-node1" 2>/dev/null)" ] && break
  sleep 0.1
done
[ -n "$(ip netns pids "$prefix-node1" 2>/dev/null)" ] || fail "nothing started on node1"
kill -TERM "$netem_pid"
# netem's cleanup is bounded; still, never wait on it without a limit.
for _ in $(seq 300); do kill -0 "$netem_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$netem_pid" 2>/dev/null; then
  kill -KILL "$netem_pid" 2>/dev/null || true
  cat "$WORK/err" >&2
  fail "netem did not exit within 30 s of SIGTERM"
fi
status=0
wait "$netem_pid" || status=$?
[ "$status" -eq 143 ] || { cat "$WORK/err" >&2; fail "exit status $status after SIGTERM; expected 143"; }
assert_gone "$prefix"

status=0
"$NETEM" --nodes 2 1gbit -- "$MPIRUN" -np 3 true 2>"$WORK/err" || status=$?
[ "$status" -eq 2 ] && grep -q -- "-np 3 ranks do not fill 2 nodes evenly" "$WORK/err" ||
  fail "an uneven rank count is not refused"
status=0
"$NETEM" --nodes 0 1gbit -- true 2>"$WORK/err" || status=$?
[ "$status" -eq 2 ] && grep -q -- "--nodes '0' is not valid" "$WORK/err" || fail "--nodes 0 is not refused"
echo "ok: 2 x 2 cluster placed, split and shaped right; cleaned up after exit and SIGTERM; bad values refused"
