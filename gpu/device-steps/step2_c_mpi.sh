#!/bin/sh
# step2_c_mpi.sh — a 2-rank mpirun of tests/gpu/device/mpi_device (C, real
# cudaMalloc'd buffers from libgcmpi_gpu.so) with libgcmpi preloaded:
# allreduce and allgather on device buffers, in place, compressed by the
# GPU kernels (none with each algorithm, fp16, int8 by rsag and native,
# powersgd and randk by native, randk and eg by allgather, qsgd's Elias
# coding by rsag, sign) and on the host
# (topk), byte-equal to the same calls on host buffers, GCMPI_MOMENTUM
# included (u and m on the device; one rank's buffer moved; a call with
# odd ranks on host buffers); hier at 4 ranks in emulated nodes of 2
# (pipelined too) and its leader style at 3; sparse_rd at 4; int,
# double, MAX and small calls staged, exact; auto's trial on a 64 MiB
# device gradient (topk, int8) and of an MPI_Allgather (int8). Writes
# $OUT/step2-*.log and
# summary lines.
. "$(dirname "$0")/common.sh"
prog=$BUILD/tests/gpu/device/mpi_device
status=0
one() { # label bound codec algo [VAR=value ...]; CHECK=seeded: byte-equal to
        # host buffers on twin communicators only (codecs that draw from the
        # seed); RATIO: GCMPI_RATIO (0.25); NAME: the logs' name (label)
    label=$1 bound=$2 codec=$3 algo=$4
    shift 4
    name=${NAME:-$label}
    log=$OUT/step2-$name.log
    if run2 "$log" GCMPI_GPU_LIB="$LIBGPU" GCMPI_CODEC="$codec" GCMPI_ALGO="$algo" GCMPI_RATIO="${RATIO:-0.25}" \
        GCMPI_STATS="$OUT/step2-$name.json" "$@" -- "$prog" "$label" "$bound" "${CHECK:-same}"; then
        summary step2 PASS "$name: $(grep -h 'all checks passed' "$log" | head -n1)"
    else
        summary step2 FAIL "$name (see step2-$name.log)"
        status=1
    fi
}
if [ ! -x "$prog" ]; then
    summary step2 FAIL "$prog was not built"
    exit 1
