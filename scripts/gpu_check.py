"""The GPU check that scripts/gpu_check.sh runs: the cuda test cases, then three workloads on
cuda, tensorgrad against torch eager, printed as one markdown table.

    python scripts/gpu_check.py             # a GPU with CuPy: quick sizes (T=1024/4096)
    python scripts/gpu_check.py --standin   # the CPU through tests/cupy_standin.py, tiny sizes

With --standin the stand-in is installed in this process and in the test run, and torch (which
sees no GPU there) runs on the cpu: the run checks that every step works, not the speed.
"""
import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # the benchmarks package
ATTENTION_LENGTHS = {"quick": (1024, 4096), "tiny": (32, 64)}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--standin", action="store_true",
                        help="dry run on the CPU through the CuPy stand-in, small sizes")
    parser.add_argument("--suite-timeout", type=float, default=300.0,
                        help="seconds for the cuda test cases (default 300)")
    return parser.parse_args(argv)


def run_suite(standin, timeout):
    """The cuda-parametrized test cases; returns (summary line, seconds)."""
    env = dict(os.environ, TENSORGRAD_CUDA_STANDIN="1" if standin else "0")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-k", "cuda", "tests"]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f} s", time.perf_counter() - started
    lines = [line for line in done.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    failures = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    for line in failures:
        print(line, file=sys.stderr)
    summary = lines[-1].strip("= ") if lines else f"exit {done.returncode}, no summary"
    return summary, time.perf_counter() - started


def attention(env, lengths):
    """Causal attention forward + backward, B=1, 4 heads, head dim 64."""
    from benchmarks.timing import scale
    from benchmarks.workloads import row

    if env.framework == "torch":
        from torch.nn.functional import scaled_dot_product_attention as sdpa
    else:
        from tensorgrad import scaled_dot_product_attention as sdpa
    rows = []
    for T in lengths:
        q, k, v = (env.randn(1, 4, T, 64, requires_grad=True) for _ in range(3))
        stats = env.measure(lambda q=q, k=k, v=v: sdpa(q, k, v, is_causal=True).sum().backward())
        rows.append(row(f"T={T}", "ms fwd+bwd", scale(stats, 1e3)))
    return rows


def measure_all(mode, torch_device):
    """{(workload, case, metric): {framework: median}} and the better direction per metric."""
    from benchmarks import workloads

    frameworks = {"tensorgrad": "cuda"}
    if torch_device is not None:
        frameworks["torch"] = torch_device
    table = {}
    for framework, device in frameworks.items():
        env = workloads.Env(framework, device, mode)
        for name, run in (("gpt_step", workloads.load("gpt_step").run),
                          ("attention", lambda e: attention(e, ATTENTION_LENGTHS[mode])),
                          ("generate", workloads.load("generate").run)):
            print(f"  {name} on {framework} {device} ...", file=sys.stderr, flush=True)
            try:
                rows = run(env)
            except Exception as exc:  # noqa: BLE001 - one failing workload must not hide the rest
                rows = [{"case": "-", "metric": "error", "median": f"{type(exc).__name__}: {exc}",
                         "better": "lower"}]
            for r in rows:
                if "RSS" in r["metric"] or name == "generate" and "no cache" in r["case"]:
                    continue  # host memory says nothing about a GPU; decoding is the cached case
                table.setdefault((name, r["case"], r["metric"], r["better"]), {})[framework] = \
                    r["median"]
    return table


def torch_device(standin):
    """Where torch runs: cuda when it sees a GPU; the cpu in a stand-in dry run; else None."""
    try:
        import torch
    except ImportError:
        return None
    if torch.cuda.is_available():
        return "cuda"
    return "cpu" if standin else None


def fmt(value):
    if isinstance(value, str):
        return value[:60]
    return "-" if value is None else f"{value:.4g}"


def main(argv=None):
    args = parse_args(argv)
    started = time.perf_counter()
    mode = "tiny" if args.standin else "quick"
    if args.standin:
        os.environ.setdefault("OMP_NUM_THREADS", "1")  # torch's threads on a shared CPU
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        import cupy_standin
        reason = cupy_standin.install()
        if reason:
            raise SystemExit(reason)
    import tensorgrad as tg
    if not tg.cuda_is_available():
        raise SystemExit("gpu_check: tensorgrad sees no GPU (CuPy and an NVIDIA GPU are needed; "
                         "--standin dry-runs on the CPU)")
    print("cuda test cases ...", file=sys.stderr, flush=True)
    suite, suite_s = run_suite(args.standin, args.suite_timeout)
    where = torch_device(args.standin)
    table = measure_all(mode, where)
    label = "CuPy STAND-IN on the CPU (not a GPU)" if args.standin else "GPU"
    torch_label = f"torch {where}" if where else "torch (not installed or no GPU)"
    print(f"\n## gpu_check: tensorgrad on cuda ({label}), {mode} sizes\n")
    print(f"cuda test cases: {suite} ({suite_s:.0f} s)\n")
    print(f"| workload | case | metric | tensorgrad cuda | {torch_label} | tensorgrad / torch |")
    print("|---|---|---|---|---|---|")
    for (name, case, metric, better), values in table.items():
        ours, theirs = values.get("tensorgrad"), values.get("torch")
        ratio = "-"
        if isinstance(ours, float) and isinstance(theirs, float) and theirs:
            ratio = f"{ours / theirs:.2f}" + (" (higher is better)" if better == "higher" else "")
        print(f"| {name} | {case} | {metric} | {fmt(ours)} | {fmt(theirs)} | {ratio} |")
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    errors = [key for key in table if key[2] == "error"]
    if re.search(r"failed|error|timed out|no summary", suite) or errors:
        raise SystemExit("gpu_check: failures above")


if __name__ == "__main__":
    main()
