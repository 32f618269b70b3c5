"""Benchmarks: tensorgrad against PyTorch eager and a hand-written NumPy floor, side by side.

    python benchmarks/run.py                  # every workload, full sizes (5-10 minutes)
    python benchmarks/run.py --quick          # fewer sizes and repetitions, under two minutes
    python benchmarks/run.py --only gpt_step,mlp_step --json results.json
    python benchmarks/run.py --device cuda    # tensorgrad on CuPy vs torch CUDA (floor on CuPy)

Every workload runs in a fresh process per framework (so a peak RSS belongs to one framework),
with warm-up calls and repetitions; the table gives the median with [min-max], the ratios
tensorgrad / torch and tensorgrad / NumPy floor, and the targets of the benchmark issue marked
met or not met. Progress goes to stderr, the report (markdown) to stdout. See README.md here.
"""
import argparse
import datetime
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy

if __package__ in (None, ""):  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import workloads  # noqa: E402
from benchmarks.timing import peak_rss_mb  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRAMEWORKS = ("tensorgrad", "torch", "numpy")
RESULT_MARK = "BENCHMARK-RESULT "
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
ALLOCATOR_VARIABLES = {"MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
                       "MALLOC_TRIM_THRESHOLD_": str(256 * 2**20)}
TIMEOUTS = {"full": 1800, "quick": 300, "tiny": 300}  # seconds per child process

# The benchmark issues' targets (the first round's, issue 20's and issue 36's): (workload,
# case or None for every case, metric, compared with, relation, bound on tensorgrad / other).
TARGETS = (
    ("gpt_step", None, "ms/step", "numpy", "<=", 1.0),
    ("gpt_step", None, "ms/step", "torch", "<=", 1.0),
    ("gpt_step", None, "peak RSS MiB", "torch", "<=", 1.0),
    ("mlp_step", None, "ms/step", "torch", "<=", 1.0),
    ("op_overhead", "fwd", "us/op", "torch", "<=", 1.0),
    ("op_overhead", "fwd, result alive", "us/op", "torch", "<=", 1.0),  # issue 36
    ("op_overhead", "fwd+bwd", "us/op", "torch", "<=", 1.0),
    ("op_overhead", "fwd+bwd, result alive", "us/op", "torch", "<=", 1.0),
    ("attention", "T=4096", "ms fwd+bwd", "torch", "<=", 1.2),
    ("attention", "T=4096", "peak growth MiB", "torch", "<=", 1.0),
    ("generate", "B=1 KV cache, torch static", "tokens/s", "torch", ">=", 1.0),
    ("generate", "B=8 KV cache, torch static", "tokens/s", "torch", ">=", 1.0),
    ("generate_user", None, "tokens/s", "torch", ">=", 1.0),  # issue 36: user code, aliased
    ("generate_nocache", None, "tokens/s", "torch", ">=", 1.0),
    ("attention", "T=512", "ms fwd+bwd", "torch", "<=", 1.1),
    ("attention", "T=1024", "ms fwd+bwd", "torch", "<=", 1.1),
    ("attention", "T=512", "peak growth MiB", "torch", "<=", 1.0),
    ("attention", "T=1024", "peak growth MiB", "torch", "<=", 1.0),
    ("conv2d", None, "ms fwd+bwd", "torch", "<=", 2.0),
    ("vit_step", None, "ms/step", "torch", "<=", 1.3),
    ("bert_step", None, "ms/step", "torch", "<=", 1.3),
    ("t5_step", None, "ms/step", "torch", "<=", 1.3),
)
# Waits a user sees, in seconds, where no ratio says it (issue 33: the first hour)
LIMITS = (
    ("cold_start", "import", "s", "<=", 0.3),
    ("cold_start", "first step, cold cache", "s", "<=", 3.0),
    ("cold_start", "first step, warm cache", "s", "<=", 0.5),
)


