"""Efficient attention patterns against dense and tiled-exact attention: time and peak memory.

    python benchmarks/attention_patterns.py [--quick] [--plot docs/attention_patterns.png]

Causal self-attention, forward + backward, B=1, 4 heads, head dim 64, float32, at T = 1k, 2k,
4k, 8k, 16k (--quick: 1k, 2k; --tiny: toy lengths that only check the harness). Every
(implementation, T) runs in a fresh subprocess (as benchmarks/attention.py does): peak memory
is the growth of the resident-set high-water mark during the first forward + backward, time
the median of the calls that follow (at least one; benchmarks/timing.py). One BLAS thread by
default: steadier on a shared machine. Prints a markdown table; --plot draws it log-log.

Implementations (tensorgrad.nn.attention_patterns for the patterns):
  dense           matmul -> masked_fill -> softmax -> matmul, the (T, T) matrices in memory
  tiled exact     tg.scaled_dot_product_attention(is_causal=True): FlashAttention's tiles,
                  exact, O(T) memory but O(T^2) time
  sliding window  SlidingWindow(256): 256 keys back, blocks of 128 queries
  bigbird         BigBird(block_size=64): 3 window blocks, 1 global block, 3 random blocks
  strided         Strided(128, reach=1024): the previous 128 keys and every 128th within 1024
  strided full    Strided(128): every 128th key of the whole sequence (the paper's pattern;
                  its strided part costs O(T^2 / 128))
  linear          LinearAttention(): elu + 1 features, chunked causal prefix sums
"""
import argparse
import json
import math
import os
import subprocess
import sys

if __package__ in (None, ""):  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

B, HEADS, HEAD_DIM = 1, 4, 64
LENGTHS = {"full": (1024, 2048, 4096, 8192, 16384), "quick": (1024, 2048), "tiny": (64, 128)}
IMPLEMENTATIONS = ("dense", "tiled exact", "sliding window", "bigbird", "strided",
                   "strided full", "linear")
# The dense composite holds about four (B, H, T, T) float32 arrays at its peak: at 8k that is
# 4 GiB on a machine 8 people share; it is not run there (the table says so).
DENSE_LIMIT = 4096
# A run slower than this per step is not followed by the next (longer) length of the same
# implementation; the table gives the estimate instead.
SLOW_S = 60.0


def _pattern(name, tiny):
    from tensorgrad.nn.attention_patterns import BigBird, LinearAttention, SlidingWindow, Strided
    if tiny:  # toy sizes, so that the toy lengths still cover several blocks
        return {"sliding window": SlidingWindow(8), "bigbird": BigBird(block_size=8),
                "strided": Strided(8, reach=32), "strided full": Strided(8),
                "linear": LinearAttention()}[name]
    return {"sliding window": SlidingWindow(256, block_size=128),
            "bigbird": BigBird(block_size=64), "strided": Strided(128, reach=1024),
            "strided full": Strided(128), "linear": LinearAttention()}[name]


def make_step(name, T, tiny=False):
    """A function running one forward + backward of `name` at length T."""
    import tensorgrad as tg
    tg.backend.tune_process()  # malloc and thread settings, as measured
    q, k, v = (tg.randn(B, HEADS, T, HEAD_DIM, requires_grad=True) for _ in range(3))
    grad = tg.ones(B, HEADS, T, HEAD_DIM)
    future = ~tg.ones(T, T, dtype=tg.bool).tril() if name == "dense" else None
    pattern = None if name in ("dense", "tiled exact") else _pattern(name, tiny)

    def step():
        if name == "dense":
            s = (q @ k.mT) * (1.0 / math.sqrt(HEAD_DIM))  # (B, H, T, T)
            out = s.masked_fill(future, float("-inf")).softmax(-1) @ v
        elif name == "tiled exact":
            out = tg.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            out = pattern(q, k, v, is_causal=True)
        out.backward(grad)
        q.grad = k.grad = v.grad = None
        return out.detach(), v.detach()  # for tests/test_attention_patterns_benchmark.py
    return step


def worker(name, T, tiny):
    """Measure one implementation at one length; print a JSON line."""
    from benchmarks.timing import Budget, current_rss_mb, measure, peak_rss_mb, reset_peak_rss
    make_step(name, 64, tiny=True)()  # thread pools, caches, compiled kernels: not in the peak
    step = make_step(name, T, tiny)
    before = current_rss_mb()
    reset_peak_rss()
    step()  # the first call: its peak is the step's (and it warms up the layouts)
    growth = max(peak_rss_mb() - before, 0.0)
    stats = measure(step, Budget(warmup=0, min_reps=1, max_reps=5, min_time=2.0, max_time=20.0))
    print(json.dumps({"ms": stats["median"] * 1e3, "min_ms": stats["min"] * 1e3,
                      "max_ms": stats["max"] * 1e3, "mib": growth}))


