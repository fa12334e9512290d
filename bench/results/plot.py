#!/usr/bin/python3
"""plot.py — tables and figures of README's "Results" section.

    bench/results/plot.py RESULTS_DIR [DOCS_DIR]

Reads what bench/results/run.sh wrote into RESULTS_DIR (NAME.train.json from
gcmpi-train --json, NAME.stats.json from GCMPI_STATS, NAME.cmd) and writes
into DOCS_DIR (default docs/results):
  accuracy.csv, speed.csv, summary.json   the tables (every number derived
                                          here from the JSON files, nothing typed in)
  accuracy.png                            test accuracy against wall time (left) and
                                          against bytes sent per rank (right)
  epoch_time.png                          seconds per epoch, 1 Gbit/s and shared memory
  data/                                   the per-run JSON files and commands (small)
Prints the Markdown tables to stdout. Needs matplotlib (Agg), hence
/usr/bin/python3 on Debian.
"""

import csv
import glob
import json
import math
import os
import re
import shutil
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

TARGET = 0.85
ORDER = ["baseline", "fp16", "int8", "qsgd4", "sign", "eg", "topk", "topk-mc", "dgc", "dgc-mc"]
LABEL = {
    "baseline": "baseline (fp32, no library)",
    "fp16": "fp16",
    "int8": "int8",
    "qsgd4": "qsgd 4 bits (no EF)",
    "sign": "sign + EF",
    "eg": "eg (Exp-Golomb) + EF",
    "topk": "topk 0.01 + EF",
    "dgc": "dgc 0.001 + EF",
    "dgc-mc": "dgc 0.001 + momentum correction",
    "topk-mc": "topk 0.01 + momentum correction",
}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def grad_row(stats):
    """The statistics row of the gradient allreduce (MPI_COMM_WORLD)."""
    if not stats:
        return None
    rows = [r for r in stats.get("collectives", []) if r.get("collective") == "allreduce"]
    rows.sort(key=lambda r: -r.get("bytes_offered", 0))
    return rows[0] if rows else None


def summarize(out_dir, name):
    train = load(os.path.join(out_dir, name + ".train.json"))
    if not train or not train.get("epochs"):
        return None
    stats = load(os.path.join(out_dir, name + ".stats.json"))
    epochs = train["epochs"]
    ranks = train["ranks"]
    params = train["parameters"]
    steps = train["steps_per_epoch"]
    secs = [e["seconds"] for e in epochs]
    reach = next((e for e in epochs if e["accuracy"] >= TARGET), None)
    try:
        with open(os.path.join(out_dir, name + ".cmd")) as f:
            cmd = f.read().strip()
    except OSError:
        cmd = ""
    vars_ = " ".join(v for v in re.findall(r"GCMPI_[A-Z0-9_]+=\S+", cmd)
                     if not v.startswith("GCMPI_STATS="))
    s = {
        "name": name,
        "command": cmd,
        "vars": vars_,
        "ranks": ranks,
        "epochs": len(epochs),
        "complete": train.get("complete", False),
        "steps_per_epoch": steps,
        "config": train["config"],
        "final_accuracy": epochs[-1]["accuracy"],
        "best_accuracy": max(e["accuracy"] for e in epochs),
        "final_loss": epochs[-1]["loss"],
        "total_seconds": epochs[-1]["total_seconds"],
        "epoch_seconds_median": statistics.median(secs),
        "epoch_seconds_mean": statistics.fmean(secs),
        "epoch_seconds": secs,
        "time_to_target_s": reach["total_seconds"] if reach else None,
        "epoch_to_target": reach["epoch"] if reach else None,
        "accuracy": [e["accuracy"] for e in epochs],
        "total_seconds_per_epoch": [e["total_seconds"] for e in epochs],
        "fp32_bytes_per_step": params * 4,
    }
    row = grad_row(stats)
    if row:
        calls = row["calls_compressed"] or 1
        per_rank_step = row["bytes_sent"] / row["ranks"] / calls
        s.update({
            "library": True,
            "codec": row["codec"],
            "gcmpi_config": stats.get("config"),
            "calls_compressed": row["calls_compressed"],
            "calls_passed": row["calls_passed"],
            "bytes_sent_per_rank_per_step": per_rank_step,
            "offered_over_sent": row["ratio"],
            "bits_sent_per_element": 8 * per_rank_step / params,
            "ef_created": row["ef_created"], "ef_reused": row["ef_reused"],
            "ef_missed": row["ef_missed"], "ef_evicted": row["ef_evicted"],
            "encode_s_per_rank": row["encode_s"], "decode_s_per_rank": row["decode_s"],
            "comm_s_per_rank": row["comm_s"],
            "eg_code_bits_per_element": row["eg_code_bits_per_element"],
            "eg_fl_bits_per_element": row["eg_fl_bits_per_element"],
            "warnings": stats.get("warnings", []),
        })
    else:
        # Without the library MPI sums float32: 4 bytes per element offered.
        s.update({"library": False, "codec": "none (no library)",
                  "bytes_sent_per_rank_per_step": params * 4.0, "offered_over_sent": 1.0,
                  "bits_sent_per_element": 32.0})
    return s


