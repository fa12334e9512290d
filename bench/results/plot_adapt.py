#!/usr/bin/python3
"""plot_adapt.py — tables and figures of README's "Adaptive layer" results.

    bench/results/plot_adapt.py RESULTS_DIR [DOCS_DIR]

Reads what bench/results/run-adapt.sh wrote into RESULTS_DIR (NAME.train.json,
NAME.stats.json with the library's per-call timeline, NAME.cmd, ab-*.ab.json)
and writes into DOCS_DIR (default docs/results/adapt):
  summary.json      every number of the tables, derived here from the JSON files
  gct.png           Exp-Golomb and fixed-length bits per element over training,
                    eg without and with GCT, and GCT's lambda
  edgc.png          EDGC's chosen ratio (topk) and rank (powersgd) over training,
                    with the agreed entropy
  variance.png      the variance method's ratio and mean bit width over training
  auto.png          GCMPI_RATIO=auto: chosen ratio and time per exchange on three links
  accuracy_bytes.png  final accuracy against bits sent per element, every run
  data/             the per-run JSON files and commands
Prints the Markdown tables to stdout. Needs matplotlib (/usr/bin/python3).
"""

import glob
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from plot import copy_run_data, fmt, fresh_data_dir, load, summarize  # noqa: E402

# (run, what, link) in table order; a missing run is left out.
TABLE = [
    ("gct-baseline", "baseline (fp32, no library)", "shm"),
    ("gct-eg", "eg + EF", "shm"),
    ("gct-eg-gct", "eg + EF, GCMPI_ADAPT=gct (defaults)", "shm"),
    ("gct-eg-gct-strong", "eg + EF, GCMPI_ADAPT=gct, lambda 1e-3, eps 1e-2", "shm"),
    ("gct-eg-n8", "eg + EF, GCMPI_EG_N=8", "shm"),
    ("gct-eg-gct-n8", "eg + EF, GCMPI_EG_N=8, GCMPI_ADAPT=gct (defaults)", "shm"),
    ("edgc-topk-fixed", "topk 0.01 + EF", "shm"),
    ("edgc-topk", "topk 0.01 + EF, GCMPI_ADAPT=edgc", "shm"),
    ("edgc-topk-samebytes", "topk at EDGC's mean ratio (same bytes)", "shm"),
    ("edgc-powersgd-fixed", "powersgd rank 4 + EF", "shm"),
    ("edgc-powersgd", "powersgd rank 4 + EF, GCMPI_ADAPT=edgc", "shm"),
    ("edgc-powersgd-samebytes", "powersgd at EDGC's mean rank", "shm"),
    ("lr0.01-baseline", "baseline at lr 0.01", "shm"),
    ("edgc-powersgd16-lr0.01-fixed", "powersgd rank 16 + EF, lr 0.01", "shm"),
    ("edgc-powersgd16-lr0.01", "powersgd rank 16 + EF, lr 0.01, GCMPI_ADAPT=edgc", "shm"),
    ("var-topk", "topk 0.01 + EF", "100mbit"),
    ("var-qsgd4", "qsgd 4 bits", "100mbit"),
    ("var-topkq4", "topkq 0.01, 4-bit values + EF", "100mbit"),
    ("var-topkq", "topkq 0.01 + EF, GCMPI_ADAPT=variance", "100mbit"),
    ("var-topkq4-r0.1", "topkq 0.1, 4-bit values + EF", "100mbit"),
    ("var-topkq-r0.1", "topkq 0.1 + EF, GCMPI_ADAPT=variance", "100mbit"),
]


def timeline(stats, key):
    """(calls, values) of one field of the allreduce timeline, NaN/None skipped."""
    xs, ys = [], []
    if not stats:
        return xs, ys
    for t in stats.get("timelines", []):
        if t.get("collective") != "allreduce":
            continue
        for p in t["points"]:
            v = p.get(key)
            if v is None or (isinstance(v, float) and math.isnan(v)):
                continue
            xs.append(p["call"] + p["calls"] / 2)
            ys.append(v)
    return xs, ys


def weighted_mean(stats, key, from_call=0):
    """Mean of a timeline field over the calls numbered from from_call on."""
    if not stats:
        return None
    num = den = 0.0
    for t in stats.get("timelines", []):
        if t.get("collective") != "allreduce":
            continue
        for p in t["points"]:
            v = p.get(key)
            if v is None or (isinstance(v, float) and math.isnan(v)) or p["call"] < from_call:
                continue
            num += v * p["calls"]
            den += p["calls"]
    return num / den if den else None


