# shellcheck shell=bash disable=SC2154  # nodes, rate ... are bench/netem's
# netem-cluster.sh — the emulated cluster of `bench/netem --nodes Q`, sourced
# by bench/netem (which has parsed and checked the options).
#
# Q nodes on one host. Node K is a network namespace PREFIX-nodeK whose only
# link, eth0 (10.77.0.K+1/24), is one end of a veth pair; the other end, nK,
# sits in the hub namespace PREFIX-hub on bridge br0 (a non-blocking switch).
# Each end's egress is a token bucket at RATE (with a netem delay under the
# node's side when asked), so a node sends at most RATE and receives at most
# RATE, both at once: RATE is per node and per direction, like a NIC port.
# Ranks of one node talk through shared memory (and TCP to the node's own
# address goes over loopback), so only traffic between nodes is shaped.
#
# The command runs on node0 (namespace, hostname node0); the MPI launcher
# reaches the other nodes through bench/netem-rsh, which it finds in the
# environment together with a hosts file of Q lines of S slots each.
#
# Expects from bench/netem: nodes, slots, rate, rate_bits, burst, delay, verbose, prog,
# die(). Uses the names cluster_*.

cluster_prefix="gcmpi-netem-$$"
cluster_dir=""
cluster_made=()
cluster_child=""

# Bytes that left through the token bucket on DEV in namespace NS.
cluster_link_bytes() { # ns dev
  ip netns exec "$1" tc -s qdisc show dev "$2" 2>/dev/null |
    awk '$1 == "qdisc" && $2 == "tbf" { t = 1 } t && $1 == "Sent" { print $2; exit }'
}

# With --verbose: what each node's link carried, to compare a job's time
# with what the link needs for it.
cluster_report_links() {
  local k sent recv
  for ((k = 0; k < nodes; k++)); do
    sent=$(cluster_link_bytes "$cluster_prefix-node$k" eth0)
    recv=$(cluster_link_bytes "$cluster_prefix-hub" "n$k")
    [ -n "$sent" ] && [ -n "$recv" ] || continue
    awk -v k="$k" -v s="$sent" -v r="$recv" -v b="$rate_bits" -v p="$prog" 'BEGIN {
      printf "%s: node%d link: sent %d bytes (%.3f s at the rate), received %d bytes (%.3f s)\n",
        p, k, s, s * 8 / b, r, r * 8 / b }' >&2
  done
}

