#!/usr/bin/env bash
# At 2 ranks each gradient sum is one addition, so one fused allreduce and
# one allreduce per tensor (--per-tensor) must train identically; and
# --dump-grads writes the 535818 floats of the fused buffer, all finite and
# not all zero.
. "$(dirname "$0")/common.sh"

train() {
  "$MPIRUN" -np 2 "$GCMPI_TRAIN" --subset 2560 --test-subset 1000 --epochs 2 "$@" |
    grep -E '^(epoch|RESULT)' | sed -E 's/ (total_)?seconds=[0-9.]+//g'
}
train --dump-grads "$WORK/fused.bin" >"$WORK/fused"
train --per-tensor --dump-grads "$WORK/tensor.bin" >"$WORK/tensor"
cat "$WORK/fused"
diff "$WORK/fused" "$WORK/tensor" || fail "--per-tensor trains differently from the fused buffer"
size=$(stat -c %s "$WORK/fused.bin")
[ "$size" -eq $((535818 * 4)) ] || fail "--dump-grads wrote $size bytes; expected 535818 float32"
cmp -s "$WORK/fused.bin" "$WORK/tensor.bin" || fail "the first local gradient depends on --per-tensor"
python3 - "$WORK/fused.bin" <<'PY'
import math, struct, sys
data = open(sys.argv[1], "rb").read()
g = struct.unpack(f"<{len(data) // 4}f", data)
if not all(math.isfinite(x) for x in g):
    sys.exit("FAIL: non-finite gradient values")
# b3 (the last 10 floats) is the mean of softmax - onehot: it sums to zero.
if sum(g[-10:]) > 1e-5 or not any(g):
    sys.exit(f"FAIL: b3 gradient sums to {sum(g[-10:])} or all zero")
print(f"ok: {len(g)} finite floats, |g|max = {max(map(abs, g)):.4g}")
PY
