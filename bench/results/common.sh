# bench/results/common.sh — what the result scripts (run.sh, run-adapt.sh)
# share: the build they use and one training run of gcmpi-train, recorded
# under $out. Sourced from the repository root; the caller sets BUILD, out,
# SEED and SUBSET.

# Configure BUILD when missing (Open MPI, no CUDA), build it, set LIB and
# TRAIN, and let Open MPI run as root on more ranks than cores.
prepare_build() {
  if [ ! -f "$BUILD/build.ninja" ]; then
    meson setup "$BUILD" -Dmpi=openmpi -Dcuda=disabled >/dev/null
  fi
  ninja -C "$BUILD" >/dev/null
  LIB=$PWD/$BUILD/pmpi/libgcmpi.so
  TRAIN=$PWD/$BUILD/bench/train/gcmpi-train
  [ -x "$TRAIN" ] || { echo "$0: $TRAIN was not built (needs MPI, zlib, CBLAS)" >&2; exit 1; }
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
}

# run NAME RANKS EPOCHS LINK 'GCMPI_...' 'trainer options'
#   LINK: a tc rate (through bench/netem) or "shm" (no netem).
run() {
  local name=$1 np=$2 epochs=$3 link=$4 vars=$5 topts=$6
  local cmd=() xs=() v
  if [ -n "$vars" ]; then
    xs+=(-x "LD_PRELOAD=$LIB" -x "GCMPI_STATS=$out/$name.stats.json")
    for v in $vars; do xs+=(-x "$v"); done
  fi
  case $link in
    shm) ;;
    # TCP over the unshaped loopback, as bench/netem sets Open MPI up, minus
    # the tc shaping: separates TCP's own cost from the link's.
    tcp) cmd+=(env OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo
               OMPI_MCA_oob_tcp_if_include=lo) ;;
    *) cmd+=(bench/netem "$link" --) ;;
  esac
  cmd+=(mpirun -np "$np" "${xs[@]}" "$TRAIN" --epochs "$epochs" --seed "$SEED"
        --json "$out/$name.train.json")
  [ -z "$SUBSET" ] || cmd+=(--subset "$SUBSET")
  # shellcheck disable=SC2206
  [ -z "$topts" ] || cmd+=($topts)
  rm -f "$out/$name.stats.json" "$out/$name.train.json"
  printf '%q ' "${cmd[@]}" > "$out/$name.cmd"; echo >> "$out/$name.cmd"
  local t0=$SECONDS
  printf '%-28s ' "$name" >&2
  if "${cmd[@]}" > "$out/$name.log" 2>&1; then
    echo "$(grep '^RESULT' "$out/$name.log" | tail -1) ($((SECONDS - t0)) s)" >&2
  else
    echo "FAILED (see $out/$name.log)" >&2
    return 1
  fi
}