fi
one none-allgather 0 none allgather
one none-rsag 0 none rsag
one none-native 0 none native
one staged 0 none auto
one fp16 0.002 fp16 rsag
one int8 0.05 int8 rsag
one int8-native 0.05 int8 native
CHECK=seeded
one powersgd 2 powersgd native
one randk 2 randk native
# The codecs' device draws and stream decodes (2026-12-06): randk's indices
# by the allgather, qsgd's Elias stream by rsag (error feedback on), eg's
# Exp-Golomb stream by the allgather.
NAME=randk-allgather
one randk 2 randk allgather
NAME=qsgd-elias
one qsgd 0.6 qsgd rsag GCMPI_QSGD_CODING=elias GCMPI_BITS=8 GCMPI_EF=1
CHECK=same
NAME=eg-allgather
one eg 0.01 eg allgather
NAME=
one sign 0.95 sign allgather
one topk 2 topk allgather
one momentum-topk 10 topk allgather GCMPI_MOMENTUM=0.9
one momentum-int8 10 int8 rsag GCMPI_MOMENTUM=0.9
one momentum-int8-native 10 int8 native GCMPI_MOMENTUM=0.9
# DGC's momentum correction inside the encode (gcmpi_gpu_encode_momentum)
one efmomentum-topk 10 topk rsag GCMPI_EF_MOMENTUM=0.9 GCMPI_WARMUP=0
CHECK=seeded
one efmomentum-dgc 10 dgc allgather GCMPI_EF_MOMENTUM=0.9 GCMPI_WARMUP=0
CHECK=same
# hier on 4 ranks sharing the GPU, 2 emulated nodes of 2: node phases on a
# host copy, each column's call by the kernels, byte-equal to host buffers.
NP=4
one hier-int8 0.05 int8 hier GCMPI_NODE_SIZE=2
one hier-topk 2 topk hier GCMPI_NODE_SIZE=2
one hier-momentum-topk 10 topk hier GCMPI_NODE_SIZE=2 GCMPI_MOMENTUM=0.9
# hier's pipeline (segments of 1 Ki floats, 8 a chunk): each segment of
# the node's sum staged to the device, encoded into page-locked payloads
# and decoded by the kernels, byte-equal to the same calls on host buffers.
NAME=hier-pipelined-int8
one hier-int8 0.05 int8 hier GCMPI_NODE_SIZE=2 GCMPI_HIER_SEGMENT=4K
NAME=hier-pipelined-topk
one hier-topk 2 topk hier GCMPI_NODE_SIZE=2 GCMPI_HIER_SEGMENT=4K
NAME=
# sparse_rd: sets made and placed by the kernels, merged on the host
# (0.25: dense in the last round; 0.02 without warm-up: sparse throughout).
one sparse_rd-topk 2 topk sparse_rd
RATIO=0.02
one sparse_rd-topk-0.02 2 topk sparse_rd GCMPI_WARMUP=0
RATIO=0.25
# hier's leader style: 3 ranks in nodes of 2 and 1, the leaders' call by
# the kernels with the whole device residual.
NP=3
one hier-leader-int8 0.05 int8 hier GCMPI_NODE_SIZE=2
one hier-leader-topk 2 topk hier GCMPI_NODE_SIZE=2
NP=2
# GCMPI_ADAPT on device buffers: the history in device memory, the layer's
# passes and topkq's per-bucket widths by the kernels, byte-equal to host
# buffers (edgc samples with the call number: within the bound).
NAME=adapt-variance-topk
one adapt-variance 2 topk allgather GCMPI_ADAPT=variance
NAME=adapt-variance-topkq
one adapt-variance 2 topkq allgather GCMPI_ADAPT=variance
NAME=adapt-gct-eg
one adapt-gct 0.05 eg allgather GCMPI_ADAPT=gct
NAME=adapt-edgc-dgc
CHECK=bound
one adapt-edgc 2 dgc allgather GCMPI_ADAPT=edgc
CHECK=same
NAME=
# What a run's report says auto chose, for its summary line.
auto_choices() { # json
    python3 -c 'import json, sys
for c in json.load(open(sys.argv[1]))["auto_choices"]:
    print(c["collective"], c["count"], "floats ->", c["algo"], "device" if c["device"] else "host",
          " ".join("%s %.2f ms" % (t["algo"], 1e3 * t["median_s"]) for t in c["trial"]))' "$1"
}
# auto on device buffers: mpi_device_auto's calls, the trial timing each
# candidate's whole call (staging included); the summary line names what
# it kept and each candidate's median call.
auto_one() { # name, "GCMPI_X=V ...", then mpi_device_auto's arguments
    name=$1 vars=$2
    shift 2
    log=$OUT/step2-auto-$name.log json=$OUT/step2-auto-$name.json
    # shellcheck disable=SC2086 # vars is a list of words
    if run2 "$log" GCMPI_GPU_LIB="$LIBGPU" GCMPI_ALGO=auto GCMPI_AUTO_CACHE=off \
        GCMPI_STATS="$json" $vars -- "$BUILD/tests/gpu/device/mpi_device_auto" "$@"; then
        summary step2 PASS "auto-$name: $(auto_choices "$json")"
    else
        summary step2 FAIL "auto-$name (see step2-auto-$name.log)"
        status=1
    fi
}
# A training loop's 64 MiB gradient (up to 9 rounds of 4 candidates: 40
# calls), and the compressed MPI_Allgather of 16 MiB blocks (flat against
# passthrough, staged or handed to a CUDA-aware MPI).
auto_one topk "GCMPI_CODEC=topk GCMPI_RATIO=0.01" 40 16777216 2
auto_one int8 "GCMPI_CODEC=int8" 40 16777216 2
auto_one allgather-int8 "GCMPI_ALLGATHER_CODEC=int8" 32 4194304 0.02 allgather
exit $status