def fresh_data_dir(docs):
    """DOCS/data mirrors the results directory: stale copies of older runs go."""
    shutil.rmtree(os.path.join(docs, "data"), ignore_errors=True)
    os.makedirs(os.path.join(docs, "data"))


def copy_run_data(out_dir, docs):
    """The small per-run files (JSON, commands) into DOCS/data."""
    for path in glob.glob(os.path.join(out_dir, "*.json")) + glob.glob(
            os.path.join(out_dir, "*.cmd")):
        shutil.copy(path, os.path.join(docs, "data", os.path.basename(path)))


def fmt(v, spec, none="—"):
    return none if v is None else format(v, spec)


def accuracy_table(runs):
    base = runs.get("baseline")
    lines = [
        "| run | final test acc. | Δ vs baseline (points) | time to 85% (s) | s/epoch (median) "
        "| bytes handed to MPI / rank / step | fp32 bytes / that | EF reused / missed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = []
    for key in ORDER:
        s = runs.get(key)
        if not s:
            continue
        delta = (s["final_accuracy"] - base["final_accuracy"]) * 100 if base else None
        to85 = s["time_to_target_s"]
        to85s = f"{to85:.0f} (epoch {s['epoch_to_target']})" if to85 is not None else "not reached"
        ef = (f"{s['ef_reused']} / {s['ef_missed']}" if s.get("library") and s["ef_created"]
              else ("off" if s.get("library") else "—"))
        bps = s["bytes_sent_per_rank_per_step"]
        lines.append(
            f"| {LABEL.get(key, key)} | {s['final_accuracy']:.4f} | "
            f"{'—' if key == 'baseline' else fmt(delta, '+.2f')} | {to85s} | "
            f"{s['epoch_seconds_median']:.1f} | {bps / 1e3:,.1f} kB | "
            f"{s['fp32_bytes_per_step'] / bps:.1f}x | {ef} |")
        rows.append({
            "run": key, "final_accuracy": s["final_accuracy"], "delta_points": delta,
            "best_accuracy": s["best_accuracy"], "time_to_85_s": to85,
            "epoch_to_85": s["epoch_to_target"], "epoch_seconds_median": s["epoch_seconds_median"],
            "total_seconds": s["total_seconds"], "bytes_sent_per_rank_per_step": bps,
            "reduction_vs_fp32": s["fp32_bytes_per_step"] / bps,
            "bits_sent_per_element": s["bits_sent_per_element"],
            "ef_created": s.get("ef_created"), "ef_reused": s.get("ef_reused"),
            "ef_missed": s.get("ef_missed"),
            "encode_s_per_rank": s.get("encode_s_per_rank"),
            "decode_s_per_rank": s.get("decode_s_per_rank"),
            "comm_s_per_rank": s.get("comm_s_per_rank"),
            "eg_code_bits_per_element": s.get("eg_code_bits_per_element"),
            "eg_fl_bits_per_element": s.get("eg_fl_bits_per_element"),
            "epochs": s["epochs"], "ranks": s["ranks"],
        })
    return lines, rows


def eg_lines(runs):
    s = runs.get("eg")
    if not s or not s.get("eg_code_bits_per_element"):
        return [], None
    code, fl = s["eg_code_bits_per_element"], s["eg_fl_bits_per_element"]
    base = runs.get("baseline")
    d = {
        "code_bits_per_element": code, "fl_bits_per_element": fl,
        "saving_vs_fp32": 1 - code / 32, "saving_vs_fixed_length": 1 - code / fl if fl else None,
        "payload_bits_per_element_sent": s["bits_sent_per_element"],
        "final_accuracy": s["final_accuracy"],
        "delta_points": (s["final_accuracy"] - base["final_accuracy"]) * 100 if base else None,
    }
    lines = [
        "| eg | bits / element | saving |",
        "|---|---|---|",
        f"| Exp-Golomb code (eg_code_bits_per_element) | {code:.3f} | "
        f"{d['saving_vs_fp32'] * 100:.1f}% vs 32-bit floats |",
        f"| fixed-length code of the same integers (eg_fl_bits_per_element) | {fl:.3f} | "
        f"{fmt(d['saving_vs_fixed_length'] and d['saving_vs_fixed_length'] * 100, '.1f')}% "
        "saved by Exp-Golomb |",
        f"| bytes the library handed to MPI, per element (incl. headers, rsag's two phases) | "
        f"{s['bits_sent_per_element']:.3f} | {(1 - s['bits_sent_per_element'] / 32) * 100:.1f}% "
        "vs 32-bit floats |",
    ]
    return lines, d


def speed_table(out_dir, runs_acc):
    """Epoch time per (ranks, link, run), pooled over the repeated rounds
    speed-npN-LINK-RUN-rR (and the accuracy runs, same configuration).
    Interference from other work only slows an epoch, so the fastest epoch
    is the headline; the median is kept too."""
    pool = {}
    for path in sorted(glob.glob(os.path.join(out_dir, "speed-*.train.json"))):
        name = os.path.basename(path)[: -len(".train.json")]
        parts = name.split("-")
        if len(parts) != 5 or not parts[4].startswith("r"):
            continue
        s = summarize(out_dir, name)
        if s:
            pool.setdefault((int(parts[1][2:]), parts[2], parts[3]), []).append(s)
    for key in ("baseline", "fp16", "topk"):
        s = runs_acc.get(key)
        if s:
            pool.setdefault((s["ranks"], "1gbit", key), []).append(s)
    rows = []
    for (np_, link, run), ss in sorted(pool.items()):
        secs = [x for s in ss for x in s["epoch_seconds"]]
        enc = [s["encode_s_per_rank"] / (s["steps_per_epoch"] * s["epochs"])
               for s in ss if s.get("encode_s_per_rank") is not None]
        comm = [s["comm_s_per_rank"] / (s["steps_per_epoch"] * s["epochs"])
                for s in ss if s.get("comm_s_per_rank") is not None]
        rows.append({"ranks": np_, "link": link, "run": run,
                     "epoch_seconds_min": min(secs), "epoch_seconds_median": statistics.median(secs),
                     "epochs_pooled": len(secs), "runs": len(ss),
                     "steps_per_epoch": ss[0]["steps_per_epoch"],
                     "encode_ms_per_step": 1e3 * min(enc) if enc else None,
                     "comm_ms_per_step": 1e3 * min(comm) if comm else None,
                     "sources": " ".join(s["name"] for s in ss)})
    return rows


def speed_lines(rows):
    def get(np_, link, run):
        for r in rows:
            if r["ranks"] == np_ and r["link"] == link and r["run"] == run:
                return r["epoch_seconds_min"]
        return None

    checks = []
    lines = ["| ranks | baseline 1 Gbit/s | fp16 1 Gbit/s | topk 1 Gbit/s | topk TCP, unshaped "
             "| topk shm | baseline shm | fp16 / topk (target ≥ 1.5) "
             "| topk 1 Gbit/s / topk shm (target ≤ 1.3) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for np_ in sorted({r["ranks"] for r in rows}):
        b, f, t = get(np_, "1gbit", "baseline"), get(np_, "1gbit", "fp16"), get(np_, "1gbit", "topk")
        tt, ts, bs = get(np_, "tcp", "topk"), get(np_, "shm", "topk"), get(np_, "shm", "baseline")
        sp = f / t if f and t else None
        sl = t / ts if t and ts else None
        checks.append({"ranks": np_, "fp16_over_topk": sp, "topk_link_over_shm": sl,
                       "topk_tcp_over_shm": tt / ts if tt and ts else None,
                       "fp16_over_topk_ok": sp is not None and sp >= 1.5,
                       "topk_link_over_shm_ok": sl is not None and sl <= 1.3})
        sec = lambda v: fmt(v, ".2f") + (" s" if v is not None else "")  # noqa: E731
        mul = lambda v: fmt(v, ".2f") + ("x" if v is not None else "")  # noqa: E731
        lines.append(f"| {np_} | {sec(b)} | {sec(f)} | {sec(t)} | {sec(tt)} | {sec(ts)} | "
                     f"{sec(bs)} | {mul(sp)} | {mul(sl)} |")
    return lines, checks


def investigation(out_dir, runs_acc):
    """inv-GROUP-NAME runs, each compared with the baseline of its group
    (same epochs, same optimizer); groups without one use acc-baseline."""
    inv = {}
    for path in sorted(glob.glob(os.path.join(out_dir, "inv-*.train.json"))):
        name = os.path.basename(path)[: -len(".train.json")]
        s = summarize(out_dir, name)
        if s:
            inv[name[len("inv-"):]] = s
    rows = []
    for key, s in inv.items():
        group, _, run = key.rpartition("-") if key.startswith(("e20-", "lr")) else ("", "", key)
        if key.startswith("e20-"):
            group, run = "e20", key[4:]
        base = inv.get(f"{group}-baseline") if group else runs_acc.get("baseline")
        cfg = s["config"]
        rows.append({
            "run": key, "epochs": s["epochs"], "lr": cfg["lr"], "momentum": cfg["momentum"],
            "vars": s["vars"],
            "final_accuracy": s["final_accuracy"], "best_accuracy": s["best_accuracy"],
            "accuracy_at_10": s["accuracy"][9] if len(s["accuracy"]) >= 10 else None,
            "baseline_final_accuracy": base["final_accuracy"] if base else None,
            "delta_points": (s["final_accuracy"] - base["final_accuracy"]) * 100
            if base and run != "baseline" else None,
            "accuracy": s["accuracy"],
        })
    lines = ["| run | GCMPI_* | epochs | lr | trainer momentum | final acc. | acc. at epoch 10 "
             "| its baseline | Δ (points) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['run']} | {r['vars'] or '(no library)'} | {r['epochs']} | {r['lr']:g} | {r['momentum']:g} | "
                     f"{r['final_accuracy']:.4f} | {fmt(r['accuracy_at_10'], '.4f')} | "
                     f"{fmt(r['baseline_final_accuracy'], '.4f')} | "
                     f"{fmt(r['delta_points'], '+.2f')} |")
    return lines, rows


def plot_accuracy(runs, docs):
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 5))
    for key in ORDER:
        s = runs.get(key)
        if not s:
            continue
        style = dict(marker="o", ms=3, lw=1.5 if key != "baseline" else 2.5,
                     color="black" if key == "baseline" else None)
        label = LABEL.get(key, key)
        if s["final_accuracy"] < 0.5:
            label += f" (diverged: {s['final_accuracy']:.2f}, off scale)"
        a1.plot(s["total_seconds_per_epoch"], s["accuracy"], label=label, **style)
        per_epoch = s["bytes_sent_per_rank_per_step"] * s["steps_per_epoch"]
        xs = [per_epoch * (i + 1) for i in range(len(s["accuracy"]))]
        a2.plot(xs, s["accuracy"], label=label, **style)
    any_run = next(iter(runs.values()))
    for a in (a1, a2):
        a.axhline(TARGET, color="grey", ls=":", lw=1)
        a.set_ylabel("test accuracy")
        a.grid(alpha=0.3)
        # Runs that diverged would flatten the others: they are left off scale.
        ok = [min(s["accuracy"]) for s in runs.values() if s["final_accuracy"] >= 0.5]
        top = max(max(s["accuracy"]) for s in runs.values())
        a.set_ylim(max(0.0, min(ok or [0.0]) - 0.01), min(1.0, top + 0.01))
    a1.set_xlabel("wall time (s), 1 Gbit/s emulated link")
    a1.set_title(f"accuracy vs wall time, {any_run['ranks']} ranks")
    a2.set_xscale("log")
    a2.set_xlabel("bytes sent per rank (cumulative, library's count; fp32 for the baseline)")
    a2.set_title("accuracy vs bytes sent")
    a1.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(docs, "accuracy.png"), dpi=90)
    plt.close(fig)


