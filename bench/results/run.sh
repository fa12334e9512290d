#!/usr/bin/env bash
# bench/results/run.sh — reproduces every figure and table of README's
# "Results" section: gcmpi-train (784-512-256-10 MLP, Fashion-MNIST, one fused
# MPI_Allreduce per step) without and with LD_PRELOAD=libgcmpi.so, over an
# emulated 1 Gbit/s link (bench/netem) and over shared memory.
#
#   bench/results/run.sh [--out DIR] [--docs DIR] [--only NAME,...] [--skip-speed]
#                        [--skip-accuracy] [--profile] [--investigate] [--quick]
#
# Writes, per run NAME, under DIR (default results-tmp/results):
#   NAME.train.json  the trainer's configuration and per-epoch records
#   NAME.stats.json  libgcmpi's statistics (GCMPI_STATS), not for the baseline
#   NAME.log         the run's stdout and stderr
#   NAME.cmd         the exact command line, with its environment
# then runs bench/results/plot.py DIR DOCS, which writes summary.json,
# summary.csv and the PNG figures into DOCS (default docs/results) and copies
# the small per-run JSON files to DOCS/data/.
#
# Needs root (bench/netem builds a network namespace with tc), Open MPI, the
# Fashion-MNIST files and a build: by default build-results/ (configured here
# with meson when missing: -Dmpi=openmpi -Dcuda=disabled).
#
# Experiments (environment variables override the defaults):
#   accuracy  RANKS=4 ranks, EPOCHS=10 epochs on the full training set, SEED=1,
#             through bench/netem RATE=1gbit: the baseline (no library) and
#             every codec below with its default error feedback.
#   speed     SPEED_REPEATS=2 interleaved rounds of SPEED_EPOCHS=2 epochs at 2
#             and 4 ranks: topk and fp16 through the link; topk and the
#             baseline unthrottled over shared memory; topk over TCP on the
#             unshaped loopback; the baseline through the link at 2 ranks (at
#             4 ranks its numbers come from the accuracy run).
#   investigate (--investigate) accuracy-only variations over shared memory,
#             each with the baseline under the same optimizer settings: 20
#             epochs (baseline, topk, dgc-mc); sign through the allgather
#             algorithm (one quantisation instead of rsag's two) and with
#             64-element buckets; learning rate 0.01 (baseline, sign, topk);
#             the baseline with seeds 2 and 3 (the seed-to-seed spread).
#   unmodified (--accuracy-unmodified, instead of the experiments above)
#             the application unchanged (no trainer options: lr 0.05,
#             momentum 0.9), only GCMPI_* variables, GCMPI_MOMENTUM=0.9 and
#             the default warm-up, RANKS ranks over shared memory (accuracy
#             does not depend on the link), EPOCHS epochs, seeds SEEDS="1 2":
#             the baseline and every codec of README's accuracy table.
#   profile   (--profile) perf record of a 1-epoch topk run at 4 ranks over
#             shared memory; perf report into DIR/profile-topk.txt.
# The whole script takes about 30-40 minutes on 2 cores.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

out=results-tmp/results
docs=docs/results
only=""
do_speed=1 do_accuracy=1 do_profile=0 do_investigate=0 do_unmodified=0
RANKS=${RANKS:-4}
EPOCHS=${EPOCHS:-10}
SPEED_EPOCHS=${SPEED_EPOCHS:-2}
SPEED_REPEATS=${SPEED_REPEATS:-2}
SEED=${SEED:-1}
RATE=${RATE:-1gbit}
BUILD=${BUILD:-build-results}
SUBSET=${SUBSET:-}
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --docs) docs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --skip-speed) do_speed=0; shift ;;
    --skip-accuracy) do_accuracy=0; shift ;;
    --profile) do_profile=1; shift ;;
    --investigate) do_investigate=1; shift ;;
    --accuracy-unmodified) do_unmodified=1 do_speed=0 do_accuracy=0; shift ;;
    --quick) EPOCHS=1 SPEED_EPOCHS=1 SPEED_REPEATS=1 SUBSET=6000; shift ;;  # smoke test of the script
    -h|--help) sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option $1; see --help" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

# shellcheck source=bench/results/common.sh
source "$here/common.sh"
prepare_build

# The codecs of the accuracy table: NAME and the variables of the run.
# dgc-mc is DGC's momentum correction: the library keeps the momentum
# (GCMPI_EF_MOMENTUM=0.9), so the trainer's own momentum is 0 — the same
# optimizer as the baseline's SGD with momentum 0.9 (DGC paper, Alg. 2);
# topk-mc is the same for topk.
codec_runs=(
  "baseline|"
  "topk|GCMPI_CODEC=topk GCMPI_RATIO=0.01"
  "dgc|GCMPI_CODEC=dgc GCMPI_RATIO=0.001"
  "dgc-mc|GCMPI_CODEC=dgc GCMPI_RATIO=0.001 GCMPI_EF_MOMENTUM=0.9|--momentum 0"
  "topk-mc|GCMPI_CODEC=topk GCMPI_RATIO=0.01 GCMPI_EF_MOMENTUM=0.9|--momentum 0"
  "sign|GCMPI_CODEC=sign"
  "qsgd4|GCMPI_CODEC=qsgd GCMPI_BITS=4"
  "eg|GCMPI_CODEC=eg"
  "fp16|GCMPI_CODEC=fp16"
  "int8|GCMPI_CODEC=int8"
)

selected() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }

start=$SECONDS
if [ "$do_accuracy" = 1 ]; then
  echo "== accuracy: $RANKS ranks, $EPOCHS epochs, link $RATE, seed $SEED" >&2
  for spec in "${codec_runs[@]}"; do
    IFS='|' read -r name vars topts <<< "$spec"
    selected "$name" || continue
    run "acc-$name" "$RANKS" "$EPOCHS" "$RATE" "$vars" "$topts" || true
  done
