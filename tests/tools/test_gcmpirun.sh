#!/usr/bin/env bash
# test_gcmpirun.sh — gcmpirun builds the right command for every launcher
# and really launches with the ones installed here.
#
#   test_gcmpirun.sh commands                 (GCMPIRUN, GCMPI_LIB_PATH set)
#   test_gcmpirun.sh launch LAUNCHER PROGRAM  (an MPI program of this build)
set -euo pipefail

fail() { echo "FAIL: $*" >&2; exit 1; }
G=${GCMPIRUN:?GCMPIRUN must name build/tools/gcmpirun}
# Only the settings a case gives: none of the caller's GCMPI_* or preloads.
for v in $(compgen -e | grep '^GCMPI_' || true); do unset "$v"; done
unset LD_PRELOAD
LIB=$("$G" --print-lib)
[ -f "$LIB" ] || fail "--print-lib gave $LIB, not a file"

# gcmpirun with these arguments, or a whole command line starting with env.
run() {
  if [ "$1" = env ]; then "$@"; else "$G" "$@"; fi
}

expect() { # description, expected command line, gcmpirun args...
  local what=$1 want=$2; shift 2
  local got
  got=$(run "$@") || fail "$what: gcmpirun exited $?"
  [ "$got" = "$want" ] || fail "$what:
  expected: $want
  got:      $got"
  echo "ok: $what"
}

refuses() { # description, text the message must contain, gcmpirun args...
  local what=$1 text=$2 status=0 err; shift 2
  err=$(run "$@" 2>&1 >/dev/null) || status=$?
  [ "$status" = 2 ] || fail "$what: exit status $status, expected 2 (stderr: $err)"
  grep -qF -- "$text" <<<"$err" || fail "$what: message lacks '$text': $err"
  echo "ok: $what"
}