def parse_args(argv=None):
    listing = "\n".join(f"  {name:<12} {workloads.load(name).DESCRIPTION}"
                        for name in workloads.NAMES)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     epilog=f"workloads:\n{listing}",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument("--quick", action="store_true",
                       help="fewer sizes and repetitions (under two minutes)")
    sizes.add_argument("--tiny", action="store_true",
                       help="toy sizes, two repetitions: checks the harness, measures nothing")
    parser.add_argument("--only", metavar="NAME[,NAME]",
                        help=f"workloads to run, from {','.join(workloads.NAMES)}")
    parser.add_argument("--frameworks", metavar="NAME[,NAME]", default=",".join(FRAMEWORKS),
                        help="frameworks to run (default: all three)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="cuda: tensorgrad on CuPy vs torch CUDA, the floor on CuPy")
    parser.add_argument("--json", metavar="PATH", help="also save every figure as JSON")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="BLAS and torch threads in each process (default: every CPU; 1 is "
                             "steadier on a machine shared with other work)")
    parser.add_argument("--rounds", type=int,
                        help="times each workload's frameworks run, in turn (default: 3, or 1 "
                             "with --quick / --tiny); figures merge the rounds")
    parser.add_argument("--timeout", type=float, help="seconds allowed per child process")
    parser.add_argument("--child", metavar="WORKLOAD", help=argparse.SUPPRESS)
    parser.add_argument("--framework", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    if args.rounds is None:
        args.rounds = 3 if args.mode == "full" else 1
    if args.rounds < 1:
        raise SystemExit(f"--rounds: expected at least 1, got {args.rounds}")
    args.only = _names(args.only, workloads.NAMES, "--only") if args.only else workloads.NAMES
    args.frameworks = _names(args.frameworks, FRAMEWORKS, "--frameworks")
    return args


def _names(text, allowed, flag):
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise SystemExit(f"{flag}: unknown name(s) {unknown or [text]}; expected some of "
                         f"{','.join(allowed)}")
    return names


# --- the child: one workload, one framework, one process ------------------------------------------
def child(args):
    env = workloads.Env(args.framework, args.device, args.mode)
    if args.framework == "tensorgrad" and args.device == "cpu" and args.child != "cold_start":
        from tensorgrad.backend import kernel_loading  # time the compiled kernels, not their
        if kernel_loading.load() is not None:           # build or the array code meanwhile
            kernel_loading.warm_up("float32")
    rows = workloads.load(args.child).run(env)
    peak = peak_rss_mb()  # before naming the BLAS, which may load it into a process that had none
    if args.framework == "tensorgrad" and args.device == "cpu":
        from tensorgrad.backend import get_backend
        env.notes["blas"] = get_backend("cpu").blas_name()
    print(RESULT_MARK + json.dumps({"rows": rows, "notes": env.notes, "peak_rss_mb": peak}),
          flush=True)


def run_child(name, framework, args):
    """Run one workload for one framework in a fresh interpreter; its result dict, or
    {"error": ...} with the end of what it printed."""
    command = [sys.executable, "-m", "benchmarks.run", "--child", name, "--framework", framework,
               "--device", args.device] + ([f"--{args.mode}"] if args.mode != "full" else [])
    # BLAS reads its thread count when it loads, so it is set in the child's environment. Every
    # framework also runs under the same glibc allocator policy, the one tensorgrad's
    # tune_process sets (tensorgrad/backend/process.py), so that no
    # side wins by how freed memory is recycled.
    env = dict(os.environ, **{var: str(args.threads) for var in THREAD_VARIABLES},
               **ALLOCATOR_VARIABLES)
    started = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=args.timeout or TIMEOUTS[args.mode])
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout or TIMEOUTS[args.mode]:.0f} s",
                "wall_s": time.perf_counter() - started}
    wall = time.perf_counter() - started
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            return {**json.loads(line[len(RESULT_MARK):]), "wall_s": wall}
    tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
    return {"error": f"exit {done.returncode}: {tail[0][:200]}", "wall_s": wall}


def merge_rounds(runs):
    """One framework's rounds of one workload as one result: each row's median is the median of
    the rounds' medians (kept too, as round_medians, to pair with the other frameworks' rounds),
    its quartiles the medians of the rounds' quartiles, min and max the extremes, reps the
    total. The first failed round, if any, is the result."""
    failed = [r for r in runs if "error" in r]
    if failed:
        return failed[0]
    rows = []
    for per_round in zip(*(r["rows"] for r in runs)):
        rows.append({**per_round[0],
                     "median": statistics.median(r["median"] for r in per_round),
                     "round_medians": [r["median"] for r in per_round],
                     "min": min(r["min"] for r in per_round),
                     "max": max(r["max"] for r in per_round),
                     "reps": sum(r["reps"] for r in per_round),
                     **{q: statistics.median(r[q] for r in per_round) for q in ("q1", "q3")
                        if all(q in r for r in per_round)}})
    return {**runs[0], "rows": rows, "wall_s": sum(r["wall_s"] for r in runs),
            "peak_rss_mb": max(r.get("peak_rss_mb", 0.0) for r in runs)}


