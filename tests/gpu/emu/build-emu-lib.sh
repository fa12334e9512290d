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
# <cuda_runtime.h> is the emulation, wherever it is included from; kernel
# launches (k_name<<<grid, block, shmem, stream>>>(args)) become EMU_LAUNCH
# in the .cu files and in any shared .cuh headers beside them.
mkdir -p "$work/inc"
echo '#include "cuda_emu.h"' >"$work/inc/cuda_runtime.h"
launch='s/\(k_[a-z0-9_]*\)<<<\(.*\)>>>(/EMU_LAUNCH(\1, \2, /'
for h in "$root"/gpu/*.cuh; do
    [ -e "$h" ] || continue
    sed -e "$launch" "$h" >"$work/inc/$(basename "$h")"
done
objs=
for cu in "$root"/gpu/*.cu; do
    name=$(basename "$cu" .cu)
    sed -e "$launch" "$cu" >"$work/$name.cpp"
    objs="$objs $work/$name.cpp.o"
done
# A unit a core: compiling is most of this target's time (xargs fails if one does).
printf '%s\n' "$work"/*.cpp | xargs -P "$(nproc 2>/dev/null || echo 1)" -I{} \
    ${CXX:-g++} -std=c++20 -O1 -fPIC -fvisibility=hidden -ffp-contract=off -fno-exceptions \
        -DCUDA_EMU_PROTECT -Wall -Wextra -Werror -Wno-unused-parameter -Wno-unused-function \
        -I"$work/inc" -I"$root/tests/gpu/emu" -I"$root/gpu" -I"$root/codecs" \
        -c {} -o {}.o
# Host-side C helpers of the GPU library, if any.
for c in "$root"/gpu/*.c; do
    [ -e "$c" ] || continue
    o=$work/$(basename "${c%.c}")_c.o
    ${CC:-cc} -std=c11 -O1 -fPIC -fvisibility=hidden -Wall -Wextra -Werror -I"$root/gpu" \
        -I"$root/codecs" -c "$c" -o "$o"
    objs="$objs $o"
done
# shellcheck disable=SC2086
${CXX:-g++} -shared -o "$out.tmp" $objs "$build/codecs/libgcmpi_codec_pic.a" \
    -Wl,--exclude-libs,ALL -lzstd -lm -pthread
mv "$out.tmp" "$out"
