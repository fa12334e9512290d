#!/usr/bin/env bash
# run-cluster-train.sh — issue 14's training row: gcmpi-train over the
# emulated cluster (bench/netem --nodes 2, 4 ranks a node, RATE between
# nodes), without the library and with topk 0.01 (GCMPI_MOMENTUM=0.9, the
# trainer's momentum) under GCMPI_ALGO=auto and each forced algorithm.
#
#   bench/results/run-cluster-train.sh OUT_DIR [BUILD]      (root)
#
# Environment: RATE (1gbit), EPOCHS (1), SUBSET (12000), ALGOS
# ("auto auto-cached allgather rsag hier sparse_rd passthrough"; auto-cached
# is auto's job run again, reading the calibration auto saved in
# OUT_DIR/auto-cache-rR), ROUNDS (1).
# Writes OUT_DIR/ARM-rR.{log,json,stats.json} and prints one line per run:
# the arm, the training seconds and the final accuracy.
set -euo pipefail
out=${1:?usage: run-cluster-train.sh OUT_DIR [BUILD]}
BUILD=${2:-build}
RATE=${RATE:-1gbit}
EPOCHS=${EPOCHS:-1}
SUBSET=${SUBSET:-12000}
ALGOS=${ALGOS:-"auto auto-cached allgather rsag hier sparse_rd passthrough"}
ROUNDS=${ROUNDS:-1}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$repo"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
LIB=$repo/$BUILD/pmpi/libgcmpi.so
TRAIN=$repo/$BUILD/bench/train/gcmpi-train
run() { # name [GCMPI_...=...]
  local name=$1; shift
  local xs=()
  if [ $# -gt 0 ]; then
    xs+=(-x "LD_PRELOAD=$LIB" -x "GCMPI_STATS=$out/$name.stats.json")
    for v in "$@"; do xs+=(-x "$v"); done
  fi
  bench/netem --nodes 2 "$RATE" -- mpirun -np 8 "${xs[@]}" "$TRAIN" --epochs "$EPOCHS" \
    --subset "$SUBSET" --seed 1 --json "$out/$name.json" >"$out/$name.log" 2>&1 || true
  echo "$name: $(grep '^RESULT' "$out/$name.log" || echo 'no RESULT (see log)')"
}
for r in $(seq 1 "$ROUNDS"); do
  # auto starts each round with an empty GCMPI_AUTO_CACHE (a first job:
  # it calibrates and saves); auto-cached, after it, is the same job run
  # again, reading that calibration.
  cache=$out/auto-cache-r$r
  rm -rf "$cache"
  run "native-r$r"
  for a in $ALGOS; do
    case $a in
      auto|auto-cached) algo=auto dir=$cache ;;
      *) algo=$a dir=off ;;
    esac
    run "topk-$a-r$r" GCMPI_CODEC=topk GCMPI_RATIO=0.01 GCMPI_MOMENTUM=0.9 GCMPI_ALGO="$algo" \
      GCMPI_AUTO_CACHE="$dir"
  done
done