def last_call(stats):
    return max((p["call"] + p["calls"] - 1 for t in (stats or {}).get("timelines", [])
                for p in t["points"]), default=0)


def stats_of(out_dir, name):
    return load(os.path.join(out_dir, name + ".stats.json"))


def main_table(out_dir, runs):
    base = runs.get("gct-baseline")
    lines = ["| run | link | final accuracy | vs baseline (points) | bits sent / element "
             "| less traffic than fp32 | median epoch s |",
             "|---|---|---|---|---|---|---|"]
    rows = []
    for name, what, link in TABLE:
        s = runs.get(name)
        if not s:
            continue
        d = (s["final_accuracy"] - base["final_accuracy"]) * 100 if base else None
        red = 32.0 / s["bits_sent_per_element"] if s.get("bits_sent_per_element") else None
        rows.append({"run": name, "what": what, "link": link,
                     "final_accuracy": s["final_accuracy"], "delta_points": d,
                     "bits_sent_per_element": s["bits_sent_per_element"],
                     "reduction_vs_fp32": red,
                     "epoch_seconds_median": s["epoch_seconds_median"],
                     "epochs": s["epochs"], "vars": s["vars"]})
        lines.append(f"| {what} | {link} | {s['final_accuracy']:.4f} | {fmt(d, '+.2f')} | "
                     f"{s['bits_sent_per_element']:.3f} | {fmt(red, '.1f')}x | "
                     f"{s['epoch_seconds_median']:.2f} |")
    return lines, rows


def gct_lines(out_dir, runs):
    base = runs.get("gct-baseline")
    out, lines = [], ["| run | EG bits / element | fixed-length bits / element | "
                      "EG saving vs fixed length | final accuracy | vs baseline |",
                      "|---|---|---|---|---|---|"]
    for name in ("gct-eg", "gct-eg-gct", "gct-eg-gct-strong", "gct-eg-n8", "gct-eg-gct-n8"):
        s = runs.get(name)
        if not s or not s.get("eg_fl_bits_per_element"):
            continue
        eg, fl = s["eg_code_bits_per_element"], s["eg_fl_bits_per_element"]
        d = (s["final_accuracy"] - base["final_accuracy"]) * 100 if base else None
        out.append({"run": name, "eg_bits": eg, "fl_bits": fl, "saving": 1 - eg / fl,
                    "final_accuracy": s["final_accuracy"], "delta_points": d,
                    "goal_saving_ge_70pct": 1 - eg / fl >= 0.70,
                    "goal_within_0.5_points": d is not None and d >= -0.5})
        lines.append(f"| {name} | {eg:.3f} | {fl:.3f} | {100 * (1 - eg / fl):.1f}% | "
                     f"{s['final_accuracy']:.4f} | {fmt(d, '+.2f')} |")
    return lines, out


def edgc_lines(out_dir, runs):
    lines, out = [], []
    for codec, key in (("topk", "ratio"), ("powersgd", "rank"), ("powersgd16-lr0.01", "rank")):
        e, fixed, same = (runs.get(f"edgc-{codec}"), runs.get(f"edgc-{codec}-fixed"),
                          runs.get(f"edgc-{codec}-samebytes"))
        if not e:
            continue
        mean = weighted_mean(stats_of(out_dir, f"edgc-{codec}"), key)
        row = {"codec": codec, "setting": key, "edgc_mean_setting": mean,
               "edgc_accuracy": e["final_accuracy"], "edgc_bits": e["bits_sent_per_element"]}
        if fixed:
            row.update({"fixed_accuracy": fixed["final_accuracy"],
                        "fixed_bits": fixed["bits_sent_per_element"],
                        "bytes_edgc_over_fixed": e["bits_sent_per_element"]
                        / fixed["bits_sent_per_element"]})
        if same:
            row.update({"samebytes_accuracy": same["final_accuracy"],
                        "samebytes_bits": same["bits_sent_per_element"]})
        out.append(row)
        lines.append(
            f"- {codec}: EDGC mean {key} {fmt(mean, '.4g')}, accuracy "
            f"{e['final_accuracy']:.4f} at {e['bits_sent_per_element']:.3f} bits/element; "
            + (f"fixed configured setting {fixed['final_accuracy']:.4f} at "
               f"{fixed['bits_sent_per_element']:.3f} bits/element "
               f"(EDGC sends {row['bytes_edgc_over_fixed']:.2f}x its bytes); " if fixed else "")
            + (f"fixed setting with EDGC's bytes {same['final_accuracy']:.4f} at "
               f"{same['bits_sent_per_element']:.3f} bits/element" if same else ""))
    return lines, out


