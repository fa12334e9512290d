#!/usr/bin/env bash
# gcmpi-train stops with one clear message (not one per rank) and a non-zero
# status on bad options, a missing dataset, a file that is not IDX, a
# truncated file, and a training set too small for one global batch.
. "$(dirname "$0")/common.sh"
# Each job here ends with a rank's non-zero exit, after which Open MPI gives
# the other rank 1 s between SIGTERM and SIGKILL: nothing to clean up here.
export OMPI_MCA_odls_base_sigkill_timeout=0

expect_error() { # exit-status message-regex gcmpi-train-args...
  local want=$1 re=$2 status=0
  shift 2
  "$MPIRUN" -np 2 "$GCMPI_TRAIN" "$@" >"$WORK/out" 2>"$WORK/err" || status=$?
  [ "$status" -eq "$want" ] || { cat "$WORK/err" >&2; fail "'$*' exited with $status; expected $want"; }
  grep -Eq "^gcmpi-train: .*$re" "$WORK/err" || { cat "$WORK/err" >&2; fail "'$*': no message matching '$re'"; }
  [ "$(grep -c '^gcmpi-train: ' "$WORK/err")" -eq 1 ] || { cat "$WORK/err" >&2; fail "'$*': not exactly one message"; }
  echo "ok: $* -> $(grep '^gcmpi-train: ' "$WORK/err")"
}
expect_error 2 "--batch=0 is out of range; expected an integer from 1 to 65536" --batch 0
expect_error 2 "--lr=fast is not a number" --lr fast
expect_error 2 "--momentum=1 is out of range; expected a number in \[0, 1\)" --momentum 1
expect_error 2 "unknown option --frobnicate" --frobnicate
expect_error 1 "$WORK/none/train-images-idx3-ubyte.gz: cannot open" --data "$WORK/none"

# An images file whose magic says 1 dimension, and a labels file cut short.
mkdir -p "$WORK/bad"
printf '\x00\x00\x08\x01\x00\x00\x00\x02ab' | gzip >"$WORK/bad/train-images-idx3-ubyte.gz"
expect_error 1 "bad IDX magic 0x00000801; expected 0x00000803" --data "$WORK/bad"
printf '\x00\x00\x08\x03\x00\x00\x00\x01\x00\x00\x00\x1c\x00\x00\x00\x1c' >"$WORK/bad/train-images-idx3-ubyte.gz"
head -c 784 /dev/zero >>"$WORK/bad/train-images-idx3-ubyte.gz"
printf '\x00\x00\x08\x01\x00\x00\x00\x05\x01\x02' | gzip >"$WORK/bad/train-labels-idx1-ubyte.gz"
expect_error 1 "truncated: 2 of 5 data bytes" --data "$WORK/bad"

expect_error 1 "100 training examples do not fill one global minibatch of 128" --subset 100
expect_error 1 "70000 train examples requested but .* holds 60000" --subset 70000
expect_error 1 "cannot write $WORK/none/run.json.tmp" --json "$WORK/none/run.json"
expect_error 1 "cannot write --dump-grads $WORK/none/g.bin" --dump-grads "$WORK/none/g.bin"