# --- the report -----------------------------------------------------------------------------------
def fmt(x):
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def cell(r):
    if r["reps"] == 1:
        return fmt(r["median"])
    if r.get("spread") == "quartiles" and "q1" in r:
        return f"{fmt(r['median'])} [IQR {fmt(r['q1'])}-{fmt(r['q3'])}]"
    return f"{fmt(r['median'])} [{fmt(r['min'])}-{fmt(r['max'])}]"


def collect(results):
    """{(workload, case, metric): {framework: row}}, grouped by workload, then case, then
    metric, each in the order it first appears."""
    table, first_seen = {}, {}
    for name, by_framework in results.items():
        for framework, result in by_framework.items():
            for r in result.get("rows", ()):
                first_seen.setdefault(r["case"], len(first_seen))
                first_seen.setdefault(r["metric"], len(first_seen))
                table.setdefault((name, r["case"], r["metric"]), {})[framework] = r
    names = list(results)
    order = sorted(table, key=lambda k: (names.index(k[0]), first_seen[k[1]], first_seen[k[2]]))
    return {key: table[key] for key in order}


def check_targets(table, results):
    """Each target judged on every row it covers ("met", "NOT met" with the ratio, or why it
    could not be judged); one entry saying why when it covers no row."""
    checks = []
    for target in TARGETS:
        name, case, metric = target[:3]
        keys = [k for k in table if k[0] == name and k[2] == metric and case in (None, k[1])]
        if not keys:
            status = f"no {case or metric} row in this mode" if name in results else "not run"
            checks.append(_check(target, case, status))
        for key in keys:
            checks.append(_check(target, key[1], _judge(table[key], *target[3:])))
    for name, case, metric, relation, bound in LIMITS:
        figures = table.get((name, case, metric), {})
        if "tensorgrad" not in figures:
            status = "not run" if name not in results else f"no {case} row in this mode"
        else:
            seconds = figures["tensorgrad"]["median"]
            met = seconds <= bound if relation == "<=" else seconds >= bound
            status = f"{'met' if met else 'NOT met'} ({seconds:.2f} {metric})"
        checks.append({"workload": name, "case": case, "metric": metric, "against": None,
                       "relation": relation, "bound": bound, "status": status,
                       "text": f"{name} {case}: tensorgrad {relation} {bound:g} {metric}"})
    return checks


def _check(target, case, status):
    name, _, metric, other, relation, bound = target
    text = f"{name} {case or ''} {metric}: tensorgrad {relation} {bound:g}x {_label(other)}"
    return {"workload": name, "case": case, "metric": metric, "against": other,
            "relation": relation, "bound": bound, "text": " ".join(text.split()),
            "status": status}


def ratio(ours, theirs):
    """tensorgrad's figure over another's: the median of the round-by-round ratios when both ran
    the same rounds (each pair ran minutes apart at most, so a machine's drift cancels), else
    the ratio of the medians."""
    pairs = list(zip(ours.get("round_medians", ()), theirs.get("round_medians", ())))
    if len(pairs) > 1 and len(pairs) == len(ours["round_medians"]):
        ratios = [_divide(a, b) for a, b in pairs]
        return math.nan if any(map(math.isnan, ratios)) else statistics.median(ratios)
    return _divide(ours["median"], theirs["median"])


def _divide(a, b):
    # a memory growth can be 0 MiB (the step fit in pages the process had): no ratio then
    return a / b if b else math.nan


def _judge(figures, other, relation, bound):
    if "tensorgrad" not in figures or other not in figures:
        return "missing a figure"
    ratio_ = ratio(figures["tensorgrad"], figures[other])
    if not math.isfinite(ratio_):
        return "not measurable"
    met = ratio_ <= bound if relation == "<=" else ratio_ >= bound
    return f"{'met' if met else 'NOT met'} ({ratio_:.2f}x)"


def _label(framework):
    return "NumPy floor" if framework == "numpy" else framework


