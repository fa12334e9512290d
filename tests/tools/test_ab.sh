#!/usr/bin/env bash
# gcmpi-ab runs both arms alternately, N runs each, passes the library and the
# --env variables to every rank of arm B only, and its table and JSON agree
# with the runs it made. The preloaded library is stats_preload, a stand-in
# for libgcmpi that counts the float allreduce bytes and reports them.
. "$(dirname "$0")/common.sh"

runs=2 count=50000 iters=3 np=2
"$GCMPI_AB" --runs $runs --lib "$STATS_PRELOAD" --metric 'metric=([0-9.]+)' \
  --env 'GCMPI_CODEC=topk GCMPI_RATIO=0.01' --json "$WORK/ab.json" \
  -- "$MPIRUN" -np $np "$PROBE" --count $count --iters $iters >"$WORK/table" 2>"$WORK/log" ||
  { cat "$WORK/log" >&2; fail "gcmpi-ab exited with $?"; }
cat "$WORK/table"

grep -Eq "^A +$runs +[0-9.]+ s +[0-9.]+ +[0-9.]+ +1\.5000$" "$WORK/table" || fail "row A is wrong"
grep -Eq "^B +$runs +[0-9.]+ s +[0-9.]+ +[0-9.]+ +1\.5000$" "$WORK/table" || fail "row B is wrong"
grep -q "compression 1.00x" "$WORK/table" || fail "stand-in sends what it is offered: 1.00x expected"

python3 - "$WORK/ab.json" "$WORK/table" $runs $count $iters $np <<'PY'
import json, re, statistics, sys
doc = json.load(open(sys.argv[1]))
table = open(sys.argv[2]).read()
runs, count, iters, np = map(int, sys.argv[3:])
def check(cond, what):
    if not cond:
        sys.exit(f"FAIL: {what}")
check([r["arm"] for r in doc["runs"]] == ["A", "B"] * runs, "arms alternate A B A B, N each")
check(all(r["status"] == 0 for r in doc["runs"]) and doc["failed"] is False, "every run succeeded")
for r in doc["runs"]:
    b = r["arm"] == "B"
    # Open MPI gets "-x NAME=VALUE", hydra "-genv NAME VALUE".
    words = " ".join(r["command"])
    check(("LD_PRELOAD" in words) == b, f"only B preloads: {r['command']}")
    check(("GCMPI_CODEC" in words and "topk" in words) == b, "only B gets --env")
    check(r["metric"] == 1.5, "metric parsed from every run")
    if b:
        rep = r["stats_report"]
        check(rep is not None and rep["env_ranks"] == np, f"every rank of B saw GCMPI_CODEC: {rep}")
        # The warm-up allreduce of one float, then iters of count floats.
        check(r["stats"]["bytes_offered"] == 4 * (1 + iters * count), f"bytes offered {r['stats']}")
        check(r["stats"]["compression"] == 1.0, "compression offered/sent")
    else:
        check(r["stats_report"] is None, "arm A has no statistics")
s = doc["summary"]
for arm in "AB":
    walls = [r["wall_s"] for r in doc["runs"] if r["arm"] == arm]
    check(s[arm]["runs"] == runs, f"{arm}: {runs} runs")
    check(abs(s[arm]["wall_median_s"] - statistics.median(walls)) < 1e-9, f"{arm} median")
    check(s[arm]["wall_min_s"] == min(walls) and s[arm]["wall_max_s"] == max(walls), f"{arm} min/max")
ratio = s["B"]["wall_median_s"] / s["A"]["wall_median_s"]
check(abs(s["wall_ratio_b_over_a"] - ratio) < 1e-9, "B/A ratio is the ratio of the medians")
m = re.search(r"B/A wall time \(medians\): ([0-9.]+)", table)
check(m and abs(float(m.group(1)) - ratio) < 0.0006, "table shows the same B/A ratio")
PY
echo "ok: both arms, $runs runs each, table and JSON consistent"
