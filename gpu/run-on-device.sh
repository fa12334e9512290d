#!/bin/sh
# run-on-device.sh — what a machine with an NVIDIA GPU runs: configure with
# CUDA into build-device, build, run the 'gpu' test suite, then the device
# steps of gpu/device-steps/ (shim on device buffers, mpi4py on CUDA
# tensors, training), and keep the logs and $OUT/summary.txt.
#
#   gpu/run-on-device.sh            from the repository root
#   OUT=/some/dir gpu/run-on-device.sh   logs also copied under $OUT
#
# Needs meson, ninja, a C compiler and nvcc (on PATH or in
# /usr/local/cuda/bin). zstd and Criterion are optional here: without
# libzstd the codecs build without the zstd stage; the GPU test is plain C.
# Exit status: that of the test run (0 pass, 1 fail; meson reports a test
# that exited 77, no CUDA device, as skipped, which the script turns into
# a failure, since this script is only run where a GPU is expected).
set -eu
cd "$(dirname "$0")/.."
BUILD=build-device
LOGS=${OUT:-$BUILD/device-logs}
mkdir -p "$LOGS"

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    PATH=/usr/local/cuda/bin:$PATH
    export PATH
fi

{
    echo "== $(date -u) $(uname -srm)"
    nvidia-smi 2>&1 || echo "nvidia-smi not available"
    nvcc --version 2>&1 || echo "nvcc not on PATH"
    meson --version
} >"$LOGS/environment.txt" 2>&1

zstd_opt=-Dzstd=enabled
if ! pkg-config --exists libzstd 2>/dev/null; then
    zstd_opt=-Dzstd=disabled
fi

status=0
if [ -d "$BUILD" ]; then
    meson setup --reconfigure "$BUILD" -Dcuda=enabled "$zstd_opt" >"$LOGS/setup.log" 2>&1 || status=$?
else
    meson setup "$BUILD" -Dcuda=enabled "$zstd_opt" >"$LOGS/setup.log" 2>&1 || status=$?
fi
if [ "$status" -ne 0 ]; then
    echo "meson setup failed (status $status); see $LOGS/setup.log" >&2
    tail -n 40 "$LOGS/setup.log" >&2
    exit "$status"
fi
ninja -C "$BUILD" >"$LOGS/build.log" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
    echo "build failed (status $status); see $LOGS/build.log" >&2
    tail -n 60 "$LOGS/build.log" >&2
    exit "$status"
fi

meson test -C "$BUILD" --suite gpu --print-errorlogs >"$LOGS/test.log" 2>&1 || status=$?
cp "$BUILD/meson-logs/testlog.txt" "$LOGS/testlog.txt" 2>/dev/null || true
cat "$LOGS/test.log"
if [ "$status" -eq 0 ] && grep -q "^Skipped: *[1-9]" "$LOGS/test.log"; then
    echo "gpu suite was skipped: no CUDA device seen" >&2
    status=1
fi

# Steps 2-4 (gpu/device-steps/): the shim's device path under mpirun, an
# unmodified mpi4py program on CUDA tensors, and data-parallel training.
# Each appends its lines to $LOGS/summary.txt.
for step in step2_c_mpi step3_mpi4py step4_train; do
    s=0
    BUILD=$BUILD OUT=$LOGS sh "gpu/device-steps/$step.sh" || s=$?
    [ "$s" -eq 0 ] || status=1
done
cat "$LOGS/summary.txt" 2>/dev/null || true
exit "$status"
