#!/usr/bin/env bash
# horovod-mnist.sh — Horovod's own PyTorch MNIST example, unchanged, under
# libgcmpi: a framework nobody here wrote, calling MPI as Horovod does
# (MPI_Init_thread from its background thread, MPI_THREAD_MULTIPLE, a
# duplicate of a duplicate of MPI_COMM_WORLD, tensor fusion into one
# buffer reduced in place with sizes that change from step to step, its
# own float16 datatype and op under --fp16-allreduce, MPI_Bcast and
# MPI_Allgatherv for its negotiation).
#
#   scripts/horovod-mnist.sh EXAMPLE PYTHON OUTDIR
#
# EXAMPLE: examples/pytorch/pytorch_mnist.py of Horovod's repository
# (tag v0.28.1); PYTHON: a python3 with torch, torchvision, filelock and
# horovod[pytorch] built with MPI (pip install horovod==0.28.1 with
# HOROVOD_WITH_MPI=1 HOROVOD_WITH_PYTORCH=1). Debian has no MNIST package
# and the machine no internet, so the example reads Fashion-MNIST's files
# (dataset-fashion-mnist) under MNIST's names from OUTDIR/data. Not in CI:
# Horovod comes from PyPI.
#
# Arms, EPOCHS (3) each, seed 42:
#   one host, 2 ranks: native; codec none through the allgather, rsag and
#   hier algorithms (CRC on) — each must print native's losses bit for
#   bit; topk 0.01 (allgather), int8 (rsag), auto; Horovod's own fp16
#   compression natively and under topk (its float16 type passes through:
#   bit for bit again);
#   bench/netem --nodes 2 1gbit, 4 ranks (CLUSTER=0 skips): native, auto
#   with topk 0.01 and with int8, GCMPI_AUTO_CACHE=off (trials run).
# ARMS="NAME ..." runs only those arms (the summary lists every ARM.log in
# OUTDIR). Writes OUTDIR/ARM.log, ARM.stats.json and summary.md; exits 1
# when an exact arm's losses differ from its native run's.
set -uo pipefail
example=${1:?usage: horovod-mnist.sh EXAMPLE PYTHON OUTDIR}
py=${2:?usage: horovod-mnist.sh EXAMPLE PYTHON OUTDIR}
out=${3:?usage: horovod-mnist.sh EXAMPLE PYTHON OUTDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
lib=${LIB:-$root/build/pmpi/libgcmpi.so}
epochs=${EPOCHS:-3}
[ -f "$lib" ] || { echo "horovod-mnist: no $lib (build first, or set LIB)" >&2; exit 2; }
mkdir -p "$out/data/MNIST/raw"
out=$(cd "$out" && pwd)
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte \
         t10k-labels-idx1-ubyte; do
  [ -f "$out/data/MNIST/raw/$f" ] ||
    gunzip -c "/usr/share/datasets/fashion-mnist/$f.gz" > "$out/data/MNIST/raw/$f" ||
    { echo "horovod-mnist: no Fashion-MNIST (apt-get install dataset-fashion-mnist)" >&2; exit 2; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none

# arm NAME NP WRAP "GCMPI_VAR=VALUE ..." [example options...]
arm() {
  local name=$1 np=$2 wrap=$3 vars=$4; shift 4
  [ -z "${ARMS:-}" ] || [[ " $ARMS " == *" $name "* ]] || return 0
  local xs=() start end
  if [ -n "$vars" ]; then
    xs+=(-x "LD_PRELOAD=$lib" -x "GCMPI_STATS=$out/$name.stats.json")
    for v in $vars; do xs+=(-x "$v"); done
  fi
  local cmd=(mpirun -np "$np" "${xs[@]}" "$py" "$example" --epochs "$epochs"
             --log-interval 50 --data-dir "$out/data" "$@")
  [ "$wrap" = cluster ] && cmd=("$root/bench/netem" --nodes 2 1gbit -- "${cmd[@]}")
  printf '%s\n' "${cmd[*]}" > "$out/$name.cmd"
  echo "== $name: $vars $*"
  start=$(date +%s.%N)
  (cd "$out" && "${cmd[@]}") > "$out/$name.log" 2>&1
  local rc=$?
  end=$(date +%s.%N)
  echo "rc=$rc seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')" >> "$out/$name.log"
  grep -E "^Test set" "$out/$name.log" | tail -n 1
}

one=(native "" ""
     none-allgather "GCMPI_CODEC=none GCMPI_ALGO=allgather GCMPI_CRC=1" ""
     none-rsag "GCMPI_CODEC=none GCMPI_ALGO=rsag GCMPI_CRC=1" ""
     none-hier "GCMPI_CODEC=none GCMPI_ALGO=hier GCMPI_NODE_SIZE=1 GCMPI_CRC=1" ""
     topk-allgather "GCMPI_CODEC=topk GCMPI_RATIO=0.01 GCMPI_ALGO=allgather" ""
     int8-rsag "GCMPI_CODEC=int8 GCMPI_ALGO=rsag" ""
     topk-auto "GCMPI_CODEC=topk GCMPI_RATIO=0.01 GCMPI_AUTO_CACHE=off" ""
     native-fp16 "" "--fp16-allreduce"
     topk-fp16 "GCMPI_CODEC=topk GCMPI_RATIO=0.01 GCMPI_ALGO=allgather" "--fp16-allreduce")
for ((i = 0; i < ${#one[@]}; i += 3)); do
  # shellcheck disable=SC2086
  arm "${one[i]}" 2 host "${one[i+1]}" ${one[i+2]}
done
if [ "${CLUSTER:-1}" = 1 ]; then
  arm cluster-native 4 cluster ""
  arm cluster-topk-auto 4 cluster "GCMPI_CODEC=topk GCMPI_RATIO=0.01 GCMPI_AUTO_CACHE=off"
  arm cluster-int8-auto 4 cluster "GCMPI_CODEC=int8 GCMPI_AUTO_CACHE=off"
fi

python3 - "$out" "$epochs" <<'EOF'
import glob, json, os, re, sys
out, epochs = sys.argv[1], sys.argv[2]
def losses(name):
    # Each rank's training losses and rank 0's test lines, order-free.
    text = open(f"{out}/{name}.log").read()
    return sorted(re.findall(r"Loss: [0-9.]+|Test set.*", text))
exact = {"none-allgather": "native", "none-rsag": "native", "none-hier": "native",
         "topk-fp16": "native-fp16"}
rows, bad = [], 0
for log in sorted(glob.glob(f"{out}/*.log"), key=os.path.getmtime):
    name = os.path.basename(log)[:-4]
    text = open(log).read()
    test = re.findall(r"Test set: Average loss: ([0-9.]+), Accuracy: ([0-9.]+)%", text)
    rc = re.search(r"rc=(\d+) seconds=([0-9.]+)", text)
    loss, acc = test[-1] if test else ("-", "-")
    ratio = ef = autos = "-"
    st = f"{out}/{name}.stats.json"
    if os.path.exists(st):
        d = json.load(open(st))
        for c in d["collectives"]:
            if c["collective"] == "allreduce" and c["calls_compressed"]:
                ratio = f'{c["ratio"]:.1f}x of {c["calls_compressed"]} calls'
                ef = f'{c["ef_created"]}/{c["ef_reused"]}/{c["ef_missed"]}'
        ch = [a for a in d.get("auto_choices", []) if a["collective"] == "allreduce"]
        if ch:
            autos = (f'{len(ch)} rows, {sum(a["trials"] for a in ch)} trials, '
                     f'{sum(a["band"]["calls"] for a in ch)} band calls: ' +
                     ", ".join(sorted({a["algo"] for a in ch})))
    same = ""
    if name in exact and os.path.exists(f"{out}/{exact[name]}.log"):
        ok = losses(name) == losses(exact[name])
        same = "identical" if ok else "DIFFER"
        bad += not ok
    rows.append(f"| {name} | {acc} | {loss} | {float(rc.group(2)):.1f} | {rc.group(1)} | "
                f"{ratio} | {ef} | {autos} | {same} |" if rc else f"| {name} | no result |")
with open(f"{out}/summary.md", "w") as f:
    f.write(f"Horovod pytorch_mnist.py, {epochs} epochs, Fashion-MNIST\n\n"
            "| arm | accuracy % | test loss | s | rc | allreduce ratio | residuals new/reused/missed | auto | losses vs native |\n"
            "|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
print(open(f"{out}/summary.md").read())
sys.exit(1 if bad else 0)
EOF
