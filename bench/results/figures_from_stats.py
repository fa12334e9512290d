#!/usr/bin/env python3
"""figures_from_stats.py — link and codec figures measured by GCMPI_ALGO=auto,
for gcmpi-scale-model --figures.

    bench/results/figures_from_stats.py STATS.json [COMM] > figures.txt
    build/bench/gcmpi-scale-model --figures figures.txt --gbits G ...

Reads the "auto_models" of a GCMPI_STATS JSON report (the agreed figures of
each communicator's cost model, as link latencies and rates and codec
rates) and prints the first one (or COMM's) as "name value" lines. The
measured rate between nodes goes to stderr: pass it (or others) with
--gbits, which the figures file does not set.
"""
import json
import sys

FIGURES = ["alpha-inter", "alpha-intra", "gbytes-intra", "encode-gbs", "decode-gbs",
           "sets-gbs", "payload-ratio", "density", "native-ratio", "column-share"]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    models = json.load(open(sys.argv[1])).get("auto_models", [])
    if len(sys.argv) > 2:
        models = [m for m in models if m["comm"] == sys.argv[2]]
    if not models:
        sys.exit("figures_from_stats.py: no auto model in the report (GCMPI_ALGO=auto?)")
    m = models[0]
    for name in FIGURES:
        if name in ("alpha-intra", "gbytes-intra") and m["node_size"] < 2:
            continue  # one rank per node: nothing measured inside a node
        if m[name] > 0 or name in ("density", "native-ratio"):
            print(name, m[name])
    print(f"{m['comm']}: {m['ranks']} ranks, {m['nodes']} nodes; measured link "
          f"{m['gbits']:.3g} Gbit/s per rank", file=sys.stderr)


if __name__ == "__main__":
    main()