def auto_lines(out_dir, runs):
    # The ratio starts at GCMPI_RATIO_MAX and settles within ~10 calls:
    # "settled" is the second half of the run's calls.
    lines = ["| link | auto: settled ratio | auto: settled comm ms / call | auto: mean ratio, "
             "all calls | auto: epoch s | fixed 0.01: comm ms / call | fixed 0.01: epoch s |",
             "|---|---|---|---|---|---|---|"]
    out = []
    for link in ("10mbit", "100mbit", "1gbit"):
        a, f = runs.get(f"auto-{link}"), runs.get(f"auto-fixed-{link}")
        if not a:
            continue
        sa, sf = stats_of(out_dir, f"auto-{link}"), stats_of(out_dir, f"auto-fixed-{link}")
        half = last_call(sa) // 2 + 1
        row = {"link": link, "auto_mean_ratio": weighted_mean(sa, "ratio"),
               "auto_settled_ratio": weighted_mean(sa, "ratio", half),
               "auto_settled_comm_ms": weighted_mean(sa, "comm_ms", half),
               "auto_comm_ms": weighted_mean(sa, "comm_ms"),
               "auto_epoch_s": a["epoch_seconds_median"],
               "fixed_comm_ms": weighted_mean(sf, "comm_ms") if f else None,
               "fixed_epoch_s": f["epoch_seconds_median"] if f else None}
        out.append(row)
        lines.append(f"| {link} | {fmt(row['auto_settled_ratio'], '.4g')} | "
                     f"{fmt(row['auto_settled_comm_ms'], '.1f')} | "
                     f"{fmt(row['auto_mean_ratio'], '.4g')} | {row['auto_epoch_s']:.2f} | "
                     f"{fmt(row['fixed_comm_ms'], '.1f')} | {fmt(row['fixed_epoch_s'], '.2f')} |")
    return lines, out


def ab_lines(out_dir):
    lines = ["| method | A (no library) wall s | B wall s | B/A | A accuracy | B accuracy "
             "| B compression |", "|---|---|---|---|---|---|---|"]
    out = []
    for path in sorted(glob.glob(os.path.join(out_dir, "ab-*.ab.json"))):
        doc = load(path)
        if not doc or "summary" not in doc:
            continue
        s = doc["summary"]
        name = os.path.basename(path)[3:-len(".ab.json")]
        out.append({"method": name, **s})
        lines.append(f"| {name} | {fmt(s['A']['wall_median_s'], '.1f')} | "
                     f"{fmt(s['B']['wall_median_s'], '.1f')} | "
                     f"{fmt(s['wall_ratio_b_over_a'], '.3f')} | "
                     f"{fmt(s['A']['metric_median'], '.4f')} | "
                     f"{fmt(s['B']['metric_median'], '.4f')} | "
                     f"{fmt(s['B'].get('compression'), '.1f')}x |")
    return lines, out


def plot_series(ax, out_dir, name, key, label, **kw):
    xs, ys = timeline(stats_of(out_dir, name), key)
    if xs:
        ax.plot(xs, ys, label=label, **kw)
    return bool(xs)


