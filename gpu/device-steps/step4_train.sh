#!/bin/sh
# step4_train.sh — Horovod-style data-parallel PyTorch training on CUDA
# (train_ddp.py): 2 ranks share the GPU, gradients are fused into one flat
# CUDA tensor and MPI_Allreduce'd through mpi4py, on Fashion-MNIST. Arms:
#   host-staged  no libgcmpi; the flat gradient copied to host memory by
#                hand, allreduced, copied back (what such users do today)
#   none         libgcmpi, no codec: the shim stages the device buffer
#   fp16, int8, topk 0.01   libgcmpi compressing on the device
#   topk-momentum  topk 0.01 with GCMPI_MOMENTUM=0.9 (the trainer's momentum)
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
arm() { # name preload(0/1) env...
    name=$1 pre=$2; shift 2
    log=$OUT/step4-$name.log
    if [ "$pre" = 1 ]; then
        run2 "$log" "$@" -- python3 "$py" --data "$data" --epochs "$epochs" --arm "$name" \
            --json "$OUT/step4-$name.json"
    else
        timeout 300 "$MPIRUN" -np 2 python3 "$py" --data "$data" --epochs "$epochs" \
            --arm "$name" --host-staged --json "$OUT/step4-$name.json" >"$log" 2>&1
    fi
    rc=$?
    if [ $rc -eq 0 ]; then
        summary step4 PASS "$(tail -n1 "$log")"
    else
        summary step4 FAIL "arm $name exited $rc (see step4-$name.log)"
        status=1
    fi
}
arm host-staged 0
arm none 1 GCMPI_GPU_LIB="$LIBGPU"
arm fp16 1 GCMPI_GPU_LIB="$LIBGPU" GCMPI_CODEC=fp16
arm int8 1 GCMPI_GPU_LIB="$LIBGPU" GCMPI_CODEC=int8
arm topk 1 GCMPI_GPU_LIB="$LIBGPU" GCMPI_CODEC=topk GCMPI_RATIO=0.01
# The accuracy-keeping setting (README "Accuracy in unchanged jobs"): the
# trainer's own momentum, 0.9, told to the library; default warm-up.
arm topk-momentum 1 GCMPI_GPU_LIB="$LIBGPU" GCMPI_CODEC=topk GCMPI_RATIO=0.01 GCMPI_MOMENTUM=0.9
exit $status
