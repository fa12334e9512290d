#!/usr/bin/env bash
# run-scale.sh — issue 14's tables: GCMPI_ALGO=auto against native
# PMPI_Allreduce and against every forced algorithm, and the emulated
# cluster; everything timed by gcmpi-coll-bench in one run per point.
#
#   bench/results/run-scale.sh OUT_DIR [BUILD]        (root: bench/netem)
#
# Environment (defaults are what fits a 2-core shared machine):
#   LINKS  "shm 10gbit 1gbit"   shm: no netem; else bench/netem RATE (one
#                               shaped loopback shared by all ranks)
#   RANKS  "2 4 8"
#   SIZES  64K,1M,16M,64M       (the range is 64K..64M)
#   CODECS int8,sign,topk       (topk at --ratio 0.01)
#   REPS   3
#   MIN_TIME 0.1                gcmpi-coll-bench --min-time: short calls get
#                               more timed calls, up to 0.1 s of the slowest
#                               case's pairs (a median of three 64 KiB calls
#                               put passthrough at 1.1-1.2x itself)
#   INTERLEAVE 1                1: the algorithms of a size and codec timed
#                               in rounds (gcmpi-coll-bench --interleave), so
#                               the machine's drift hits them alike
#   CLUSTER 1                   also the 2 nodes x 4 ranks run at 1 Gbit/s,
#                               64 MiB (bench/netem --nodes 2)
# Writes OUT_DIR/LINK-npP.json (gcmpi-coll-bench --json), cluster.json and
# the commands (OUT_DIR/commands); then prints the Markdown tables
# (bench/results/scale_tables.py OUT_DIR).
set -euo pipefail
out=${1:?usage: run-scale.sh OUT_DIR [BUILD]}
BUILD=${2:-build}
LINKS=${LINKS-"shm 10gbit 1gbit"}
RANKS=${RANKS:-"2 4 8"}
SIZES=${SIZES:-64K,1M,16M,64M}
CODECS=${CODECS:-int8,sign,topk}
REPS=${REPS:-3}
MIN_TIME=${MIN_TIME:-0.1}
INTERLEAVE=${INTERLEAVE:-1}
CLUSTER=${CLUSTER:-1}
mkdir -p "$out"
ninja -C "$BUILD" >/dev/null
BENCH=$PWD/$BUILD/bench/gcmpi-coll-bench
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
algos=auto,passthrough,allgather,rsag,native,hier,sparse_rd
: >"$out/commands"

for link in $LINKS; do
  for np in $RANKS; do
    cmd=(mpirun -np "$np" "$BENCH" --sizes "$SIZES" --codec "$CODECS" --ratio 0.01
         --algo "$algos" --predict --json --reps "$REPS" --min-time "$MIN_TIME" --warmup 1)
    [ "$INTERLEAVE" = 1 ] && cmd+=(--interleave)
    # Behind one shaped loopback every rank is a host of its own (a node
    # of one): else hier's shared window would go around the link.
    [ "$link" = shm ] || cmd=(bench/netem "$link" -- "${cmd[@]}" --node-size 1)
    echo "${cmd[*]} > $link-np$np.json" >>"$out/commands"
    echo "run-scale: $link, $np ranks" >&2
    "${cmd[@]}" >"$out/$link-np$np.json"
  done
done

if [ "$CLUSTER" = 1 ]; then
  cmd=(bench/netem --nodes 2 1gbit -- mpirun -np 8 "$BENCH" --sizes 64M --codec topk,int8
       --ratio 0.01 --algo auto,passthrough,allgather,rsag,hier --predict --json --reps "$REPS"
       --warmup 1)
  [ "$INTERLEAVE" = 1 ] && cmd+=(--interleave)
  echo "${cmd[*]} > cluster.json" >>"$out/commands"
  echo "run-scale: 2 emulated nodes x 4 ranks, 1gbit" >&2
  "${cmd[@]}" >"$out/cluster.json"
fi
python3 bench/results/scale_tables.py "$out"
