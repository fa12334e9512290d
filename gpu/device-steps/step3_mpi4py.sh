#!/bin/sh
# step3_mpi4py.sh — an unmodified mpi4py program (mpi4py_tensors.py) that
# allreduces and allgathers PyTorch CUDA tensors: mpi4py hands MPI the
# device pointer. Without libgcmpi, Open MPI built without CUDA cannot take
# it (the job must fail); with libgcmpi it works: exact under codec none,
# within the codec's bound under fp16 and int8. libgcmpi_gpu.so is found
# beside libgcmpi.so (no GCMPI_GPU_LIB), as an installed tree would.
. "$(dirname "$0")/common.sh"
py=$ROOT/gpu/device-steps/mpi4py_tensors.py
status=0
log=$OUT/step3-without.log
if timeout 300 "$MPIRUN" -np 2 python3 "$py" none 0 >"$log" 2>&1; then
    summary step3 FAIL "without libgcmpi the job succeeded (expected a failure)"
    status=1
else
    summary step3 PASS "without libgcmpi the job fails: $(grep -m1 -iE 'error|fault|signal' "$log" | cut -c1-120)"
fi
for spec in "none 0" "fp16 0.002" "int8 0.05"; do
    set -- $spec
    log=$OUT/step3-$1.log
    if run2 "$log" GCMPI_CODEC="$1" GCMPI_STATS="$OUT/step3-$1.json" -- python3 "$py" "$1" "$2"; then
        summary step3 PASS "with libgcmpi, codec $1: $(grep -h 'mpi4py_tensors' "$log" | tail -n1)"
    else
        summary step3 FAIL "with libgcmpi, codec $1 (see step3-$1.log)"
        status=1
    fi
done
exit $status
