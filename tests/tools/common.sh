# shellcheck shell=bash
# common.sh — sourced by the tool tests. Meson passes the programs in the
# environment: MPIRUN, GCMPI_AB, NETEM, PROBE, STATS_PRELOAD, GCMPI_TRAIN.
set -euo pipefail

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }

# The launcher's flavour decides what it needs: Open MPI refuses root and
# more ranks than cores unless told (CI runs as root on 2 cores).
if [[ $("$MPIRUN" --version 2>&1) =~ Open\ MPI|OpenRTE ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
fi
export OPENBLAS_NUM_THREADS=1

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gcmpi-tools-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# The value of the first NAME=VALUE word in TEXT.
field() { # text name
  grep -o "\b$2=[^ ]*" <<<"$1" | head -n1 | cut -d= -f2
}
