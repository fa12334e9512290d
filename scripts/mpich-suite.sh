#!/usr/bin/env bash
# mpich-suite.sh — MPICH's own test suite (test/mpi of an MPICH source
# release) under libgcmpi: programs nobody here wrote that call every
# collective with intercommunicators, MPI_IN_PLACE, zero counts, derived
# and zero-size types, user and non-commutative ops, nonblocking and
# persistent forms, and that create, split, dup and free communicators by
# the thousand.
#
#   scripts/mpich-suite.sh MPICH_SRC NAME [GCMPI_VAR=VALUE ...]
#
# MPICH_SRC: an unpacked MPICH source release (apt-get source mpich with a
# deb-src line, or a release tarball from mpich.org). NAME labels the run:
# `base` runs the suite without the library; any other name runs it under
# LD_PRELOAD of the library with the given variables, e.g.
#   MPI=mpich LIB=build-mpich/pmpi/libgcmpi.so scripts/mpich-suite.sh \
#       /tmp/mpich-4.0.2 hier GCMPI_CODEC=none GCMPI_ALGO=hier GCMPI_NODE_SIZE=2 \
#       GCMPI_MIN_BYTES=0 GCMPI_COMM=all
# Environment: MPI (mpich or openmpi, default openmpi: the MPI the suite
# is built with and runs on; the library must be built for the same one),
# LIB (default build/pmpi/libgcmpi.so), DIRS (test directories, default
# coll,comm), WORK (where the suite is configured and built, default
# /tmp/gcmpi-mpich-suite-$MPI; built once, reused), MPITEST_TIMEOUT
# (seconds a test may take, default 180).
# Writes WORK/NAME.xml (runtests' XML) and prints the counts and each
# failed test with the first lines of its output. With a base run in WORK
# it also lists the tests that fail here but passed in base: the ones the
# library is answerable for. Not in CI: a run of coll and comm takes
# 10-15 minutes on 2 cores. Exits 1 when some test failed that passed in
# base (0 without a base to compare with).
set -euo pipefail
usage="usage: mpich-suite.sh MPICH_SRC NAME [GCMPI_VAR=VALUE ...]"
src=${1:?$usage}
name=${2:?$usage}
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
mpi=${MPI:-openmpi}
lib=$(realpath -m "${LIB:-$here/build/pmpi/libgcmpi.so}")
dirs=${DIRS:-coll,comm}
work=${WORK:-/tmp/gcmpi-mpich-suite-$mpi}
case $mpi in
  mpich) cc=mpicc.mpich launcher=mpiexec.mpich cppflags= ;;
  # The suite's dtpools calls MPI-1 functions MPI-3 removed
  # (MPI_Type_hvector, MPI_Type_hindexed); Open MPI 4.1's mpi.h turns them
  # into a compile error unless asked to declare them, and its libmpi
  # still has them.
  openmpi) cc=mpicc.openmpi launcher=mpirun.openmpi cppflags=-DOMPI_OMIT_MPI1_COMPAT_DECLS=0 ;;
  *) echo "mpich-suite: MPI=$mpi: mpich or openmpi" >&2; exit 2 ;;
esac
[ -d "$src/test/mpi" ] || { echo "mpich-suite: $src/test/mpi: not an MPICH source tree" >&2; exit 2; }
if [ "$name" != base ] && [ ! -f "$lib" ]; then
  echo "mpich-suite: no $lib (build first, or set LIB)" >&2
  exit 2
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none

# Configure and build once per WORK: no GPU memory kinds (the suite's
# CUDA allocator asserts without a device), no Fortran, C++ or spawn. A
# test the MPI cannot build (Open MPI 4.1 has no MPI-4 persistent
# collectives) fails in every run, base included.
if [ ! -f "$work/.built-$dirs" ]; then
  mkdir -p "$work"
  cp -a "$src/test/mpi/." "$work/"
  (cd "$work" &&
    ./configure CC="$cc" MPICC="$cc" CPPFLAGS="$cppflags" --disable-fortran --disable-cxx --disable-spawn \
      --disable-ft-tests --without-cuda --without-hip --without-ze >configure.log 2>&1 &&
    make -j"$(nproc)" -C util >make.log 2>&1 &&
    make -j"$(nproc)" -C dtpools >>make.log 2>&1 &&
    for d in ${dirs//,/ }; do make -k -j"$(nproc)" -C "$d" >>make.log 2>&1 || true; done) ||
    { echo "mpich-suite: building the suite failed; see $work/configure.log and make.log" >&2; exit 2; }
  touch "$work/.built-$dirs"
fi

# runtests lets a test's own launcher arguments replace MPITEST_MPIEXECARG,
# so the library and its variables go in through a launcher of our own.
launch="$work/launch-$name"
{
  echo '#!/bin/sh'
  args=""
  if [ "$name" != base ]; then
    for e in "LD_PRELOAD=$lib" "$@"; do
      case $mpi in
        mpich) args="$args -genv ${e%%=*} '${e#*=}'" ;;
        openmpi) args="$args -x '$e'" ;;
      esac
    done
  fi
  # hydra reads MPIEXEC_TIMEOUT (runtests sets it per test); Open MPI's
  # mpirun takes --timeout.
  if [ "$mpi" = openmpi ]; then args="--timeout \${MPIEXEC_TIMEOUT:-180} $args"; fi
  echo "exec $launcher $args \"\$@\""
} >"$launch"
chmod +x "$launch"

cd "$work"
export MPITEST_TIMEOUT=${MPITEST_TIMEOUT:-180}
./runtests -srcdir=. -tests=testlist -testdirs="$dirs" -mpiexec="$launch" \
  -xmlfile="$work/$name.xml" >"$work/$name.log" 2>&1 || true

python3 - "$work" "$name" <<'EOF'
import re, sys, os
work, name = sys.argv[1], sys.argv[2]

def results(path):
    out = {}
    text = open(path, errors="replace").read()
    for block in text.split("<MPITEST>")[1:]:
        def field(tag):
            m = re.search(r"<%s>(.*?)</%s>" % (tag, tag), block, re.S)
            return m.group(1).strip() if m else ""
        key = "%s np=%s %s" % (field("NAME"), field("NP"), field("ARGS"))
        out[key] = (field("STATUS"), field("TESTDIFF").splitlines()[:2])
    return out

mine = results(os.path.join(work, name + ".xml"))
failed = {k: v for k, v in mine.items() if v[0] != "pass"}
print("%s: %d tests, %d passed, %d failed" % (name, len(mine), len(mine) - len(failed), len(failed)))
for k, (_, lines) in sorted(failed.items()):
    print("  %s: %s" % (k.strip(), " | ".join(lines)[:160]))
base = os.path.join(work, "base.xml")
if name != "base" and os.path.exists(base):
    before = results(base)
    new = sorted(k for k in failed if before.get(k, ("",))[0] == "pass")
    print("failing here, passing in base: %d" % len(new))
    for k in new:
        print("  " + k.strip())
    sys.exit(1 if new else 0)
EOF