fi

if [ "$do_speed" = 1 ]; then
  # Other work on a shared machine only ever slows an epoch down, so
  # plot.py compares the fastest epoch of SPEED_REPEATS interleaved rounds.
  echo "== speed: $SPEED_REPEATS rounds of $SPEED_EPOCHS epochs; 2 and 4 ranks over $RATE," \
       "TCP on the unshaped loopback and shared memory" >&2
  for r in $(seq 1 "$SPEED_REPEATS"); do
    for np in 2 4; do
      for spec in "$RATE|topk|GCMPI_CODEC=topk GCMPI_RATIO=0.01" "$RATE|fp16|GCMPI_CODEC=fp16" \
                  "shm|topk|GCMPI_CODEC=topk GCMPI_RATIO=0.01" "shm|baseline|" \
                  "tcp|topk|GCMPI_CODEC=topk GCMPI_RATIO=0.01"; do
        IFS='|' read -r link name vars <<< "$spec"
        selected "$name" || continue
        run "speed-np$np-$link-$name-r$r" "$np" "$SPEED_EPOCHS" "$link" "$vars" "" || true
      done
    done
  done
  # The link-bound baseline varies little: one run at 2 ranks (4 ranks: acc-baseline).
  if selected baseline; then
    run "speed-np2-$RATE-baseline-r1" 2 "$SPEED_EPOCHS" "$RATE" "" "" || true
  fi
fi

if [ "$do_investigate" = 1 ]; then
  # Accuracy only, so over shared memory (the link changes time, not the
  # numbers): every variation of the optimizer is run for the baseline too.
  echo "== investigation: $RANKS ranks, shared memory" >&2
  inv_runs=(
    "e20-baseline|20||"
    "e20-topk|20|GCMPI_CODEC=topk GCMPI_RATIO=0.01|"
    "e20-dgc-mc|20|GCMPI_CODEC=dgc GCMPI_RATIO=0.001 GCMPI_EF_MOMENTUM=0.9|--momentum 0"
    "sign-allgather|$EPOCHS|GCMPI_CODEC=sign GCMPI_ALGO=allgather|"
    "sign-bucket64|$EPOCHS|GCMPI_CODEC=sign GCMPI_BUCKET=64|"
    "seed2-baseline|$EPOCHS||--seed 2"
    "seed3-baseline|$EPOCHS||--seed 3"
    "lr0.01-baseline|$EPOCHS||--lr 0.01"
    "lr0.01-sign|$EPOCHS|GCMPI_CODEC=sign|--lr 0.01"
    "lr0.01-topk|$EPOCHS|GCMPI_CODEC=topk GCMPI_RATIO=0.01|--lr 0.01"
  )
  for spec in "${inv_runs[@]}"; do
    IFS='|' read -r name epochs vars topts <<< "$spec"
    selected "$name" || continue
    run "inv-$name" "$RANKS" "$epochs" shm "$vars" "$topts" || true
  done
fi

if [ "$do_unmodified" = 1 ]; then
  # Unchanged application: the library is told the optimizer's momentum.
  # GCMPI_ALGO=rule: over shared memory auto's cost model passes the calls
  # through uncompressed (faster there), which would measure nothing.
  um="GCMPI_MOMENTUM=0.9 GCMPI_ALGO=rule"
  um_runs=(
    "baseline|"
    "fp16|GCMPI_CODEC=fp16 $um"
    "int8|GCMPI_CODEC=int8 $um"
    "qsgd4|GCMPI_CODEC=qsgd GCMPI_BITS=4 $um"
    "sign|GCMPI_CODEC=sign $um"
    "onebit|GCMPI_CODEC=onebit $um"
    "topk|GCMPI_CODEC=topk GCMPI_RATIO=0.01 $um"
    "dgc|GCMPI_CODEC=dgc GCMPI_RATIO=0.001 $um"
    "topkq-var|GCMPI_CODEC=topkq GCMPI_RATIO=0.01 GCMPI_ADAPT=variance $um"
    "eg|GCMPI_CODEC=eg $um"
    "powersgd|GCMPI_CODEC=powersgd $um"
  )
  echo "== unmodified application: $RANKS ranks, $EPOCHS epochs, shared memory, seeds ${SEEDS:-1 2}" >&2
  for s in ${SEEDS:-1 2}; do
    for spec in "${um_runs[@]}"; do
      IFS='|' read -r name vars <<< "$spec"
      selected "$name" || continue
      SEED=$s run "um-$name-s$s" "$RANKS" "$EPOCHS" shm "$vars" "" || true
    done
  done
fi

if [ "$do_profile" = 1 ] && command -v perf >/dev/null; then
  echo "== profile: perf record, topk at $RANKS ranks, 1 epoch, shared memory" >&2
  perf record -F 499 -g -o "$out/perf-topk.data" -- \
    mpirun -np "$RANKS" -x "LD_PRELOAD=$LIB" -x GCMPI_CODEC=topk -x GCMPI_RATIO=0.01 \
    "$TRAIN" --epochs 1 --seed "$SEED" ${SUBSET:+--subset $SUBSET} > "$out/perf-topk.log" 2>&1 || true
  perf report -i "$out/perf-topk.data" --no-children --sort dso,symbol --stdio -g none \
    2>/dev/null | grep -v '^$' | head -60 > "$out/profile-topk.txt" || true
fi

echo "== experiments took $((SECONDS - start)) s; plotting" >&2
if [ "$do_unmodified" = 1 ]; then
  /usr/bin/python3 "$here/plot_unmodified.py" "$out" "$docs"
  exit 0
fi
/usr/bin/python3 "$here/plot.py" "$out" "$docs"