def report(results, meta):
    """The markdown report: a header of the conditions, the table, the targets."""
    table = collect(results)
    targets = check_targets(table, results)
    lines = [f"## tensorgrad benchmarks ({meta['mode']}, {meta['device']})", ""]
    lines += [f"- {key}: {value}" for key, value in meta.items() if key not in ("mode", "device")]
    lines += ["", "Figures: median [min-max] over the repetitions (and rounds); ratios are "
              "tensorgrad / other, the median of the round-by-round ratios. ↑ higher is better, "
              "↓ lower is better.", "",
              "| workload | case | metric | tensorgrad | torch | NumPy floor | tg/torch | "
              "tg/floor | target |",
              "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for (name, case, metric), figures in table.items():
        cells = [cell(figures[f]) if f in figures else "-" for f in FRAMEWORKS]
        ratios = [f"{ratio(figures['tensorgrad'], figures[f]):.2f}"
                  if "tensorgrad" in figures and f in figures else "-" for f in ("torch", "numpy")]
        better = next(iter(figures.values()))["better"]
        goal = "; ".join(f"{t['relation']}{t['bound']:g}"
                         f"{'x ' + _label(t['against']) if t['against'] else ' ' + metric}: "
                         f"{t['status'].split(' (')[0]}" for t in targets
                         if (t["workload"], t["case"], t["metric"]) == (name, case, metric))
        arrow = "↑" if better == "higher" else "↓"
        lines.append(f"| {name} | {case} | {metric} {arrow} | {' | '.join(cells)} | "
                     f"{' | '.join(ratios)} | {goal} |")
    errors = [f"- {name}/{fw}: {r['error']}" for name, by_fw in results.items()
              for fw, r in by_fw.items() if "error" in r]
    if errors:
        lines += ["", "Failed runs:"] + errors
    lines += ["", "Targets:"] + [f"- {t['text']}: **{t['status']}**" for t in targets]
    return "\n".join(lines), targets


def machine(args):
    info = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "mode": args.mode,
            "device": args.device, "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
            f"{platform.system()} {platform.release()}",
            "python": platform.python_version(),
            "threads": f"{args.threads} per process (BLAS and torch)",
            "rounds": f"{args.rounds} (the frameworks take turns; figures merge the rounds)",
            "numpy": numpy.__version__,
            "tensorgrad CPU kernels": _kernels_in_use()}
    if hasattr(os, "getloadavg"):
        info["load average at start"] = "%.2f %.2f %.2f" % os.getloadavg()
    return info


def _kernels_in_use():
    """Whether tensorgrad's CPU backend runs its fused Numba kernels in this environment."""
    if os.environ.get("TENSORGRAD_NUMBA") == "0":
        return "off (TENSORGRAD_NUMBA=0): array code"
    if importlib.util.find_spec("numba") is None:
        return "off (numba not installed): array code"
    return (f"numba {importlib.metadata.version('numba')}: fused tanh-GELU, norms, attention "
            "softmax, Adam and embedding gradients")


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        return child(args)
    started = time.perf_counter()
    meta = machine(args)
    frameworks = list(args.frameworks)
    if "torch" in frameworks and importlib.util.find_spec("torch") is None:
        frameworks.remove("torch")
        meta["torch"] = "not installed: its columns are empty"
    results = {}
    for name in args.only:
        module = workloads.load(name)
        if args.device not in getattr(module, "DEVICES", ("cpu", "cuda")):
            meta[f"{name} skipped"] = f"it runs on {', '.join(module.DEVICES)} only"
            continue
        # The frameworks take turns, round after round, so that a machine whose speed drifts
        # (shared cores, thermal limits) slows each of them alike rather than whichever ran
        # during the slow minute.
        runs = {f: [] for f in module.FRAMEWORKS if f in frameworks}
        for round_ in range(args.rounds):
            for framework, done in runs.items():
                print(f"[bench] {name} / {framework} (round {round_ + 1}/{args.rounds}) ...",
                      end=" ", file=sys.stderr, flush=True)
                result = run_child(name, framework, args)
                print(f"{result['wall_s']:.1f} s" + (f"  ERROR {result['error']}"
                                                     if "error" in result else ""),
                      file=sys.stderr, flush=True)
                done.append(result)
        results[name] = {framework: merge_rounds(done) for framework, done in runs.items()}
        for result in results[name].values():
            if result.get("notes", {}).get("blas"):
                meta["tensorgrad BLAS (float matmul)"] = result["notes"]["blas"]
            if result.get("notes", {}).get("torch_threads"):
                meta["torch"] = (f"{_torch_version()}, eager, torch.set_num_threads("
                                 f"{result['notes']['torch_threads']})")
    if hasattr(os, "getloadavg"):
        meta["load average at end"] = "%.2f %.2f %.2f" % os.getloadavg()
    meta["wall time"] = f"{time.perf_counter() - started:.1f} s"
    text, targets = report(results, meta)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"meta": meta, "results": results, "targets": targets}, f, indent=1)
    return 0 if all("error" not in r for by_fw in results.values() for r in by_fw.values()) else 1


def _torch_version():
    from importlib.metadata import version
    return f"torch {version('torch')}"


if __name__ == "__main__":
    sys.exit(main())
