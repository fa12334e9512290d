#!/bin/sh
# run-emulated.sh BUILD_DIR — build gpu/*.cu against cuda_emu.h (no GPU, no
# nvcc) with tests/gpu/test_gpu_codecs.c and run it: a check of the
# kernels' index mapping and summation order on a machine without a GPU.
# See cuda_emu.h for what this does and does not check. BUILD_DIR is a
# configured build (for the codec archive), default build-gpu.
set -eu
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=${1:-build-gpu}
case $build in /*) ;; *) build=$root/$build ;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Every .cu and .cuh, rewritten into $work under the same name, so their
# quoted includes find the rewritten headers; launches k<<<g, b, s, st>>>(
# (one line, kernel names k_...) become EMU_LAUNCH(k, g, b, s, st, ...).
for f in "$root"/gpu/*.cu "$root"/gpu/*.cuh; do
    sed -e 's|#include <cuda_runtime.h>|#include "cuda_emu.h"|' \
        -e 's/\(k_[a-z0-9_]*\)<<<\(.*\)>>>(/EMU_LAUNCH(\1, \2, /' \
        "$f" >"$work/$(basename "$f")"
done
# Compiling is most of this test's time: a unit a core (xargs fails if one does).
printf '%s\n' "$work"/*.cu | xargs -P "$(nproc 2>/dev/null || echo 1)" -I{} \
    ${CXX:-g++} -x c++ -std=c++20 -O2 -ffp-contract=off -fno-exceptions -Wall -Wextra -Werror \
        -Wno-unused-parameter -I"$root/tests/gpu/emu" -I"$work" -I"$root/gpu" -I"$root/codecs" \
        -c {} -o {}.o
objs=
for f in "$work"/*.cu; do objs="$objs $f.o"; done
for f in "$root"/gpu/*.c; do
    o=$work/$(basename "${f%.c}").o
    ${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -I"$root/codecs" -c "$f" -o "$o"
    objs="$objs $o"
done
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -I"$root/gpu" -I"$root/codecs" \
    -c "$root/tests/gpu/test_gpu_codecs.c" -o "$work/test.o"
# shellcheck disable=SC2086
${CXX:-g++} "$work/test.o" $objs "$build/codecs/libgcmpi_codec_pic.a" \
    -lzstd -lm -pthread -o "$work/test_gpu_codecs_emu"
GCMPI_GPU_TEST_MAX_N=${GCMPI_GPU_TEST_MAX_N:-5000} "$work/test_gpu_codecs_emu"
