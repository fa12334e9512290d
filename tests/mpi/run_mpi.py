#!/usr/bin/env python3
"""run_mpi.py — run an MPI test program the way users run libgcmpi:

    mpirun -np N env LD_PRELOAD=libgcmpi.so GCMPI_...=... ./program

and check what the job did: its exit status, lines on stderr, and the JSON
statistics the library writes at MPI_Finalize. The whole job runs in its own
process group and is killed when it exceeds --timeout, so a hang fails the
test instead of stalling the suite.

    run_mpi.py --launcher mpirun.openmpi --flavor openmpi --np 4 --lib libgcmpi.so \
        --env GCMPI_CODEC=int8 --json-expect 'collective=allreduce:ef_reused > 0' \
        -- ./mpi_horovod
"""
import argparse
import json
import keyword
import os
import re
import signal
import subprocess
import sys
import tempfile


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launcher", help="mpirun of the MPI the programs were built with")
    ap.add_argument("--flavor", choices=["openmpi", "mpich"], default="openmpi")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--lib", required=True, help="path of libgcmpi.so")
    ap.add_argument("--no-preload", action="store_true",
                    help="run without the library (programs that link the algorithms)")
    ap.add_argument("--env", action="append", default=[], metavar="K=V",
                    help="environment of every rank")
    ap.add_argument("--first-rank-env", action="append", default=[], metavar="K=V",
                    help="extra environment of rank 0 only (MPMD launch)")
    ap.add_argument("--direct", action="store_true",
                    help="run the program without a launcher (inertness checks)")
    ap.add_argument("--wrapper", default="",
                    help="command put before the program on every rank, e.g. valgrind")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--expect-exit", choices=["zero", "nonzero"], default="zero")
    ap.add_argument("--stderr-has", action="append", default=[], metavar="TEXT")
    ap.add_argument("--stderr-lacks", action="append", default=[], metavar="TEXT")
    ap.add_argument("--stderr-count", action="append", default=[], metavar="TEXT=N",
                    help="lines containing TEXT must number N ('np': one per rank)")
    ap.add_argument("--stdout-is", default=None, help="exact standard output")
    ap.add_argument("--stderr-empty", action="store_true")
    ap.add_argument("--report-fits", type=int, default=None, metavar="LINES",
                    help="the library's stderr lines (those with 'libgcmpi') number at most "
                         "LINES and none is wider than 80 columns")
    ap.add_argument("--json-expect", action="append", default=[], metavar="SELECTOR:EXPR",
                    help="SELECTOR 'k=v,k=v' picks one row of 'collectives' (empty: the "
                         "top level); EXPR is evaluated over its fields and np")
    ap.add_argument("--json-schema", default=None, metavar="SCHEMA",
                    help="the statistics JSON must be valid against SCHEMA, every field "
                         "documented (tests/tools/check_stats_schema.py --strict)")
    ap.add_argument("--agree", default=None, metavar="REGEX",
                    help="GCMPI_VERBOSE=3 trace lines of compressed allreduces: the text "
                         "REGEX matches must be the same on every rank for the same "
                         "communicator and call number, and every rank must trace the same "
                         "calls (at least one)")
    ap.add_argument("--timeline-expect", action="append", default=[], metavar="EXPR",
                    help="EXPR must hold for every point of every 'timelines' entry of "
                         "the JSON statistics (fields of the point, stride, codec, comm, "
                         "n_points, np; null is None; a field named like a Python keyword "
                         "gets a trailing _, e.g. lambda_); at least one point must exist")
    ap.add_argument("program", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if args.program and args.program[0] == "--":
        args.program = args.program[1:]
    if not args.program:
        ap.error("no program given after --")
    # Ranks may start elsewhere than this process (and LD_PRELOAD needs it).
    args.lib = os.path.abspath(args.lib)
    if os.path.exists(args.program[0]):
        args.program[0] = os.path.abspath(args.program[0])
    return args


def key_values(items):
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            sys.exit(f"run_mpi.py: expected K=V, got {item!r}")
        out[key] = value
    return out


def rank_command(args, env):
    settings = [f"{k}={v}" for k, v in env.items()]
    if not args.no_preload:
        settings.insert(0, f"LD_PRELOAD={args.lib}")
    return ["env"] + settings + args.wrapper.split() + args.program


def job_command(args, env):
    if args.direct:
        return rank_command(args, env)
    cmd = [args.launcher]
    if args.flavor == "openmpi":
        # Ranks share 2 cores in CI: oversubscribe, do not bind, yield.
        cmd += ["--oversubscribe", "--bind-to", "none"]
    first = key_values(args.first_rank_env)
    if first:
        cmd += ["-np", "1"] + rank_command(args, {**env, **first})
        if args.np > 1:
            cmd += [":", "-np", str(args.np - 1)] + rank_command(args, env)
    else:
        cmd += ["-np", str(args.np)] + rank_command(args, env)
    return cmd


def launcher_environment(args):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # the launcher itself runs without the library
    if args.flavor == "openmpi":
        env.update({
            "OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_mpi_yield_when_idle": "1",
            # Containers often forbid the cross-process copy (ptrace scope).
            "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
        })
    # Sanitizer builds: the preloaded library brings the ASan runtime in
    # after the program's own libraries, which is fine here; MPI's own leaks
    # are suppressed, which needs full stacks (MPI is built without frame
    # pointers).
    def add(name, options):
        env[name] = (env[name] + ":" if env.get(name) else "") + options
    add("ASAN_OPTIONS", "verify_asan_link_order=0:fast_unwind_on_malloc=0")
    here = os.path.dirname(os.path.abspath(__file__))
    add("LSAN_OPTIONS", "print_suppressions=0:suppressions=" + os.path.join(here, "lsan.supp"))
    return env


def select_row(doc, selector):
    if not selector:
        return doc
    want = key_values(selector.split(","))
    rows = [r for r in doc.get("collectives", [])
            if all(str(r.get(k)) == v for k, v in want.items())]
    if len(rows) != 1:
        raise AssertionError(f"selector {selector!r} matches {len(rows)} rows")
    return rows[0]


TRACE = re.compile(r"libgcmpi: rank (\d+): allreduce of \d+ floats on (.+?): .*, call (\d+)")


def check_agreement(args, err):
    """Every rank traced the same calls, with the same decision text."""
    problems = []
    decisions = {}  # (comm, call) -> {rank: text}
    calls = {}      # rank -> number of calls traced
    pattern = re.compile(args.agree)
    for line in err.splitlines():
        m = TRACE.search(line)
        if not m:
            continue
        rank, comm, call = int(m.group(1)), m.group(2), int(m.group(3))
        text = " ".join(pattern.findall(line[m.end(2):]))
        decisions.setdefault((comm, call), {})[rank] = text
        calls[rank] = calls.get(rank, 0) + 1
    if not calls:
        return ["--agree: no compressed allreduce traced (GCMPI_VERBOSE=3?)"]
    if len(calls) != args.np or len(set(calls.values())) != 1:
        problems.append(f"--agree: ranks traced different numbers of calls: {calls}")
    texts = set()
    for (comm, call), by_rank in sorted(decisions.items()):
        texts.update(by_rank.values())
        if len(by_rank) != args.np:
            problems.append(f"--agree: {comm} call {call} traced by ranks {sorted(by_rank)}")
        elif len(set(by_rank.values())) != 1:
            problems.append(f"--agree: {comm} call {call} decided differently: {by_rank}")
    if texts == {""}:
        problems.append(f"--agree: {args.agree!r} matches nothing in the trace lines")
    print(f"--agree: {len(decisions)} calls, {len(texts)} distinct decisions", flush=True)
    return problems[:10]


def check_timelines(args, doc):
    problems = []
    timelines = doc.get("timelines", [])
    points = [(t, p) for t in timelines for p in t.get("points", [])]
    if not points:
        return [f"JSON has no timeline points (timelines: {json.dumps(timelines)[:400]})"]
    for expr in args.timeline_expect:
        for t, p in points:
            names = {**{k: v for k, v in t.items() if k != "points"},
                     "n_points": len(t["points"]), **p, "np": args.np}
            names = {k + "_" if keyword.iskeyword(k) else k: v for k, v in names.items()}
            try:
                ok = eval(expr, {"__builtins__": {}}, names)
            except (KeyError, NameError, TypeError, SyntaxError) as e:
                ok, expr_err = False, e
            else:
                expr_err = None
            if not ok:
                problems.append(f"timeline {t.get('comm')}: {expr} is "
                                f"{'an error: ' + str(expr_err) if expr_err else 'false'} "
                                f"at point {json.dumps(p)}")
                break
    return problems


def check(args, rc, out, err, stats_path):
    problems = []
    if args.expect_exit == "zero" and rc != 0:
        problems.append(f"exit status {rc}, expected 0")
    if args.expect_exit == "nonzero" and rc == 0:
        problems.append("exit status 0, expected non-zero")
    for text in args.stderr_has:
        if text not in err:
            problems.append(f"stderr lacks {text!r}")
    for text in args.stderr_lacks:
        if text in err:
            problems.append(f"stderr contains {text!r}")
    for item in args.stderr_count:
        text, _, n = item.rpartition("=")
        want = args.np if n == "np" else int(n)
        got = sum(1 for line in err.splitlines() if text in line)
        if got != want:
            problems.append(f"{got} stderr lines contain {text!r}, expected {want}")
    if args.stdout_is is not None and out != args.stdout_is:
        problems.append(f"stdout is {out!r}, expected {args.stdout_is!r}")
    if args.stderr_empty and err:
        problems.append("stderr is not empty")
    if args.report_fits is not None:
        lines = [line for line in err.splitlines() if "libgcmpi" in line]
        if not lines or len(lines) > args.report_fits:
            problems.append(f"{len(lines)} libgcmpi lines on stderr, expected 1..{args.report_fits}")
        problems += [f"line wider than 80 columns: {line!r}" for line in lines if len(line) > 80]
    if args.agree is not None:
        problems += check_agreement(args, err)
    if args.json_schema:
        checker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools",
                               "check_stats_schema.py")
        proc = subprocess.run([sys.executable, checker, "--strict", args.json_schema, stats_path],
                              capture_output=True, text=True)
        print(proc.stdout + proc.stderr, end="")
        if proc.returncode != 0:
            problems.append(f"statistics JSON does not follow {args.json_schema}")
    if args.json_expect or args.timeline_expect:
        try:
            with open(stats_path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            problems.append(f"statistics JSON unreadable: {e}")
            doc = None
        if doc and args.timeline_expect:
            problems += check_timelines(args, doc)
        for item in args.json_expect if doc else []:
            selector, _, expr = item.rpartition(":")
            try:
                row = select_row(doc, selector)
                names = {k: v for k, v in row.items() if isinstance(k, str)}
                if not eval(expr, {"__builtins__": {}}, {**names, "np": args.np}):
                    problems.append(f"JSON {selector or 'top level'}: {expr} is false "
                                    f"(row: {json.dumps(row)})")
            except (AssertionError, KeyError, NameError, TypeError) as e:
                problems.append(f"JSON {item!r}: {e}")
    return problems


def main():
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="gcmpi-test-") as tmp:
        env = key_values(args.env)
        stats_path = os.path.join(tmp, "stats.json")
        if args.json_expect or args.timeline_expect or args.json_schema:
            stderr_too = "stderr" in env.get("GCMPI_STATS", "")
            env["GCMPI_STATS"] = stats_path + (",stderr" if stderr_too else "")
        cmd = job_command(args, env)
        print("+", " ".join(cmd), flush=True)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=launcher_environment(args), start_new_session=True,
                                text=True, errors="replace")
        try:
            out, err = proc.communicate(timeout=args.timeout)
            rc = proc.returncode
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            rc, timed_out = -1, True
        sys.stdout.write(out)
        sys.stdout.write("---- stderr ----\n" + err)
        problems = [f"timed out after {args.timeout:.0f} s (hang?)"] if timed_out else []
        problems += check(args, rc, out, err, stats_path)
        if (args.json_expect or args.timeline_expect or args.json_schema) and \
                os.path.exists(stats_path):
            with open(stats_path) as f:
                sys.stdout.write("---- statistics ----\n" + f.read())
    for p in problems:
        print("CHECK FAILED:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
