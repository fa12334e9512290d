#!/usr/bin/env bash
# test_install.sh — what `meson install` puts in a prefix is all a user
# needs: install with DESTDIR, move the prefix elsewhere (nothing may point
# back at the build or the staging tree), then with an empty environment
# run a compressed job from the moved prefix alone:
#   gcmpirun --codec topk ... -- mpirun -np 2 gcmpi-train ...
# and check its statistics against the installed schema; also build a
# program against the installed codec library through pkg-config.
#
#   BUILD_ROOT=build MPIRUN=mpirun test_install.sh
set -euo pipefail

fail() { echo "FAIL: $*" >&2; exit 1; }
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_ROOT:?BUILD_ROOT must name the build directory}
mpirun=${MPIRUN:?MPIRUN must name the launcher}
work=$(mktemp -d "${TMPDIR:-/tmp}/gcmpi-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

meson install -C "$build" --no-rebuild --quiet --destdir "$work/stage" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "meson install failed"; }
prefix=$(meson introspect "$build" --buildoptions |
  python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"][0])')
staged=$work/stage$prefix
[ -x "$staged/bin/gcmpirun" ] || fail "no bin/gcmpirun under $staged"

# Everything a user runs is there.
for tool in gcmpirun gcmpi-config gcmpi-ab gcmpi-netem gcmpi-codec-bench gcmpi-coll-bench \
            gcmpi-overhead-bench gcmpi-train; do
  [ -x "$staged/bin/$tool" ] || fail "bin/$tool is not installed"
done
lib=$(find "$staged" -name libgcmpi.so -type f)
[ -n "$lib" ] || fail "libgcmpi.so is not installed"
libdir=$(dirname "$lib")
[ -f "$libdir/pkgconfig/gcmpi_codec.pc" ] || fail "gcmpi_codec.pc is not installed"
[ -f "$staged/include/gcmpi_codec.h" ] || fail "gcmpi_codec.h is not installed"
[ -f "$staged/share/doc/libgcmpi/stats-schema.json" ] || fail "the stats schema is not installed"
for part in netem-cluster.sh netem-rsh; do
  [ -x "$staged/libexec/libgcmpi/$part" ] || fail "libexec/libgcmpi/$part (gcmpi-netem --nodes) is not installed"
done
for tool in gcmpirun gcmpi-config gcmpi-ab gcmpi-netem gcmpi-codec-bench gcmpi-coll-bench \
            gcmpi-overhead-bench gcmpi-train; do
  "$staged/bin/$tool" --help >/dev/null 2>&1 || fail "$tool --help failed"
done
echo "ok: the libraries, header, pkg-config file, tools and docs are installed; every tool has --help"

# The codec library alone, through pkg-config (before the prefix moves).
cat >"$work/codec_user.c" <<'C'
#include <gcmpi_codec.h>
#include <stdio.h>
int main(void)
{
    float g[1000], acc[1000] = {0};
    for (int i = 0; i < 1000; i++) g[i] = (float)(i % 7) - 3.0f;
    gc_params p;
    gc_params_default(&p);
    const gc_codec *c = gc_codec_by_name("int8");
    unsigned char buf[8192];
    size_t n = gc_encode(c, g, NULL, 1000, &p, 1, buf, sizeof buf, NULL);
    if (gc_is_error(n) || gc_is_error(gc_decode_add(buf, n, acc, 1000, NULL))) return 1;
    printf("codec_user: %zu bytes, acc[4]=%g\n", n, acc[4]);
    return acc[4] > 0.95f && acc[4] < 1.05f ? 0 : 1; /* g[4] = 1, int8 within 1/127 */
}
C
flags=$(PKG_CONFIG_SYSROOT_DIR=$work/stage PKG_CONFIG_PATH=$libdir/pkgconfig \
        pkg-config --cflags --libs gcmpi_codec) || fail "pkg-config gcmpi_codec failed"
cc -std=c11 "$work/codec_user.c" -o "$work/codec_user" $flags || fail "cannot build against $flags"
LD_LIBRARY_PATH=$libdir "$work/codec_user" || fail "the program built with pkg-config failed"
echo "ok: a program builds and runs against the installed codec library (pkg-config)"

# Move the prefix: a relocated install must still find its pieces.
mv "$staged" "$work/moved"
rm -rf "$work/stage"
moved=$work/moved
if grep -rlF -e "$(cd "$build" && pwd)" -e "$work/stage" "$moved"; then
  fail "installed files above name the build or staging tree"
fi

# A fresh environment: only the moved prefix and the system on PATH.
ompi=()
if [[ $("$mpirun" --version 2>&1) =~ Open\ MPI|OpenRTE ]]; then
  ompi=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none)
fi
clean_env=(env -i PATH="$moved/bin:/usr/bin:/bin" HOME="$work" OPENBLAS_NUM_THREADS=1 "${ompi[@]}")
launcher=$(basename "$mpirun")
lib_used=$("${clean_env[@]}" gcmpirun --print-lib)
[ "$lib_used" = "$(cd "$moved" && pwd)/${libdir#"$staged"/}/libgcmpi.so" ] ||
  fail "gcmpirun preloads $lib_used, not the moved prefix's library"
# --algo rule --warmup 0: compressed from the first call (over shared
# memory auto would pass the calls through, being faster there).
"${clean_env[@]}" gcmpirun --codec topk --ratio 0.05 --algo rule --warmup 0 --stats "$work/stats.json" -- \
  "$launcher" -np 2 gcmpi-train --epochs 1 --subset 2000 --test-subset 500 --quiet \
  >"$work/job.out" 2>"$work/job.err" || { cat "$work/job.err"; fail "the installed job failed"; }
grep -q "^RESULT accuracy=" "$work/job.out" || fail "gcmpi-train printed no RESULT: $(cat "$work/job.out")"
python3 - "$work/stats.json" <<'PY' || fail "the statistics do not show a compressed job"
import json, sys
s = json.load(open(sys.argv[1]))
rows = [r for r in s["collectives"] if r["collective"] == "allreduce" and r["codec"] == "topk"]
assert s["config"]["GCMPI_CODEC"] == "topk" and s["config"]["GCMPI_RATIO"] == "0.05", s["config"]
assert rows and rows[0]["calls_compressed"] > 0 and rows[0]["ratio"] > 5, rows
print(f"ok: {rows[0]['calls_compressed']} allreduces compressed {rows[0]['ratio']:.1f}x")
PY
python3 "$src/tests/tools/check_stats_schema.py" --strict \
  "$moved/share/doc/libgcmpi/stats-schema.json" "$work/stats.json" ||
  fail "the statistics do not follow the installed schema"
echo "ok: a compressed job ran from the moved prefix alone, in an empty environment ($(cat "$work/job.out"))"

# gcmpi-ab installed finds the installed library by itself (through the
# gcmpirun beside it): one run without, one with.
"${clean_env[@]}" gcmpi-ab --runs 1 --env 'GCMPI_CODEC=topk GCMPI_RATIO=0.05' -- \
  "$launcher" -np 2 gcmpi-train --epochs 1 --subset 1000 --test-subset 200 --quiet \
  >"$work/ab.out" 2>&1 || { cat "$work/ab.out"; fail "installed gcmpi-ab failed"; }
grep -qF "B: LD_PRELOAD=$lib_used" "$work/ab.out" || { cat "$work/ab.out"; fail "gcmpi-ab did not preload $lib_used"; }
echo "ok: the installed gcmpi-ab preloads the installed library"
