#!/usr/bin/env bash
# GCMPI_AUTO_CACHE in unchanged jobs under LD_PRELOAD: with the default
# (auto) the first job measures auto's calibration and rank 0 saves it,
# with the trial's outcome, under $HOME/.cache/libgcmpi; the same job
# again reads them, checks the figures and settles on that outcome
# without a trial; GCMPI_AUTO_CACHE=off measures and writes nothing;
# a named directory is made and used; a damaged file is measured again;
# MPI_Allgather's trial outcome goes to a file of its own key and the next
# job checks it with one call.
. "$(dirname "$0")/common.sh"

[ -f "${GCMPI_LIB:-}" ] || skip "libgcmpi.so not built"

# The first two jobs run under valgrind where it is installed: the cache's
# reading and writing, and GCMPI_MOMENTUM's agreement beside the exchange.
vg=()
supp=/usr/share/openmpi/openmpi-valgrind.supp
if command -v valgrind >/dev/null && [ -f "$supp" ]; then
  vg=(valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite
      --show-leak-kinds=definite --suppressions="$(dirname "$0")/../mpi/valgrind.supp"
      --suppressions="$supp")
fi

job() { # name [GCMPI_AUTO_CACHE value]
  local name=$1
  local cache=() wrap=()
  [ $# -gt 1 ] && cache=(-x "GCMPI_AUTO_CACHE=$2")
  [[ $name == first || $name == second ]] && wrap=("${vg[@]}")
  env -u GCMPI_AUTO_CACHE -u XDG_CACHE_HOME HOME="$WORK/home" \
    "$MPIRUN" -np 2 -x HOME -x LD_PRELOAD="$GCMPI_LIB" -x GCMPI_CODEC=topk -x GCMPI_ALGO=auto \
    -x GCMPI_MOMENTUM=0.9 -x GCMPI_STATS=stderr -x GCMPI_VERBOSE=1 "${cache[@]}" \
    "${wrap[@]}" "$PROBE" --count 100000 --iters 40 \
    >"$WORK/$name.out" 2>"$WORK/$name.err" || { cat "$WORK/$name.err" >&2; fail "$name: job failed"; }
}
calibration() { grep "auto's calibration on MPI_COMM_WORLD" "$WORK/$1.err" || true; }
choice() { grep -o "100000 floats -> [a-z_]*" "$WORK/$1.err" || true; }

mkdir -p "$WORK/home"
job first
line=$(calibration first)
echo "first:  $line"
[[ $line == *", measured, saved to $WORK/home/.cache/libgcmpi/auto-"*.txt ]] ||
  fail "the first job did not measure and save under \$HOME/.cache: $line"
files=("$WORK"/home/.cache/libgcmpi/auto-*.txt)
[ ${#files[@]} = 1 ] && [ -f "${files[0]}" ] || fail "not one cache file: ${files[*]}"
grep -q "^key libgcmpi=.* ranks=2 " "${files[0]}" || fail "the file has no key: $(head -3 "${files[0]}")"

job second
line=$(calibration second)
echo "second: $line"
[[ $line == *", cached (its check: "*", from ${files[0]}" ]] ||
  fail "the second job did not use the saved calibration: $line"
first_choice=$(choice first)
[ -n "$first_choice" ] || fail "no choice reported"
grep -q "^settled 1$" "${files[0]}" || fail "the trial's outcome was not saved: $(tail -4 "${files[0]}")"
grep -q "100000 floats -> .*, the last settled from the cache" "$WORK/second.err" ||
  fail "the second job tried the size again: $(grep '100000 floats' "$WORK/second.err")"
[ "$(choice second)" = "$first_choice" ] || fail "the second job settled otherwise: $(choice second)"

job off off
line=$(calibration off)
echo "off:    $line"
[[ $line == *", measured" ]] || fail "GCMPI_AUTO_CACHE=off still used a cache: $line"

dir="$WORK/named/cache"
job named "$dir"
[[ $(calibration named) == *"saved to $dir/auto-"* ]] || fail "not saved in $dir: $(calibration named)"
echo "damaged" >"$dir"/auto-*.txt
job damaged "$dir"
line=$(calibration damaged)
echo "damaged: $line"
[[ $line == *", measured, saved to $dir/auto-"* ]] || fail "a damaged file was not measured again: $line"

gjob() { # name: a job that only gathers
  env -u GCMPI_AUTO_CACHE -u XDG_CACHE_HOME HOME="$WORK/ghome" \
    "$MPIRUN" -np 2 -x HOME -x LD_PRELOAD="$GCMPI_LIB" -x GCMPI_CODEC=topk \
    -x GCMPI_ALLGATHER_CODEC=int8 -x GCMPI_ALGO=auto -x GCMPI_STATS=stderr -x GCMPI_VERBOSE=1 \
    "$PROBE" --allgather --count 100000 --iters 40 \
    >"$WORK/$1.out" 2>"$WORK/$1.err" || { cat "$WORK/$1.err" >&2; fail "$1: job failed"; }
  grep -q "^metric=1.5000$" "$WORK/$1.out" || fail "$1: wrong gather: $(cat "$WORK/$1.out")"
}
gline() { grep -o "MPI_Allgather of 100000 floats a rank -> .*" "$WORK/$1.err" || true; }
way() { gline "$1" | sed 's/.*-> \([a-z_ ]*\),.*/\1/'; }
mkdir -p "$WORK/ghome"
gjob gather1
line=$(gline gather1)
echo "gather1: $line"
[[ $line == *", saved to $WORK/ghome/.cache/libgcmpi/auto-"*.txt" (median calls:"* ]] ||
  fail "the gather job did not save its trial: $line"
gfile=("$WORK"/ghome/.cache/libgcmpi/auto-*.txt)
[ ${#gfile[@]} = 1 ] && grep -q "^key .* collective=allgather " "${gfile[0]}" &&
  grep -q "^settled 1$" "${gfile[0]}" || fail "no allgather file with its row: ${gfile[*]}"
gjob gather2
line=$(gline gather2)
echo "gather2: $line"
# The check is one timed call: within 2x of the median it settles, else
# (a loaded machine, twice) the trial runs again and saves.
if [[ $line == *", settled from the cache (its check: "*" ms now), from ${gfile[0]}"* ]]; then
  [ "$(way gather2)" = "$(way gather1)" ] || fail "settled from the cache on another way: $line"
else
  [[ $line == *", the cache's way missed its check ("*", saved to ${gfile[0]}"* ]] ||
    fail "the second gather job did not check the cached way: $line"
fi
echo ok
