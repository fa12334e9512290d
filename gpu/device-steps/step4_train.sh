#!/bin/sh
# step4_train.sh — Horovod-style data-parallel PyTorch training on CUDA
# (train_ddp.py): 2 ranks share the GPU, gradients are fused into one flat
# CUDA tensor and MPI_Allreduce'd through mpi4py, on Fashion-MNIST. Arms:
#   host-staged  no libgcmpi; the flat gradient copied to host memory by
#                hand, allreduced, copied back (what such users do today)
#   none         libgcmpi, no codec: the shim stages the device buffer
#   topk-auto    topk 0.01 with the default GCMPI_ALGO=auto
#   int8-plain   int8 on the device (allgather), nothing else
#   fp16 ... powersgd   README's accuracy settings: GCMPI_MOMENTUM=0.9 (the
#                trainer's momentum: transparent momentum correction), the
#                default warm-up, allgather (powersgd: native, forced; under
#                auto on one GPU it was passed through uncompressed)
# Accuracy and median step time of each arm go to $OUT/step4-ARM.json and
# the summary. Dataset: .data/fashion-mnist/ (carried with the tree), else
# /usr/share/datasets/fashion-mnist. EPOCHS (default 2).
. "$(dirname "$0")/common.sh"
py=$ROOT/gpu/device-steps/train_ddp.py
data=$ROOT/.data/fashion-mnist
[ -f "$data/train-images-idx3-ubyte.gz" ] || [ -f "$data/train-images-idx3-ubyte" ] ||
    data=/usr/share/datasets/fashion-mnist
epochs=${EPOCHS:-2}
status=0
# What the library did in an arm: algorithm(s) auto picked, compressed
# calls, and bytes sent against bytes offered (from its statistics JSON).
stats_line() {
    python3 - "$1" <<'PY' 2>/dev/null || echo "no statistics"
import json, sys
d = json.load(open(sys.argv[1]))
rows = [r for r in d["collectives"] if r["collective"] == "allreduce" and r["comm"] == "MPI_COMM_WORLD"]
picks = sorted({c["algo"] for c in d.get("auto_choices", [])})
dev = d.get("device", {})
for r in rows:
    print(f"{r['codec']}: {r['calls_compressed']} compressed, {r['calls_passed']} passed, "
          f"ratio {r['ratio']:.1f}x; auto picked {','.join(picks) or '-'}; "
          f"device calls {dev.get('calls', 0)} (GPU {dev.get('compressed', 0)}, "
          f"host {dev.get('compressed_host', 0)}, staged {dev.get('staged', 0)})")
PY
}
arm() { # name preload(0/1) env...
    name=$1 pre=$2; shift 2
    log=$OUT/step4-$name.log
    if [ "$pre" = 1 ]; then
        run2 "$log" "$@" GCMPI_STATS="$OUT/step4-$name-stats.json" -- \
            python3 "$py" --data "$data" --epochs "$epochs" --arm "$name" \
            --json "$OUT/step4-$name.json"
    else
        timeout 300 "$MPIRUN" -np 2 python3 "$py" --data "$data" --epochs "$epochs" \
            --arm "$name" --host-staged --json "$OUT/step4-$name.json" >"$log" 2>&1
    fi
    rc=$?
    if [ $rc -eq 0 ]; then
        extra=""
        [ "$pre" = 1 ] && extra=" | $(stats_line "$OUT/step4-$name-stats.json" | head -n1)"
        summary step4 PASS "$(tail -n1 "$log")$extra"
    else
        summary step4 FAIL "arm $name exited $rc (see step4-$name.log)"
        status=1
    fi
}
g="GCMPI_GPU_LIB=$LIBGPU"
arm host-staged 0
arm none 1 "$g"
# GCMPI_ALGO=auto (the default) decides by measuring whether compression
# pays (2 ranks sharing one GPU and host memory); the other arms force
# allgather so they show compression itself.
arm topk-auto 1 "$g" GCMPI_CODEC=topk GCMPI_RATIO=0.01
arm int8-plain 1 "$g" GCMPI_CODEC=int8 GCMPI_ALGO=allgather
# README's accuracy settings (issue 13), unchanged trainer: the trainer's
# own momentum, 0.9, told to the library; the default warm-up.
m="GCMPI_MOMENTUM=0.9 GCMPI_ALGO=allgather"
arm fp16 1 "$g" GCMPI_CODEC=fp16 $m
arm int8 1 "$g" GCMPI_CODEC=int8 $m
arm qsgd4 1 "$g" GCMPI_CODEC=qsgd GCMPI_BITS=4 $m
arm sign 1 "$g" GCMPI_CODEC=sign $m
arm onebit 1 "$g" GCMPI_CODEC=onebit $m
arm topk 1 "$g" GCMPI_CODEC=topk GCMPI_RATIO=0.01 $m
arm dgc 1 "$g" GCMPI_CODEC=dgc GCMPI_RATIO=0.001 $m
arm topkq-var 1 "$g" GCMPI_CODEC=topkq GCMPI_RATIO=0.01 GCMPI_ADAPT=variance $m
arm eg 1 "$g" GCMPI_CODEC=eg $m
arm powersgd 1 "$g" GCMPI_CODEC=powersgd GCMPI_MOMENTUM=0.9 GCMPI_ALGO=native
exit $status