commands() {
  expect "Open MPI: -x for LD_PRELOAD and each setting, right after mpirun" \
    "mpirun -x LD_PRELOAD=$LIB -x GCMPI_CODEC=topk -x GCMPI_RATIO=0.01 -np 4 ./train --epochs 2" \
    --codec topk --ratio 0.01 --launcher openmpi --dry-run -- mpirun -np 4 ./train --epochs 2
  expect "MPICH/hydra: -genv NAME VALUE" \
    "mpiexec -genv LD_PRELOAD $LIB -genv GCMPI_CODEC topk -genv GCMPI_BITS 4 -n 4 ./train" \
    --codec topk --bits 4 --launcher mpich --dry-run -- mpiexec -n 4 ./train
  expect "Slurm: --export=ALL with the settings; values with a comma through srun's environment" \
    "env GCMPI_STATS=stderr,/tmp/s.json srun --export=ALL,LD_PRELOAD=$LIB,GCMPI_CODEC=topk,GCMPI_EF_MAX_BYTES=1G -N 2 ./train" \
    --codec topk --stats stderr,/tmp/s.json --ef-max-bytes=1G --dry-run -- srun -N 2 ./train
  expect "plain command: its environment" \
    "env LD_PRELOAD=$LIB GCMPI_CODEC=int8 ./prog 'an arg'" \
    --codec int8 --dry-run -- ./prog "an arg"
  expect "GCMPI_* of the environment are passed on; options win" \
    "env LD_PRELOAD=$LIB GCMPI_SEED=7 GCMPI_CODEC=topk ./prog" \
    env GCMPI_CODEC=int8 GCMPI_SEED=7 "$G" --codec topk --dry-run -- ./prog
  local m=/lib/x86_64-linux-gnu/libm.so.6
  expect "an earlier LD_PRELOAD stays, after libgcmpi" \
    "env LD_PRELOAD=$LIB:$m GCMPI_CODEC=int8 ./prog" \
    env LD_PRELOAD=$m "$G" --codec int8 --dry-run -- ./prog
  expect "libgcmpi already preloaded is not added twice" \
    "env LD_PRELOAD=$m:$LIB GCMPI_CODEC=int8 ./prog" \
    env LD_PRELOAD=$m:$LIB "$G" --codec int8 --dry-run -- ./prog
  if command -v mpirun.openmpi >/dev/null; then
    expect "Open MPI detected from mpirun --version" \
      "mpirun.openmpi -x LD_PRELOAD=$LIB -x GCMPI_CODEC=int8 -np 2 ./p" \
      --codec int8 --dry-run -- mpirun.openmpi -np 2 ./p
  fi
  if command -v mpiexec.mpich >/dev/null; then
    expect "MPICH detected from mpiexec --version" \
      "mpiexec.mpich -genv LD_PRELOAD $LIB -genv GCMPI_CODEC int8 -n 2 ./p" \
      --codec int8 --dry-run -- mpiexec.mpich -n 2 ./p
  fi
  local plain
  plain=$(LD_PRELOAD=libm.so.6 "$G" --codec int8 -- sh -c 'echo "$LD_PRELOAD $GCMPI_CODEC"')
  [ "$plain" = "$LIB:libm.so.6 int8" ] || fail "plain command saw '$plain'"
  echo "ok: a plain command runs with LD_PRELOAD and the settings in its environment"
  local ab
  ab=$("$G" --codec topk --ratio 0.05 --ab --ab-args '--runs 2' --dry-run -- mpirun -np 2 ./p)
  grep -qF -- "gcmpi-ab --lib $LIB --runs 2 --env 'GCMPI_CODEC=topk GCMPI_RATIO=0.05 ' -- mpirun -np 2 ./p" <<<"$ab" ||
    fail "--ab: unexpected command $ab"
  echo "ok: --ab runs gcmpi-ab with the settings of arm B"

  refuses "an unknown option is refused with the closest variable" "did you mean --ratio?" \
    --ratoi 0.1 --dry-run -- ./prog
  refuses "a bad value is refused with the library's own message" \
    "GCMPI_RATIO=1.5 is out of range; expected a number in (0, 1]" \
    --codec topk --ratio 1.5 --dry-run -- ./prog
  refuses "a bad value from the environment is refused too" "GCMPI_CODEC=topkk" \
    env GCMPI_CODEC=topkk "$G" --dry-run -- ./prog
  refuses "an unknown launcher kind" "is not one of openmpi, mpich, srun, plain" \
    --launcher pbs --dry-run -- ./prog
  refuses "a missing command" "missing the command" --codec topk
  refuses "an option without a value" "--codec needs a value" --codec -- ./prog
}

launch() { # launcher program
  local launcher=$1 program=$2 out err
  if [[ $("$launcher" --version 2>&1) =~ Open\ MPI|OpenRTE ]]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
  fi
  # What each rank sees: the preload chain and the settings.
  out=$(LD_PRELOAD=libm.so.6 "$G" --codec int8 --comm grads,world2 -- "$launcher" -np 2 \
        sh -c 'echo "rank env: $LD_PRELOAD $GCMPI_CODEC $GCMPI_COMM"')
  [ "$(grep -c "^rank env: $LIB:libm.so.6 int8 grads,world2$" <<<"$out")" = 2 ] ||
    fail "ranks did not get LD_PRELOAD and the settings through $launcher: $out"
  echo "ok: both ranks got LD_PRELOAD=$LIB:libm.so.6 and the settings through $launcher"
  # A compressed job, its report on stderr.
  err=$("$G" --codec int8 --stats stderr -- "$launcher" -np 2 "$program" 2>&1 >/dev/null) ||
    fail "the job failed through gcmpirun: $err"
  grep -q "GCMPI_CODEC=int8" <<<"$err" && grep -q "MPI_COMM_WORLD *allreduce int8 *1 " <<<"$err" ||
    fail "no compressed allreduce in the report: $err"
  echo "ok: compressed job through gcmpirun -- $launcher"
}

case ${1:-} in
  commands) commands ;;
  launch) launch "$2" "$3" ;;
  *) fail "usage: test_gcmpirun.sh commands | launch LAUNCHER PROGRAM" ;;
esac
