#!/usr/bin/python3
"""plot_scale.py — README's scale figure from gcmpi-scale-model.

    bench/results/plot_scale.py SCALE_MODEL_BINARY [DOCS_DIR] [-- MODEL OPTIONS...]

Runs the scale model (build/bench/gcmpi-scale-model) with 8 ranks per node
at 1, 10 and 100 Gbit/s between nodes for a 100 MB and a 1 GB gradient,
writes its CSV to DOCS_DIR/scale.csv (default docs/results) and plots the
predicted time per call against p (log-log), one panel per gradient size,
one colour per algorithm, one line style per link rate, into scale.png.
Options after "--" go to the model (codec figures, latencies). Needs
matplotlib (Agg), hence /usr/bin/python3 on Debian.
"""

import csv
import io
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"passthrough": "black", "allgather": "tab:orange", "rsag": "tab:blue",
           "native": "tab:purple", "hier": "tab:green", "sparse_rd": "tab:red"}
STYLES = {1.0: "-", 10.0: "--", 100.0: ":"}


def main():
    args = sys.argv[1:]
    extra = []
    if "--" in args:
        i = args.index("--")
        args, extra = args[:i], args[i + 1:]
    if not args:
        sys.exit(__doc__)
    binary = args[0]
    docs = args[1] if len(args) > 1 else "docs/results"
    os.makedirs(docs, exist_ok=True)
    cmd = [binary, "--q", "8", "--gbits", "1,10,100", "--bytes", "100M,1G"] + extra
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    with open(os.path.join(docs, "scale.csv"), "w") as f:
        f.write("# " + " ".join(["gcmpi-scale-model"] + cmd[1:]) + "\n" + out)
    rows = list(csv.DictReader(io.StringIO(out)))
    sizes = sorted({float(r["bytes"]) for r in rows})
    fig, axes = plt.subplots(1, len(sizes), figsize=(6 * len(sizes), 4.5), sharey=False)
    for ax, size in zip(axes if len(sizes) > 1 else [axes], sizes):
        for algo, colour in COLOURS.items():
            for gbits, style in STYLES.items():
                pts = sorted((int(r["p"]), float(r["seconds"])) for r in rows
                             if r["algo"] == algo and float(r["bytes"]) == size
                             and float(r["gbits"]) == gbits)
                if not pts:
                    continue
                ax.plot([p for p, _ in pts], [t for _, t in pts], style, color=colour,
                        label=f"{algo}" if gbits == 1.0 else None)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("ranks p (8 per node)")
        ax.set_ylabel("predicted seconds per allreduce")
        ax.set_title(f"{size / 1e6:.0f} MB gradient; solid 1, dashed 10, dotted 100 Gbit/s")
        ax.grid(True, which="both", alpha=0.3)
    (axes[0] if len(sizes) > 1 else axes).legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(docs, "scale.png"), dpi=110)
    # The fastest algorithm per (rate, size, p), for the README table.
    print("| Gbit/s | gradient | p=16 | p=64 | p=256 | p=1024 |")
    print("|---|---|---|---|---|---|")
    for gbits in sorted(STYLES):
        for size in sizes:
            cells = []
            for p in (16, 64, 256, 1024):
                best = [r for r in rows if r["algo"].startswith("best:") and int(r["p"]) == p
                        and float(r["bytes"]) == size and float(r["gbits"]) == gbits]
                cells.append(f"{best[0]['algo'][5:]} {float(best[0]['seconds']) * 1e3:.0f} ms"
                             if best else "")
            print(f"| {gbits:g} | {size / 1e6:.0f} MB | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
