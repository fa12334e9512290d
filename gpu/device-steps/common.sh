# common.sh — sourced by the device steps (stepN_*.sh): paths, the mpirun
# line for 2 ranks as root, and how a step reports one line to the summary.
#   BUILD   the CUDA build dir (default build-device), configured and built
#   OUT     where logs and the summary go (default $BUILD/device-logs)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build-device}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
OUT=${OUT:-$BUILD/device-logs}
mkdir -p "$OUT"
LIBGCMPI=$BUILD/pmpi/libgcmpi.so
LIBGPU=${LIBGPU:-$BUILD/gpu/libgcmpi_gpu.so}  # the emulated one in CI
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
MPIRUN=${MPIRUN:-mpirun}

# summary STEP STATUS TEXT: one line in $OUT/summary.txt (and on stdout).
summary() {
    printf '%s %s: %s\n' "$1" "$2" "$3" | tee -a "$OUT/summary.txt"
}

# run2 LOG ENV... -- CMD...: a 2-rank job (NP ranks where NP is set) with
# libgcmpi preloaded and the given GCMPI_* settings; returns its exit
# status, output in LOG.
run2() {
    log=$1; shift
    xs=""
    while [ "$1" != "--" ]; do xs="$xs -x $1"; shift; done
    shift
    # shellcheck disable=SC2086
    timeout 300 "$MPIRUN" -np "${NP:-2}" -x LD_PRELOAD="$LIBGCMPI" $xs "$@" >"$log" 2>&1
}
