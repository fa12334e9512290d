#!/bin/sh
# run-fuzzers.sh — build the libFuzzer harnesses with clang in their own build
# dir (whatever compiler the main build uses), seed a corpus with valid
# payloads of every codec, and run each harness for a bounded time.
#
#   tests/fuzz/run-fuzzers.sh [SECONDS] [BUILD_DIR]
#
# SECONDS per harness (default 15); BUILD_DIR defaults to build-fuzz at the
# top of the source tree. FUZZ_JOBS harnesses run at once (default: number of
# CPUs). The corpus grows across runs in BUILD_DIR/fuzz-corpus; crashing
# inputs land in BUILD_DIR/fuzz-artifacts. Exits non-zero if any harness
# crashed, leaked, hit a sanitizer report, timed out on an input or failed to
# run; prints executions per harness either way.
set -eu

secs=${1:-15}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$src/build-fuzz}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}

case $secs in
    ''|*[!0-9]*) echo "run-fuzzers.sh: SECONDS must be a positive integer, got '$secs'" >&2; exit 2 ;;
esac

if [ ! -f "$build/build.ninja" ]; then
    command -v clang >/dev/null 2>&1 || { echo "run-fuzzers.sh: clang not found (libFuzzer needs it)" >&2; exit 2; }
    CC=clang meson setup "$build" "$src" -Dfuzz=enabled -Dtests=disabled -Dcuda=disabled \
        --buildtype=debugoptimized
fi
ninja -C "$build" fuzzers || {
    echo "run-fuzzers.sh: could not build the fuzzers in $build (a clang build dir configured with -Dfuzz=enabled is needed)" >&2
    exit 2
}

fuzz_dir=$build/tests/fuzz
corpus=$build/fuzz-corpus
artifacts=$build/fuzz-artifacts
logs=$build/fuzz-logs
mkdir -p "$corpus" "$artifacts" "$logs"
"$fuzz_dir/fuzz_seed_corpus" "$corpus"

harnesses=$(find "$fuzz_dir" -maxdepth 1 -type f -perm -u+x \( -name 'fuzz_decode_*' -o -name fuzz_payload_info \) \
    -exec basename {} \; | sort)
[ -n "$harnesses" ] || { echo "run-fuzzers.sh: no harnesses in $fuzz_dir" >&2; exit 2; }

run_one() {
    name=$1
    case $name in
        fuzz_decode_*) dir=$corpus/${name#fuzz_decode_} ;;
        *) dir=$corpus/payload_info ;;
    esac
    mkdir -p "$dir"
    # Memory ceiling and per-input timeout: an unbounded allocation or loop
    # in a decoder is a failure, not a slow run.
    if "$fuzz_dir/$name" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$artifacts/$name-" "$dir" \
        >"$logs/$name.log" 2>&1; then
        echo ok >"$logs/$name.status"
    else
        echo "FAILED (exit $?)" >"$logs/$name.status"
    fi
}

running=0
for h in $harnesses; do
    run_one "$h" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait
        running=0
    fi
done
wait

failed=0
printf '%-24s %14s %10s  %s\n' harness executions exec/s result
for h in $harnesses; do
    log=$logs/$h.log
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    status=$(cat "$logs/$h.status")
    printf '%-24s %14s %10s  %s\n' "$h" "${execs:-?}" "${rate:-?}" "$status"
    if [ "$status" != ok ]; then
        failed=$((failed + 1))
        echo "---- $h: last lines of $log" >&2
        tail -n 40 "$log" >&2
    fi
done
if [ "$failed" -gt 0 ]; then
    echo "run-fuzzers.sh: $failed harness(es) failed; reproduce with: $fuzz_dir/<harness> $artifacts/<file>" >&2
    exit 1
fi
echo "run-fuzzers.sh: all harnesses ran ${secs}s without a crash"
