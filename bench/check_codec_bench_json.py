#!/usr/bin/env python3
"""Run gcmpi-codec-bench with --json and check what it prints.

    check_codec_bench_json.py BENCH [BENCH ARGS...]

Passes when the bench exits 0 and prints exactly one JSON array with one
object per codec carrying the documented keys with sane values; with
--momentum M, every row says it ran with momentum M and error feedback.
"""
import json
import math
import subprocess
import sys

REQUIRED = ("codec", "params", "ratio", "encode_gbps", "decode_gbps", "memcpy_gbps",
            "rel_l2_error", "bits_per_element", "fl_bits_per_element",
            "encode_vs_memcpy", "decode_vs_memcpy")
POSITIVE = ("ratio", "encode_gbps", "decode_gbps", "memcpy_gbps", "bits_per_element",
            "encode_vs_memcpy", "decode_vs_memcpy")


def fail(msg):
    print("check_codec_bench_json: " + msg, file=sys.stderr)
    sys.exit(1)


def momentum_asked(args):
    """The --momentum the bench was given (0: none)."""
    for i, a in enumerate(args):
        if a == "--momentum" and i + 1 < len(args):
            return float(args[i + 1])
        if a.startswith("--momentum="):
            return float(a.split("=", 1)[1])
    return 0.0


def main():
    if len(sys.argv) < 2:
        fail("usage: check_codec_bench_json.py BENCH [ARGS...]")
    run = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, text=True, timeout=120)
    if run.returncode != 0:
        fail("bench exited with %d" % run.returncode)
    try:
        rows = json.loads(run.stdout)
    except json.JSONDecodeError as e:
        fail("output is not one JSON document: %s" % e)
    if not isinstance(rows, list) or not rows:
        fail("expected a non-empty JSON array")
    names = [r.get("codec") for r in rows]
    if len(set(names)) != len(names):
        fail("codecs repeated: %s" % names)
    for r in rows:
        name = r.get("codec")
        missing = [k for k in REQUIRED if k not in r]
        if missing:
            fail("%s: missing keys %s" % (name, missing))
        if not isinstance(r["params"], dict):
            fail("%s: params is not an object" % name)
        for k in POSITIVE:
            v = r[k]
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                fail("%s: %s=%r is not a positive number" % (name, k, v))
        err = r["rel_l2_error"]
        if not isinstance(err, (int, float)) or not math.isfinite(err) or err < 0:
            fail("%s: rel_l2_error=%r" % (name, err))
        if (r["fl_bits_per_element"] is None) == (name == "eg"):
            fail("%s: fl_bits_per_element must be set for eg only, got %r"
                 % (name, r["fl_bits_per_element"]))
        if name == "none" and err != 0:
            fail("none is lossless but rel_l2_error=%r" % err)
    momentum = momentum_asked(sys.argv[2:])
    for r in rows:
        got = r["params"].get("momentum")
        ef_ok = momentum == 0 or r["params"].get("ef") is True
        if got is None or abs(got - momentum) > 1e-6 or not ef_ok:
            fail("%s: params %r, expected momentum %g%s" % (r["codec"], r["params"], momentum,
                                                            " with ef" if momentum > 0 else ""))
    print("check_codec_bench_json: %d codecs: %s" % (len(rows), " ".join(names)))


if __name__ == "__main__":
    main()
