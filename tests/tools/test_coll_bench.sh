#!/usr/bin/env bash
# gcmpi-coll-bench, one case after another and --interleave (every case of
# a size and codec timed in rounds): the same rows, none with an error,
# auto's row running one of the forced algorithms, and the same first-call
# error per row in both modes (each case keeps residuals of its own; a
# residual shared between interleaved cases would change it). codec none
# is exact.
source "$(dirname "$0")/common.sh"
[ -n "${COLL_BENCH:-}" ] || skip "gcmpi-coll-bench not built"

args=(--sizes 64K,256K --codec none,topk --ratio 0.05 --algo auto,passthrough,allgather,rsag
      --reps 3 --warmup 1 --json)
GCMPI_AUTO_CACHE=off "$MPIRUN" -np 2 "$COLL_BENCH" "${args[@]}" >"$WORK/seq.json" 2>"$WORK/seq.err" \
  || { cat "$WORK/seq.err" >&2; fail "gcmpi-coll-bench failed"; }
GCMPI_AUTO_CACHE=off "$MPIRUN" -np 2 "$COLL_BENCH" "${args[@]}" --interleave >"$WORK/int.json" \
  2>"$WORK/int.err" || { cat "$WORK/int.err" >&2; fail "gcmpi-coll-bench --interleave failed"; }

python3 - "$WORK/seq.json" "$WORK/int.json" <<'PY'
import json, sys
def rows(path):
    out = {}
    for r in json.load(open(path)):
        if r.get("error"):
            sys.exit(f"FAIL: {path}: {r}")
        algo = r["algo"].split(":", 1)
        out[(r["size_bytes"], r["codec"], "auto" if len(algo) == 2 else algo[0])] = r
    return out
seq, inter = rows(sys.argv[1]), rows(sys.argv[2])
want = {(s, c, a) for s in (65536, 262144) for c in ("none", "topk")
        for a in ("auto", "passthrough", "allgather", "rsag")}
for name, got in (("one after another", seq), ("interleaved", inter)):
    if set(got) != want:
        sys.exit(f"FAIL: {name}: rows {sorted(set(got) ^ want)} missing or extra")
    for (s, c, a), r in got.items():
        if a == "auto" and r["algo"].split(":")[1] not in ("passthrough", "allgather", "rsag", "hier", "native", "sparse_rd"):
            sys.exit(f"FAIL: {name}: auto ran {r['algo']}")
        if not (r["compressed_ms"] > 0 and r["native_ms"] > 0):
            sys.exit(f"FAIL: {name}: no time in {r}")
        if c == "none" and r["rel_error"] > 1e-6:
            sys.exit(f"FAIL: {name}: codec none not exact: {r}")
for k in want:
    a, b = seq[k]["rel_error"], inter[k]["rel_error"]
    if k[2] != "auto" and abs(a - b) > 1e-9 * max(1.0, abs(a)):
        sys.exit(f"FAIL: {k}: first-call error {a} one after another, {b} interleaved")
print("ok: 16 rows in each mode, same first-call errors")
PY

# Under --interleave auto's trial runs in the rounds of the other cases
# (the conditions its timed calls see): every size and codec printed its
# trial, and the auto row runs what that trial settled on.
python3 - "$WORK/int.json" "$WORK/int.err" <<'PY'
import json, re, sys
rows = {(r["size_bytes"] // 4, r["codec"]): r["algo"].split(":")[1]
        for r in json.load(open(sys.argv[1])) if r["algo"].startswith("auto:")}
trials = {(int(n), c): a for c, n, a in
          re.findall(r"auto (\w+), (\d+) floats: trial .* -> (\w+)", open(sys.argv[2]).read())}
if set(trials) != set(rows):
    sys.exit(f"FAIL: trials printed for {sorted(trials)}, auto rows {sorted(rows)}")
for k, a in rows.items():
    if trials[k] != a:
        sys.exit(f"FAIL: {k}: the trial settled on {trials[k]}, the auto row ran {a}")
print("ok: auto's trials settled in the rounds, the rows run their choice")
PY

# --min-time: short calls get more timed calls (all cases of a size and
# codec alike under --interleave), long ones keep --reps; a bad value is
# refused by name.
GCMPI_AUTO_CACHE=off "$MPIRUN" -np 2 "$COLL_BENCH" --sizes 64K,256K --codec topk --ratio 0.05 \
  --algo auto,passthrough,allgather --reps 3 --warmup 1 --json --interleave --min-time 0.02 \
  >"$WORK/min.json" 2>"$WORK/min.err" || { cat "$WORK/min.err" >&2; fail "--min-time failed"; }
python3 - "$WORK/min.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
for size in (65536, 262144):
    got = {r["timed_calls"] for r in rows if r["size_bytes"] == size}
    if len(got) != 1:
        sys.exit(f"FAIL: {size} B: cases timed {sorted(got)} calls, not alike")
    n = got.pop()
    if not 3 < n <= 1024:
        sys.exit(f"FAIL: {size} B: {n} timed calls for 20 ms of sub-ms calls")
    slowest = max(r["native_ms"] + r["compressed_ms"] for r in rows if r["size_bytes"] == size)
    if n > 1 and (n - 1) * slowest > 20 * 10:
        sys.exit(f"FAIL: {size} B: {n} calls of up to {slowest} ms for 20 ms")
print("ok: --min-time adds calls to short cases")
PY
if "$MPIRUN" -np 1 "$COLL_BENCH" --sizes 64K --min-time soon >"$WORK/bad.out" 2>&1; then
  fail "--min-time soon was accepted"
fi
grep -q "bad --min-time 'soon'" "$WORK/bad.out" || fail "no error naming --min-time: $(cat "$WORK/bad.out")"
echo "ok: a bad --min-time is refused"

