#!/bin/sh
# run-on-device.sh — what a machine with an NVIDIA GPU runs, in numbered
# steps; each step is one function and appends one line to summary.txt.
#
#   gpu/run-on-device.sh            from the repository root
#   OUT=/some/dir gpu/run-on-device.sh   logs and summary.txt under $OUT
#   STEPS="1 5" gpu/run-on-device.sh     only those steps (after step 0)
#
#   0  configure with CUDA into build-device and build
#   1  GPU vs CPU byte for byte, every codec (the 'gpu' test suite)
#   2  a 2-rank mpirun of a C program on device buffers (gpu/device-steps/)
#   3  an unmodified mpi4py program on PyTorch CUDA tensors, without and
#      with libgcmpi
#   4  data-parallel PyTorch training on CUDA, 2 ranks sharing the GPU,
#      with and without compression
#   5  benchmark table: gcmpi-codec-bench --device cuda (every codec against
#      a device-to-device copy) and, where torch is installed,
#      bench/gpu_vs_torch.py
#   6  (only when STEPS names it) issue 14 on the machine's cores: auto
#      against native and every forced algorithm over shared memory at 2,
#      4, 8 and 16 ranks (SCALE_RANKS), each point beside the cost
#      model's prediction (bench/results/run-scale.sh, no GPU used)
#
# Needs meson, ninja, a C compiler and nvcc (on PATH or in
# /usr/local/cuda/bin). zstd and Criterion are optional here. Exit status:
# 0 when every step that ran passed. A skipped gpu suite (no CUDA device
# seen) counts as a failure: this script is only run where a GPU is
# expected.
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=build-device
LOGS=${OUT:-$BUILD/device-logs}
mkdir -p "$LOGS"
SUMMARY=$LOGS/summary.txt
: >"$SUMMARY"
failed=0

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    PATH=/usr/local/cuda/bin:$PATH
    export PATH
fi

# summary STEP STATUS TEXT: one line of summary.txt (and of stdout).
summary() {
    printf 'step %s: %s  %s\n' "$1" "$2" "$3" | tee -a "$SUMMARY"
    [ "$2" = FAIL ] && failed=1
    return 0
}

step0_build() {
    {
        echo "== $(date -u) $(uname -srm)"
        nvidia-smi 2>&1 || echo "nvidia-smi not available"
        nvcc --version 2>&1 || echo "nvcc not on PATH"
        meson --version
    } >"$LOGS/environment.txt" 2>&1
    zstd_opt=-Dzstd=enabled
    pkg-config --exists libzstd 2>/dev/null || zstd_opt=-Dzstd=disabled
    if [ -d "$BUILD" ]; then set -- --reconfigure; else set --; fi
    if ! meson setup "$@" "$BUILD" -Dcuda=enabled "$zstd_opt" >"$LOGS/setup.log" 2>&1; then
        tail -n 40 "$LOGS/setup.log" >&2
        summary 0 FAIL "meson setup (see setup.log)"
        return 1
    fi
    if ! ninja -C "$BUILD" >"$LOGS/build.log" 2>&1; then
        tail -n 60 "$LOGS/build.log" >&2
        summary 0 FAIL "build (see build.log)"
        return 1
    fi
    summary 0 PASS "configured and built with CUDA"
}

step1_codecs() {
    status=0
    timeout "${STEP1_TIMEOUT:-240}" meson test -C "$BUILD" --suite gpu --print-errorlogs \
        >"$LOGS/test.log" 2>&1 || status=$?
    cp "$BUILD/meson-logs/testlog.txt" "$LOGS/testlog.txt" 2>/dev/null || true
    cat "$LOGS/test.log"
    if [ "$status" -eq 0 ] && grep -q "^Skipped: *[1-9]" "$LOGS/test.log"; then
        summary 1 FAIL "gpu suite skipped: no CUDA device seen"
    elif [ "$status" -ne 0 ]; then
        summary 1 FAIL "GPU vs CPU byte for byte (see test.log)"
    else
        summary 1 PASS "GPU vs CPU byte for byte, every codec: $(grep -h '^OK:' "$BUILD"/meson-logs/testlog.txt | head -n 1)"
    fi
}

# Steps 2-4 (gpu/device-steps/): the shim's device path under mpirun, an
# unmodified mpi4py program on CUDA tensors, and data-parallel training.
# Each appends its own lines to summary.txt.
device_step() {
    s=0
    BUILD=$BUILD OUT=$LOGS sh "gpu/device-steps/$2.sh" || s=$?
    [ "$s" -eq 0 ] || summary "$1" FAIL "gpu/device-steps/$2.sh exited $s (see its lines above and step$1-*.log)"
}

step5_bench() {
    bench=$BUILD/bench/gcmpi-codec-bench
    if ! timeout 240 "$bench" --device cuda --size 64M --reps 5 >"$LOGS/bench-device.txt" 2>&1; then
        cat "$LOGS/bench-device.txt"
        summary 5 FAIL "gcmpi-codec-bench --device cuda (see bench-device.txt)"
        return 0
    fi
    cat "$LOGS/bench-device.txt"
    # qsgd's Elias coding (its stream decoded a thread per sync-pointed
    # segment), beside the fixed-width default of the table above.
    timeout 120 "$bench" --device cuda --codec qsgd --qsgd-coding elias --size 64M --reps 5 \
        >"$LOGS/bench-device-qsgd-elias.txt" 2>&1 || summary 5 FAIL "qsgd Elias bench (see bench-device-qsgd-elias.txt)"
    cat "$LOGS/bench-device-qsgd-elias.txt"
    status=0
    timeout 240 python3 bench/gpu_vs_torch.py --bench "$bench" --size 64M --reps 5 \
        >"$LOGS/bench-torch.txt" 2>&1 || status=$?
    cat "$LOGS/bench-torch.txt"
    case $status in
        0) summary 5 PASS "benchmark tables in bench-device.txt and bench-torch.txt" ;;
        77) summary 5 PASS "bench-device.txt; torch comparison skipped ($(head -n 1 "$LOGS/bench-torch.txt"))" ;;
        *) summary 5 FAIL "gpu_vs_torch.py (see bench-torch.txt)" ;;
    esac
}

# Issue 14's shared-memory table where more cores are lent than on the
# 2-core development machine: host buffers, the library of this build.
step6_scale() {
    status=0
    LINKS=shm CLUSTER=0 RANKS="${SCALE_RANKS:-2 4 8 16}" \
        timeout "${STEP6_TIMEOUT:-480}" bench/results/run-scale.sh "$LOGS/scale" "$BUILD" \
        >"$LOGS/scale-tables.md" 2>"$LOGS/scale.log" || status=$?
    cat "$LOGS/scale-tables.md"
    if [ "$status" -eq 0 ]; then
        summary 6 PASS "issue 14's tables at ${SCALE_RANKS:-2 4 8 16} ranks in scale-tables.md (JSON under scale/)"
    else
        summary 6 FAIL "run-scale.sh exited $status (see scale.log; the points it finished are under scale/)"
    fi
}

# STEPS="1 5" runs a subset (after the build); the default is steps 1-5,
# the benchmark before the longest step so a run cut short keeps it.
want() { case " ${STEPS:-1 2 3 5 4} " in *" $1 "*) return 0 ;; esac; return 1; }
if step0_build; then
    want 1 && step1_codecs
    want 2 && device_step 2 step2_c_mpi
    want 3 && device_step 3 step3_mpi4py
    want 5 && step5_bench
    want 4 && device_step 4 step4_train
    want 6 && step6_scale
fi
exit "$failed"
