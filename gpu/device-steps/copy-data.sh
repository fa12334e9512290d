#!/bin/sh
# copy-data.sh — copies the Fashion-MNIST idx files (Debian package
# dataset-fashion-mnist) into .data/fashion-mnist/, an ignored folder that
# travels with the tree to a machine without the package (step4_train.sh
# looks there first).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
src=${1:-/usr/share/datasets/fashion-mnist}
mkdir -p "$root/.data/fashion-mnist"
cp "$src"/*-idx?-ubyte* "$root/.data/fashion-mnist/"
ls -l "$root/.data/fashion-mnist"