def figures(out_dir, docs, budget):
    fig, ax = plt.subplots(figsize=(7, 4))
    plot_series(ax, out_dir, "gct-eg", "eg_bits", "eg: Exp-Golomb bits")
    plot_series(ax, out_dir, "gct-eg", "fl_bits", "eg: fixed-length bits", linestyle="--")
    plot_series(ax, out_dir, "gct-eg-gct", "eg_bits", "eg + GCT: Exp-Golomb bits")
    plot_series(ax, out_dir, "gct-eg-gct", "fl_bits", "eg + GCT: fixed-length bits",
                linestyle="--")
    plot_series(ax, out_dir, "gct-eg-gct-strong", "eg_bits", "eg + strong GCT: Exp-Golomb bits")
    ax.set_xlabel("allreduce call (training step)")
    ax.set_ylabel("bits per element")
    ax2 = ax.twinx()
    plot_series(ax2, out_dir, "gct-eg-gct", "lambda", "GCT lambda", color="grey", linestyle=":")
    ax2.set_ylabel("lambda")
    ax.legend(fontsize=7, loc="upper right")
    ax.set_title("GCT: code length over training (4 ranks)")
    fig.tight_layout()
    fig.savefig(os.path.join(docs, "gct.png"), dpi=110)
    plt.close(fig)

    fig, axs = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (name, key, label) in zip(axs, (("edgc-topk", "ratio", "topk ratio"),
                                            ("edgc-powersgd", "rank", "powersgd rank"))):
        plot_series(ax, out_dir, name, key, label)
        ax.set_xlabel("allreduce call")
        ax.set_ylabel(label)
        ax2 = ax.twinx()
        plot_series(ax2, out_dir, name, "entropy", "agreed entropy", color="grey",
                    linestyle=":")
        ax2.set_ylabel("entropy (bits)")
        ax.set_title(f"EDGC: {label} chosen per window")
    fig.tight_layout()
    fig.savefig(os.path.join(docs, "edgc.png"), dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    plot_series(ax, out_dir, "var-topkq", "ratio", "ratio (k / n)")
    ax.set_xlabel("allreduce call")
    ax.set_ylabel("ratio")
    ax2 = ax.twinx()
    plot_series(ax2, out_dir, "var-topkq", "bits", "mean bit width", color="tab:red")
    plot_series(ax2, out_dir, "var-topkq", "sent_bits", "bits sent per element",
                color="tab:green")
    ax2.set_ylabel("bits")
    ax.legend(loc="upper left", fontsize=7)
    ax2.legend(loc="upper right", fontsize=7)
    ax.set_title("variance method: adaptive k and per-bucket width (100 Mbit/s)")
    fig.tight_layout()
    fig.savefig(os.path.join(docs, "variance.png"), dpi=110)
    plt.close(fig)

    fig, axs = plt.subplots(1, 2, figsize=(10, 4))
    for link in ("10mbit", "100mbit", "1gbit"):
        plot_series(axs[0], out_dir, f"auto-{link}", "ratio", link)
        plot_series(axs[1], out_dir, f"auto-{link}", "comm_ms", link)
    axs[0].set_yscale("log")
    axs[1].set_yscale("log")
    axs[0].set_ylabel("ratio chosen")
    axs[1].set_ylabel("communication ms per call")
    if budget:
        axs[1].axhline(budget * 1000, color="grey", linestyle=":", label="budget")
    for ax in axs:
        ax.set_xlabel("allreduce call")
        ax.legend(fontsize=7)
    axs[0].set_title("GCMPI_RATIO=auto")
    fig.tight_layout()
    fig.savefig(os.path.join(docs, "auto.png"), dpi=110)
    plt.close(fig)


def plot_accuracy_bytes(rows, docs):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in rows:
        ax.scatter(r["bits_sent_per_element"], r["final_accuracy"])
        ax.annotate(r["run"], (r["bits_sent_per_element"], r["final_accuracy"]), fontsize=6)
    ax.set_xscale("log")
    ax.set_xlabel("bits sent per gradient element (log)")
    ax.set_ylabel("final test accuracy")
    ax.set_title("adaptive methods beside fixed settings (4 ranks, 10 epochs)")
    fig.tight_layout()
    fig.savefig(os.path.join(docs, "accuracy_bytes.png"), dpi=110)
    plt.close(fig)


def budget_of(out_dir):
    st = stats_of(out_dir, "auto-100mbit")
    try:
        return float(st["config"]["GCMPI_RATIO_BUDGET"])
    except (TypeError, KeyError, ValueError):
        return None


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    out_dir = argv[1]
    docs = argv[2] if len(argv) > 2 else "docs/results/adapt"
    fresh_data_dir(docs)

    runs = {}
    for path in sorted(glob.glob(os.path.join(out_dir, "*.train.json"))):
        name = os.path.basename(path)[: -len(".train.json")]
        s = summarize(out_dir, name)
        if s:
            runs[name] = s
    t_lines, t_rows = main_table(out_dir, runs)
    g_lines, g_rows = gct_lines(out_dir, runs)
    e_lines, e_rows = edgc_lines(out_dir, runs)
    a_lines, a_rows = auto_lines(out_dir, runs)
    ab_l, ab_rows = ab_lines(out_dir)
    budget = budget_of(out_dir)
    figures(out_dir, docs, budget)
    if t_rows:
        plot_accuracy_bytes(t_rows, docs)
    summary = {"table": t_rows, "gct": g_rows, "edgc": e_rows, "auto": a_rows,
               "auto_budget_s": budget, "ab": ab_rows,
               "runs": {k: {kk: vv for kk, vv in v.items() if kk != "gcmpi_config"}
                        for k, v in runs.items()}}
    with open(os.path.join(docs, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    copy_run_data(out_dir, docs)

    for block in (t_lines, g_lines, e_lines, a_lines, ab_l):
        print("\n".join(block))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
