#!/usr/bin/env bash
# Installs the Debian packages libgcmpi needs to build, test and benchmark.
# Idempotent: does nothing when everything is already there.
set -euo pipefail

PACKAGES=(
  build-essential pkg-config meson ninja-build   # build
  libzstd-dev zlib1g-dev                         # zstd stage; idx.gz reader
  libcriterion-dev                               # unit tests
  libopenmpi-dev openmpi-bin                     # MPI (default flavour)
  libmpich-dev mpich                             # MPI (second flavour, tested in CI)
  clang libclang-rt-14-dev                       # clang -Werror build, libFuzzer
  valgrind                                       # leak/uninit check of the shim
  libopenblas-dev                                # gcmpi-train's matrix products
  dataset-fashion-mnist                          # gcmpi-train's data
  iproute2                                       # bench/netem (ip netns, tc)
  python3 python3-matplotlib                     # gcmpi-ab plots
)

# --list: print the package names (for .ci/run's own apt-get install).
if [ "${1:-}" = "--list" ]; then
  printf '%s\n' "${PACKAGES[@]}"
  exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "libgcmpi setup: installing ${missing[*]}"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
