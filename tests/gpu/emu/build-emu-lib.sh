#!/bin/sh
# build-emu-lib.sh OUT.so BUILD_DIR — libgcmpi_gpu_emu.so: every gpu/*.cu
# built for the host against cuda_emu.h with CUDA_EMU_PROTECT, so that its
# "device memory" is host memory mapped PROT_NONE outside emulated kernels
# and copies. The shim's device path runs against it under mpirun where no
# GPU is present (tests/gpu/meson.build); any host access to device memory
# by the shim then crashes the test. Same exports as libgcmpi_gpu.so.
set -eu
out=$1
build=$2
root=$(cd "$(dirname "$0")/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
objs=
for cu in "$root"/gpu/*.cu; do
    name=$(basename "$cu" .cu)
    sed -e 's|#include <cuda_runtime.h>|#include "cuda_emu.h"|' \
        -e 's/\(k_[a-z0-9_]*\)<<<\(.*\)>>>(/EMU_LAUNCH(\1, \2, /' \
        "$cu" >"$work/$name.cpp"
    ${CXX:-g++} -std=c++20 -O1 -fPIC -fvisibility=hidden -ffp-contract=off -fno-exceptions \
        -DCUDA_EMU_PROTECT -Wall -Wextra -Werror -Wno-unused-parameter -Wno-unused-function \
        -I"$root/tests/gpu/emu" -I"$root/gpu" -I"$root/codecs" \
        -c "$work/$name.cpp" -o "$work/$name.o"
    objs="$objs $work/$name.o"
done
# shellcheck disable=SC2086
${CXX:-g++} -shared -o "$out.tmp" $objs "$build/codecs/libgcmpi_codec_pic.a" \
    -Wl,--exclude-libs,ALL -lzstd -lm -pthread
mv "$out.tmp" "$out"