def run_all(lengths, threads, tiny, timeout):
    env = dict(os.environ, **{name: str(threads) for name in (
        "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
    results = {}
    for name in IMPLEMENTATIONS:
        last = None  # (T, seconds per step) of the previous length
        for T in lengths:
            if name == "dense" and T > DENSE_LIMIT and not tiny:
                gib = 4 * B * HEADS * T * T * 4 / 2**30
                results[name, T] = {"skipped": f"not run: ~{gib:.0f} GiB of (T, T) matrices"}
                continue
            if last is not None and last[1] > SLOW_S:
                estimate = last[1] * (T / last[0]) ** 2
                results[name, T] = {"skipped": f"not run: ~{estimate:.0f} s/step (T^2)"}
                continue
            print(f"{name} T={T} ...", file=sys.stderr, flush=True)
            command = [sys.executable, os.path.abspath(__file__), "--worker", name, str(T)]
            try:
                done = subprocess.run(command + (["--tiny"] if tiny else []), env=env,
                                      capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                results[name, T] = {"skipped": f"timed out after {timeout} s"}
                last = (T, float("inf"))
                continue
            if done.returncode:
                print(done.stderr, file=sys.stderr)
                results[name, T] = {"skipped": "failed"}
                continue
            results[name, T] = json.loads(done.stdout.strip().splitlines()[-1])
            last = (T, results[name, T]["ms"] / 1e3)
    return results


def table(results, lengths, threads):
    lines = [f"Causal attention forward + backward, B={B}, {HEADS} heads, head dim {HEAD_DIM}, "
             f"float32, {threads} BLAS thread(s): median ms per step, then peak RSS growth "
             "(MiB). A shared machine: figures are noisy (tens of percent).", ""]
    for unit, key, digits in (("ms", "ms", 0), ("MiB", "mib", 0)):
        lines.append(f"| {unit} | " + " | ".join(f"T={T}" for T in lengths) + " |")
        lines.append("|---|" + "---:|" * len(lengths))
        for name in IMPLEMENTATIONS:
            cells = [results[name, T].get("skipped") or f"{results[name, T][key]:.{digits}f}"
                     for T in lengths]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def plot(results, lengths, path):
    """Time and memory against T, log-log, one line per implementation."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, key, label in ((axes[0], "ms", "forward + backward (ms)"),
                           (axes[1], "mib", "peak RSS growth (MiB)")):
        for name in IMPLEMENTATIONS:
            points = [(T, results[name, T][key]) for T in lengths
                      if "skipped" not in results[name, T] and results[name, T][key] > 0]
            if points:
                ax.plot(*zip(*points), marker="o", label=name)
        T0 = lengths[0]
        ref = [p for p in ((T, results["sliding window", T].get(key)) for T in lengths) if p[1]]
        if ref:  # slope-1 and slope-2 guides through the first sliding-window point
            base = ref[0][1]
            ax.plot(lengths, [base * T / T0 for T in lengths], "k:", lw=1, label="~T")
            ax.plot(lengths, [base * (T / T0) ** 2 for T in lengths], "k--", lw=1, label="~T^2")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length T")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=8)
    fig.suptitle(f"Causal attention, B={B}, {HEADS} heads, head dim {HEAD_DIM}, float32 (CPU)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="T = 1k, 2k")
    size.add_argument("--tiny", action="store_true", help="toy lengths: checks the harness")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per subprocess")
    parser.add_argument("--json", help="save the figures to this file")
    parser.add_argument("--plot", help="draw the log-log plot to this PNG (needs matplotlib)")
    parser.add_argument("--worker", nargs=2, metavar=("IMPLEMENTATION", "T"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker[0], int(args.worker[1]), args.tiny)
    lengths = LENGTHS["tiny" if args.tiny else "quick" if args.quick else "full"]
    results = run_all(lengths, args.threads, args.tiny, args.timeout)
    print(table(results, lengths, args.threads))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{name} T={T}": r for (name, T), r in results.items()}, f, indent=1)
    if args.plot:
        plot(results, lengths, args.plot)
    return 1 if any(r.get("skipped") == "failed" for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
