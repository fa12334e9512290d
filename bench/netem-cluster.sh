# shellcheck shell=bash
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
# Expects from bench/netem: nodes, slots, rate, burst, delay, verbose, prog,
# die(). Uses the names cluster_*.

cluster_prefix="gcmpi-netem-$$"
cluster_dir=""
cluster_made=()
cluster_child=""

# Removes what this run made, whatever state it got to; processes still in
# its namespaces (a launcher's daemons after a signal) are ended first.
cluster_cleanup() {
  if [ -n "$cluster_child" ] && kill -0 "$cluster_child" 2>/dev/null; then
    kill -TERM "$cluster_child" 2>/dev/null || true
    wait "$cluster_child" 2>/dev/null || true
  fi
  local ns pid
  for ns in "${cluster_made[@]}"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -TERM "$pid" 2>/dev/null || true; done
  done
  for ns in "${cluster_made[@]}"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns delete "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
  done
  if [ -n "$cluster_dir" ]; then rm -rf "$cluster_dir"; fi
}

cluster_add_ns() { # name
  local err
  err=$(ip netns add "$1" 2>&1) ||
    die "cannot create network namespace $1: $err (does this kernel or container allow network namespaces?)"
  cluster_made+=("$1")
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
  local hub="$cluster_prefix-hub" k ns hosts
  cluster_dir=$(mktemp -d "${TMPDIR:-/tmp}/$cluster_prefix.XXXXXX")
  cluster_add_ns "$hub"
  ip netns exec "$hub" ip link add br0 type bridge
  ip netns exec "$hub" ip link set br0 up
  hosts=$(printf '127.0.0.1 localhost\n'; for ((k = 0; k < nodes; k++)); do printf '10.77.0.%d node%d\n' $((k + 1)) "$k"; done)
  for ((k = 0; k < nodes; k++)); do
    ns="$cluster_prefix-node$k"
    cluster_add_ns "$ns"
    ip netns exec "$hub" ip link add "n$k" type veth peer name eth0 netns "$ns"
    ip netns exec "$hub" ip link set "n$k" master br0 up
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip addr add "10.77.0.$((k + 1))/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    # Delay once per crossing (on the sender's side): one way T, round trip 2T.
    cluster_shape "$ns" eth0 "$delay"
    cluster_shape "$hub" "n$k" ""
    # ip netns exec mounts these over /etc/hosts: every node resolves nodeK.
    mkdir -p "/etc/netns/$ns"
    printf '%s\n' "$hosts" >"/etc/netns/$ns/hosts"
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
  export GCMPI_NETEM_CLUSTER="$cluster_prefix"
  # Open MPI: hosts and agent; ob1 with vader inside a node, tcp between.
  export OMPI_MCA_orte_default_hostfile="$cluster_dir/hostfile"
  export OMPI_MCA_plm_rsh_agent="$agent" OMPI_MCA_plm_rsh_no_tree_spawn=1
  export OMPI_MCA_rmaps_base_mapping_policy=slot
  export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp
  export OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0
  # MPICH (hydra, ch4:ucx): the same hosts and agent; UCX on eth0 between
  # nodes, MPICH's shared memory inside a node.
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
  ip netns exec "$cluster_prefix-node0" unshare --uts -- \
    sh -c 'hostname node0 && exec "$@"' sh "$@" <&0 &
  cluster_child=$!
  local status=0
  wait "$cluster_child" || status=$?
  cluster_child=""
  exit "$status"
}