# Removes what this run made, whatever state it got to; processes still in
# its namespaces (a launcher's daemons after a signal) are ended first.
cluster_cleanup() {
  if [ "$verbose" = 1 ] && [ ${#cluster_made[@]} -gt "$nodes" ]; then cluster_report_links; fi
  local ns pid i
  if [ -n "$cluster_child" ] && kill -0 "$cluster_child" 2>/dev/null; then
    kill -TERM "$cluster_child" 2>/dev/null || true
    # At most 5 s for the launcher to end its job: one stuck in its own
    # shutdown must not hold the cleanup up; what is left is killed below.
    for ((i = 0; i < 50; i++)); do kill -0 "$cluster_child" 2>/dev/null || break; sleep 0.1; done
  fi
  if [ "$verbose" = 1 ]; then
    for ns in "${cluster_made[@]}"; do
      for pid in $(ip netns pids "$ns" 2>/dev/null); do
        echo "$prog: ending ${ns#"$cluster_prefix"-}'s process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-160)" >&2
      done
    done
  fi
  for ns in "${cluster_made[@]}"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -TERM "$pid" 2>/dev/null || true; done
  done
  for ns in "${cluster_made[@]}"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns delete "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
  done
  if [ -n "$cluster_child" ]; then wait "$cluster_child" 2>/dev/null || true; fi
  if [ -n "$cluster_dir" ]; then rm -rf "$cluster_dir"; fi
}

# Namespaces named after this process's PID can only be left from an earlier
# run that was killed with SIGKILL (e.g. by a test harness's timeout) and
# whose PID is ours again: nothing can use them any more, so they go.
cluster_remove_stale() {
  local ns pid
  for ns in $(ip netns list 2>/dev/null | awk -v p="$cluster_prefix-" 'index($1, p) == 1 { print $1 }'); do
    echo "$prog: removing $ns, left from an earlier run killed with this PID" >&2
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns delete "$ns" 2>/dev/null || true
  done
  rm -rf "/etc/netns/$cluster_prefix-"*
}

cluster_add_ns() { # name
  local err
  err=$(ip netns add "$1" 2>&1) ||
    die "cannot create network namespace $1: $err (left from an earlier run? see README on stale namespaces; or this kernel or container does not allow network namespaces)"
  cluster_made+=("$1")
}

# Runs `ip ARGS...` in namespace NS; stops with WHAT failed and why.
cluster_ip() { # ns what args...
  local ns=$1 what=$2 err
  shift 2
  err=$(ip netns exec "$ns" ip "$@" 2>&1) || die "cannot $what: $err"
}

# Token bucket at RATE on DEV's egress in namespace NS, netem delay under it
# when DELAY is given.
cluster_shape() { # ns dev delay
  local err
  err=$(ip netns exec "$1" tc qdisc add dev "$2" root handle 1: tbf rate "$rate" burst "$burst" latency 200ms 2>&1) ||
    die "tc refused rate $rate: $err"
  if [ -n "$3" ]; then
    err=$(ip netns exec "$1" tc qdisc add dev "$2" parent 1:1 handle 10: netem delay "$3" limit 100000 2>&1) ||
      die "tc refused delay $3: $err (--delay needs the kernel's sch_netem; rate shaping alone works without it)"
  fi
}

cluster_build() {
  local hub="$cluster_prefix-hub" k ns hosts boot_id
  boot_id=$(cat /proc/sys/kernel/random/boot_id)
  cluster_remove_stale
  cluster_dir=$(mktemp -d "${TMPDIR:-/tmp}/$cluster_prefix.XXXXXX")
  cluster_add_ns "$hub"
  cluster_ip "$hub" "create the switch (a bridge; kernel module bridge)" link add br0 type bridge
  cluster_ip "$hub" "bring the switch up" link set br0 up
  hosts=$(printf '127.0.0.1 localhost\n'; for ((k = 0; k < nodes; k++)); do printf '10.77.0.%d node%d\n' $((k + 1)) "$k"; done)
  for ((k = 0; k < nodes; k++)); do
    ns="$cluster_prefix-node$k"
    cluster_add_ns "$ns"
    cluster_ip "$hub" "create node$k's link (a veth pair; kernel module veth)" \
      link add "n$k" type veth peer name eth0 netns "$ns"
    cluster_ip "$hub" "plug node$k's link into the switch" link set "n$k" master br0 up
    cluster_ip "$ns" "bring node$k's loopback up" link set lo up
    cluster_ip "$ns" "give node$k its address" addr add "10.77.0.$((k + 1))/24" dev eth0
    cluster_ip "$ns" "bring node$k's link up" link set eth0 up
    # Delay once per crossing (on the sender's side): one way T, round trip 2T.
    cluster_shape "$ns" eth0 "$delay"
    cluster_shape "$hub" "n$k" ""
    # ip netns exec mounts these over /etc/hosts: every node resolves nodeK.
    mkdir -p "/etc/netns/$ns"
    printf '%s\n' "$hosts" >"/etc/netns/$ns/hosts"
    # One boot id per node: UCX (MPICH's ch4:ucx) takes peers with the same
    # boot id as reachable through shared memory, which would bypass the link.
    printf '%s%04x\n' "${boot_id:0:32}" "$k" >"$cluster_dir/boot_id.node$k"
    printf 'node%d slots=%d\n' "$k" "$slots" >>"$cluster_dir/hostfile"
    printf 'node%d:%d\n' "$k" "$slots" >>"$cluster_dir/hosts-hydra"
  done
  if [ "$verbose" = 1 ]; then
    echo "$prog: $nodes nodes x $slots slots, namespaces $cluster_prefix-{hub,node0..node$((nodes - 1))}," \
      "each node's link shaped both ways:" >&2
    ip netns exec "$cluster_prefix-node0" tc qdisc show dev eth0 | sed "s/^/$prog:   node0 eth0: /" >&2
    ip netns exec "$hub" tc qdisc show dev n0 | sed "s/^/$prog:   hub n0:    /" >&2
  fi
}

# What the MPI launchers need to place S ranks on each node, block by block,
# and to start them there.
cluster_export_mpi_env() {
  local agent
  agent="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/netem-rsh"
  [ -x "$agent" ] || die "$agent not found or not executable (it belongs beside bench/netem)"
  export NETEM_CLUSTER_PREFIX="$cluster_prefix" NETEM_CLUSTER_DIR="$cluster_dir"
  # Open MPI: hosts and agent; ob1 with vader inside a node, tcp between.
  export OMPI_MCA_orte_default_hostfile="$cluster_dir/hostfile"
  export OMPI_MCA_plm_rsh_agent="$agent" OMPI_MCA_plm_rsh_no_tree_spawn=1
  export OMPI_MCA_rmaps_base_mapping_policy=slot
  export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp
  export OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0
  # Open MPI lets a waiting rank yield its core where it knows the host is
  # oversubscribed (mpi_yield_when_idle: 1 for 4 ranks on this 2-core host
  # under a plain mpirun, read through MPI_T), but the hostfile gives each
  # emulated node S slots of its own, so all ranks of the host spin: on the
  # 2 x 4 cluster on 2 cores a 16 KiB sum inside a node took 64 ms of
  # time slices, 53 us with yielding. More ranks than cores here: yield, as
  # on one host (a caller's own setting wins).
  if [ -z "${OMPI_MCA_mpi_yield_when_idle:-}" ] && [ $((nodes * slots)) -gt "$(nproc)" ]; then
    export OMPI_MCA_mpi_yield_when_idle=1
  fi
  # MPICH (hydra, ch4:ucx): the same hosts and agent. UCX carries large
  # messages inside a node too (measured: with UCX_TLS=self,tcp they went
  # through the node's loopback), so it gets its shared memory, kept inside
  # the node by the per-node boot id, and tcp on eth0 between nodes.
  export HYDRA_HOST_FILE="$cluster_dir/hosts-hydra" HYDRA_LAUNCHER=rsh HYDRA_LAUNCHER_EXEC="$agent"
  export UCX_TLS=sm,self,tcp UCX_NET_DEVICES=eth0
}

cluster_run() { # command...
  trap cluster_cleanup EXIT
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exit 143' TERM
  cluster_build
  cluster_export_mpi_env
  # In the background so a signal reaches the trap at once; stdin is passed
  # on explicitly because background jobs of a script otherwise read /dev/null.
  # shellcheck disable=SC2016  # expanded by the inner sh
  ip netns exec "$cluster_prefix-node0" unshare --uts --mount -- sh -c \
    'hostname node0 && mount --bind "$1" /proc/sys/kernel/random/boot_id && shift && exec "$@"' \
    sh "$cluster_dir/boot_id.node0" "$@" <&0 &
  cluster_child=$!
  local status=0
  wait "$cluster_child" || status=$?
  cluster_child=""
  exit "$status"
}