def plot_speed(rows, docs):
    if not rows:
        return
    groups = sorted({(r["ranks"], r["link"]) for r in rows})
    runs = ["baseline", "fp16", "topk"]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(runs)
    for i, run in enumerate(runs):
        ys = []
        for g in groups:
            v = next((r["epoch_seconds_min"] for r in rows
                      if (r["ranks"], r["link"]) == g and r["run"] == run), float("nan"))
            ys.append(v)
        xs = [j + (i - (len(runs) - 1) / 2) * width for j in range(len(groups))]
        ax.bar(xs, ys, width, label=run if run != "topk" else "topk 0.01 + EF")
        for x, y in zip(xs, ys):
            if not math.isnan(y):
                ax.text(x, y, f"{y:.1f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(groups)))
    names = {"shm": "shared memory", "tcp": "TCP, unshaped"}
    ax.set_xticklabels([f"{n} ranks\n{names.get(l, l.replace('gbit', ' Gbit/s'))}"
                        for n, l in groups], fontsize=8)
    ax.set_ylabel("seconds per epoch (fastest)")
    ax.set_title("gcmpi-train epoch time")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(docs, "epoch_time.png"), dpi=90)
    plt.close(fig)


def write_csv(path, rows):
    if not rows:
        return
    keys = list(rows[0].keys())
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    out_dir = argv[1]
    docs = argv[2] if len(argv) > 2 else "docs/results"
    fresh_data_dir(docs)

    runs = {}
    for path in sorted(glob.glob(os.path.join(out_dir, "acc-*.train.json"))):
        name = os.path.basename(path)[: -len(".train.json")]
        s = summarize(out_dir, name)
        if s:
            runs[name[len("acc-"):]] = s
    acc_lines, acc_rows = accuracy_table(runs)
    eg_l, eg_d = eg_lines(runs)
    srows = speed_table(out_dir, runs)
    sp_lines, checks = speed_lines(srows)

    inv_lines, inv_rows = investigation(out_dir, runs)
    base = runs.get("baseline")
    claims = []
    for key, what in (("topk", "topk 0.01 + EF"), ("dgc", "dgc 0.001 + EF"),
                      ("dgc-mc", "dgc 0.001 + momentum correction"),
                      ("topk-mc", "topk 0.01 + momentum correction"), ("sign", "sign + EF"),
                      ("qsgd4", "qsgd 4 bits"), ("eg", "eg")):
        s = runs.get(key)
        if s and base:
            d = (s["final_accuracy"] - base["final_accuracy"]) * 100
            claims.append({"run": key, "claim": f"{what} within 1.0 point of baseline",
                           "delta_points": d, "holds": d >= -1.0})

    if runs:
        plot_accuracy(runs, docs)
    plot_speed(srows, docs)
    write_csv(os.path.join(docs, "accuracy.csv"), acc_rows)
    write_csv(os.path.join(docs, "speed.csv"), srows)
    summary = {"accuracy": acc_rows, "eg": eg_d, "speed": srows, "speed_checks": checks,
               "accuracy_claims": claims, "investigation": inv_rows,
               "runs": {k: {kk: vv for kk, vv in v.items() if kk != "gcmpi_config"}
                        for k, v in runs.items()}}
    with open(os.path.join(docs, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    copy_run_data(out_dir, docs)
    prof = os.path.join(out_dir, "profile-topk.txt")
    if os.path.exists(prof):
        shutil.copy(prof, os.path.join(docs, "profile-topk.txt"))

    print("\n".join(acc_lines))
    print()
    if eg_l:
        print("\n".join(eg_l))
        print()
    print("\n".join(sp_lines))
    print()
    if inv_rows:
        print("\n".join(inv_lines))
        print()
    for c in claims:
        print(f"claim: {c['claim']}: {c['delta_points']:+.2f} points -> "
              f"{'holds' if c['holds'] else 'FAILS'}")
    for c in checks:
        print(f"speed (fastest epoch), {c['ranks']} ranks: fp16/topk = {fmt(c['fp16_over_topk'], '.2f')} "
              f"(target >= 1.5), topk link/shm = {fmt(c['topk_link_over_shm'], '.2f')} "
              "(target <= 1.3)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
