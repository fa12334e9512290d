#!/usr/bin/env python3
"""Table of README's "Unchanged application" results, derived from the run
files of `bench/results/run.sh --accuracy-unmodified` (um-NAME-sSEED.*).

    plot_unmodified.py OUT_DIR [DOCS_DIR]

For every run NAME: test accuracy after epoch 3 and epoch 10 (the trainer's
schedule does not depend on the number of epochs: a constant learning rate
and a per-epoch shuffle seeded by (seed, epoch), so epoch 3 of a 10-epoch run
is a 3-epoch run), the mean over the seeds present, its difference to the
baseline's mean in points, whether the targets hold (within 1.0 point at 3
epochs, 0.5 at 10), and the bytes each rank handed to MPI per step (warm-up
included: the statistics count every call). Prints Markdown and writes
DOCS_DIR/unmodified.json and unmodified.csv (default docs/results), and copies
the runs' trainer JSON, statistics JSON and command to DOCS_DIR/data/."""
import csv
import glob
import json
import os
import re
import shutil
import sys

ORDER = ["baseline", "fp16", "int8", "qsgd4", "sign", "onebit", "topk", "dgc", "topkq-var",
         "eg", "powersgd"]
TARGET = {3: 1.0, 10: 0.5}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def grad_row(stats):
    rows = [r for r in (stats or {}).get("collectives", []) if r.get("collective") == "allreduce"]
    rows.sort(key=lambda r: -r.get("bytes_offered", 0))
    return rows[0] if rows else None


def gcmpi_vars(out_dir, run):
    try:
        with open(os.path.join(out_dir, run + ".cmd")) as f:
            cmd = f.read()
    except OSError:
        return ""
    return " ".join(v for v in re.findall(r"(GCMPI_[A-Z_]+=\S+)", cmd) if not v.startswith("GCMPI_STATS"))


def collect(out_dir):
    runs = {}
    for path in sorted(glob.glob(os.path.join(out_dir, "um-*-s*.train.json"))):
        run = os.path.basename(path)[: -len(".train.json")]
        m = re.match(r"um-(.+)-s(\d+)$", run)
        train = load(path)
        if not m or not train or not train.get("epochs"):
            continue
        acc = {e["epoch"]: e["accuracy"] for e in train["epochs"]}
        if 10 not in acc:
            continue  # unfinished
        name, seed = m.group(1), int(m.group(2))
        row = grad_row(load(os.path.join(out_dir, run + ".stats.json")))
        per_step = None
        if row and row.get("calls_compressed"):
            per_step = row["bytes_sent"] / row["ranks"] / row["calls_compressed"]
        elif name == "baseline":
            per_step = train["parameters"] * 4.0
        r = runs.setdefault(name, {"name": name, "vars": gcmpi_vars(out_dir, run), "seeds": {}})
        r["seeds"][seed] = {"acc3": acc.get(3), "acc10": acc[10], "bytes_per_rank_step": per_step,
                            "nonfinite_inputs": row.get("nonfinite_inputs", 0) if row else 0}
        r["fp32_bytes"] = train["parameters"] * 4.0
    return runs


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    out_dir, docs = argv[1], argv[2] if len(argv) > 2 else "docs/results"
    runs = collect(out_dir)
    base = runs.get("baseline")
    rows = []
    for name in ORDER + sorted(set(runs) - set(ORDER)):
        r = runs.get(name)
        if not r:
            continue
        s = r["seeds"]
        row = {"run": name, "gcmpi": r["vars"], "seeds": ",".join(str(k) for k in sorted(s))}
        for ep in (3, 10):
            a = mean(v["acc%d" % ep] for v in s.values())
            row["acc%d" % ep] = a
            d = None
            if base and name != "baseline" and a is not None:
                # the baseline over the same seeds: a seed's own spread is ~0.2 pt
                common = [k for k in s if k in base["seeds"]] or list(base["seeds"])
                b = mean(base["seeds"][k]["acc%d" % ep] for k in common)
                d = (a - b) * 100
            row["delta%d" % ep] = d
            row["target%d" % ep] = None if d is None else d >= -TARGET[ep]
        bps = mean(v["bytes_per_rank_step"] for v in s.values())
        row["bytes_per_rank_step"] = bps
        row["fp32_over_sent"] = r["fp32_bytes"] / bps if bps else None
        row["seed_accs10"] = [s[k]["acc10"] for k in sorted(s)]
        rows.append(row)

    def f(v, spec):
        return "—" if v is None else format(v, spec)

    def t(v):
        return "—" if v is None else ("met" if v else "**missed**")

    print("| run | GCMPI_* (and GCMPI_MOMENTUM=0.9 except baseline) | seeds | acc. epoch 3 | Δ3 (pts) "
          "| ≤1.0 | acc. epoch 10 | Δ10 (pts) | ≤0.5 | kB to MPI / rank / step | fp32 / that |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        vars_ = r["gcmpi"].replace(" GCMPI_MOMENTUM=0.9", "").replace("GCMPI_MOMENTUM=0.9", "")
        print(f"| {r['run']} | {('`' + vars_ + '`') if vars_ else '(no library)'} | {r['seeds']} "
              f"| {f(r['acc3'], '.4f')} | {f(r['delta3'], '+.2f')} | {t(r['target3'])} "
              f"| {f(r['acc10'], '.4f')} | {f(r['delta10'], '+.2f')} | {t(r['target10'])} "
              f"| {f(r['bytes_per_rank_step'] and r['bytes_per_rank_step'] / 1000, ',.1f')} "
              f"| {f(r['fp32_over_sent'], '.1f')}x |")
    os.makedirs(os.path.join(docs, "data"), exist_ok=True)
    for path in glob.glob(os.path.join(out_dir, "um-*")):
        if path.endswith((".train.json", ".stats.json", ".cmd")):
            shutil.copy(path, os.path.join(docs, "data", os.path.basename(path)))
    with open(os.path.join(docs, "unmodified.json"), "w") as fh:
        json.dump(rows, fh, indent=1)
    with open(os.path.join(docs, "unmodified.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=[k for k in rows[0] if k != "seed_accs10"] if rows else [],
                           extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
