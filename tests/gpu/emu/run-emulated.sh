#!/bin/sh
# run-emulated.sh BUILD_DIR — build gpu/gcmpi_gpu.cu against cuda_emu.h (no
# GPU, no nvcc) with tests/gpu/test_gpu_codecs.c and run it: a check of the
# kernels' index mapping and summation order on a machine without a GPU.
# See cuda_emu.h for what this does and does not check. BUILD_DIR is a
# configured build (for the codec archive), default build-gpu.
set -eu
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=${1:-build-gpu}
case $build in /*) ;; *) build=$root/$build ;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed -e 's|#include <cuda_runtime.h>|#include "cuda_emu.h"|' \
    -e 's/\(k_[a-z0-9_]*\)<<<\(.*\)>>>(/EMU_LAUNCH(\1, \2, /' \
    "$root/gpu/gcmpi_gpu.cu" >"$work/gcmpi_gpu_emu.cpp"
${CXX:-g++} -std=c++20 -O2 -ffp-contract=off -fno-exceptions -Wall -Wextra -Werror \
    -Wno-unused-parameter -I"$root/tests/gpu/emu" -I"$root/gpu" -I"$root/codecs" \
    -c "$work/gcmpi_gpu_emu.cpp" -o "$work/gpu.o"
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -I"$root/gpu" -I"$root/codecs" \
    -c "$root/tests/gpu/test_gpu_codecs.c" -o "$work/test.o"
${CXX:-g++} "$work/test.o" "$work/gpu.o" "$build/codecs/libgcmpi_codec_pic.a" \
    -lzstd -lm -pthread -o "$work/test_gpu_codecs_emu"
GCMPI_GPU_TEST_MAX_N=${GCMPI_GPU_TEST_MAX_N:-5000} "$work/test_gpu_codecs_emu"
