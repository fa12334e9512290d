#!/usr/bin/env bash
# A short data-parallel run learns: 3 epochs on 6000 examples at 2 ranks
# reach at least 72% test accuracy (measured 78-81% over seeds 1-8), the
# loss falls, and the RESULT line and --json records have their format.
. "$(dirname "$0")/common.sh"

"$MPIRUN" -np 2 "$GCMPI_TRAIN" --subset 6000 --epochs 3 --json "$WORK/run.json" >"$WORK/out" ||
  fail "gcmpi-train exited with $?"
cat "$WORK/out"
result=$(tail -n1 "$WORK/out")
[[ $result =~ ^RESULT\ accuracy=[01]\.[0-9]{4}\ loss=[0-9]+\.[0-9]{4}\ seconds=[0-9]+\.[0-9]\ epochs=3\ ranks=2$ ]] ||
  fail "last line '$result' is not 'RESULT accuracy=A.AAAA loss=L.LLLL seconds=S.S epochs=3 ranks=2'"
python3 - "$WORK/run.json" "$(field "$result" accuracy)" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def check(cond, what):
    if not cond:
        sys.exit(f"FAIL: {what}")
e = d["epochs"]
check(d["complete"] is True and [x["epoch"] for x in e] == [1, 2, 3], "three epoch records")
check(d["ranks"] == 2 and d["train_examples"] == 6000 and d["test_examples"] == 10000, "run info")
check(d["steps_per_epoch"] == 6000 // (64 * 2), "steps per epoch = examples / global batch")
check(e[-1]["loss"] < e[0]["loss"], f"loss falls: {e[0]['loss']} -> {e[-1]['loss']}")
check(abs(e[-1]["accuracy"] - float(sys.argv[2])) < 5e-5, "RESULT shows the last epoch's accuracy")
check(e[-1]["accuracy"] >= 0.72, f"accuracy {e[-1]['accuracy']:.4f} below the 0.72 floor")
print(f"ok: accuracy {e[-1]['accuracy']:.4f}, loss {e[0]['loss']:.4f} -> {e[-1]['loss']:.4f}")
PY
