"""Causal multi-head attention, forward + backward: time and peak memory against PyTorch.

    python benchmarks/attention.py [--quick] [--threads N]

B=1, 4 heads, head dim 64, float32, causal, T = 256 ... 4096 (--quick: up to 1024). Every
(implementation, T) runs in a fresh subprocess, so a peak belongs to one implementation: peak
memory is the growth of the resident-set high-water mark over the process's RSS once its inputs
exist, during the first forward + backward; time is the median of repeated forward + backward
calls after warm-up (benchmarks/timing.py). BLAS and torch use --threads threads (default 1:
the same for everyone, and steady on a shared machine). Prints a markdown table.

Implementations:
  tensorgrad            tg.scaled_dot_product_attention: the fused primitive, tiled once both
                        lengths exceed one tile (online softmax; the VJP recomputes row tiles)
  tensorgrad untiled    the same primitive forced onto its whole-matrix path
  tensorgrad composite  matmul -> masked_fill -> softmax -> matmul in tensorgrad ops
  tensorgrad products   the tiled path's matrix products alone (two per block forward, five
                        backward), nothing else, called from Python through the backend's
                        matmul_into (~10 us of ctypes each): the BLAS's floor plus those calls,
                        which the first row's compiled loop does not make
  torch eager           the same composite in PyTorch
  torch sdpa            torch.nn.functional.scaled_dot_product_attention (fused kernels)
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
LENGTHS = {"full": (256, 512, 1024, 2048, 4096), "quick": (256, 512, 1024)}
IMPLEMENTATIONS = ("tensorgrad", "tensorgrad untiled", "tensorgrad composite",
                   "tensorgrad products", "torch eager", "torch sdpa")


def _tensorgrad(composite, T, untiled=False):
    import tensorgrad as tg
    tg.backend.tune_process()  # malloc and thread settings, as measured
    from tensorgrad.ops import attention
    if untiled:
        attention.TILE = 1 << 30
    q, k, v = (tg.randn(B, HEADS, T, HEAD_DIM, requires_grad=True) for _ in range(3))
    grad = tg.ones(B, HEADS, T, HEAD_DIM)
    future = ~tg.ones(T, T, dtype=tg.bool).tril() if composite else None  # only the composite's

    def step():
        if composite:
            s = (q @ k.mT) * (1.0 / math.sqrt(HEAD_DIM))  # (B, H, T, T)
            out = s.masked_fill(future, float("-inf")).softmax(-1) @ v
        else:
            out = tg.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.backward(grad)
        q.grad = k.grad = v.grad = None
        return out.detach(), v.detach()  # for tests/test_attention_benchmark.py
    return step


def _tensorgrad_products(T):
    import tensorgrad as tg
    tg.backend.tune_process()  # malloc and thread settings, as measured
    from tensorgrad.ops import attention  # its block sizes and spans: the same blocks
    q, k, v, g = (tg.randn(T, HEAD_DIM).data for _ in range(4))  # one head's matrices
    xp = tg.randn(1)._backend

    def step():
        # as the tiled path does: products into reused block buffers or added into their targets
        s_buffer, ds_buffer = (xp.empty(attention.TILE * attention.KEY_TILE, q.dtype)
                               for _ in range(2))
        out, dq, dk, dv = (xp.zeros((T, HEAD_DIM), q.dtype) for _ in range(4))
        for _ in range(B * HEADS):
            for rows in attention._spans(T, attention.TILE):
                for cols in attention._spans(attention._visible(T, rows, True),
                                             attention.KEY_TILE):
                    block = (rows.stop - rows.start, cols.stop - cols.start)
                    s = xp.matmul_into(q[rows], k[cols].T,  # forward: S = Q K^T
                                       attention._block_of(s_buffer, *block))
                    xp.matmul_into(s, v[cols], out[rows], accumulate=True)  # P V
                    p = xp.matmul_into(q[rows], k[cols].T,  # backward: S again, then
                                       attention._block_of(s_buffer, *block))
                    xp.matmul_into(p.T, g[rows], dv[cols], accumulate=True)  # dV = P^T dO
                    ds = xp.matmul_into(g[rows], v[cols].T,  # dP = dO V^T
                                        attention._block_of(ds_buffer, *block))
                    xp.matmul_into(ds, k[cols], dq[rows], accumulate=True)  # dQ = dS K
                    xp.matmul_into(ds.T, q[rows], dk[cols], accumulate=True)  # dK = dS^T Q
        return out, dq, dk, dv
    return step


def _torch(fused, T):
    import torch
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    q, k, v = (torch.randn(B, HEADS, T, HEAD_DIM, requires_grad=True) for _ in range(3))
    grad = torch.ones(B, HEADS, T, HEAD_DIM)
    future = None if fused else ~torch.ones(T, T, dtype=torch.bool).tril()

    def step():
        if fused:
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            s = (q @ k.mT) * (1.0 / math.sqrt(HEAD_DIM))  # (B, H, T, T)
            out = s.masked_fill(future, float("-inf")).softmax(-1) @ v
        out.backward(grad)
        q.grad = k.grad = v.grad = None
        return out.detach(), v.detach()
    return step


def step_for(name, T):
    """One forward + backward of implementation `name` at length T, as a function to time."""
    return {"tensorgrad": lambda T: _tensorgrad(False, T),
            "tensorgrad untiled": lambda T: _tensorgrad(False, T, untiled=True),
            "tensorgrad composite": lambda T: _tensorgrad(True, T),
            "tensorgrad products": _tensorgrad_products,
            "torch eager": lambda T: _torch(False, T),
            "torch sdpa": lambda T: _torch(True, T)}[name](T)


def worker(name, T, quick):
    """Measure one implementation at one length; print a JSON line."""
    from benchmarks.timing import FULL, QUICK, current_rss_mb, measure, peak_rss_mb, reset_peak_rss
    kernels_mib = 0.0
    if name.startswith("tensorgrad"):
        # The compiled kernels loaded (or built) first, as run.py's children do: else they load
        # in a background thread during the measured step, which then runs the array code and
        # counts Numba's and LLVM's memory as the step's. That memory is reported on its own.
        from tensorgrad.backend import kernel_loading
        start = current_rss_mb()
        if kernel_loading.load() is not None:
            kernel_loading.warm_up("float32")
        kernels_mib = current_rss_mb() - start
    # First calls load libraries (MKL's kernels: 14 MiB at the first big product), start thread
    # pools and fill caches: a length past one tile, with products big enough to reach MKL, keeps
    # them out of the peak below
    step_for(name, 640)()
    step = step_for(name, T)
    before = current_rss_mb()
    reset_peak_rss()  # the high-water mark restarts here: what follows is this step's peak
    step()
    growth = max(peak_rss_mb() - before, 0.0)
    budget = (QUICK if quick else FULL).scaled(1.0 + T / 1024)
    stats = measure(step, budget)
    print(json.dumps({"ms": stats["median"] * 1e3, "mib": growth, "kernels_mib": kernels_mib}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T up to 1024, fewer repetitions")
    parser.add_argument("--threads", type=int, default=1, help="BLAS / torch threads")
    parser.add_argument("--worker", nargs=2, metavar=("IMPLEMENTATION", "T"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker[0], int(args.worker[1]), args.quick)
    env = dict(os.environ, **{name: str(args.threads) for name in (
        "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
    results = {}
    for T in LENGTHS["quick" if args.quick else "full"]:
        for name in IMPLEMENTATIONS:
            print(f"T={T} {name} ...", file=sys.stderr, flush=True)
            command = [sys.executable, os.path.abspath(__file__), "--worker", name, str(T)]
            done = subprocess.run(command + (["--quick"] if args.quick else []), env=env,
                                  capture_output=True, text=True)
            if done.returncode:
                print(done.stderr, file=sys.stderr)
                results[T, name] = None
            else:
                results[T, name] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"Causal attention forward + backward, B={B}, {HEADS} heads, head dim {HEAD_DIM}, "
          f"float32, {args.threads} thread(s): median time (ms), then peak RSS growth (MiB).\n")
    lengths = LENGTHS["quick" if args.quick else "full"]
    for unit, key, digits in (("ms", "ms", 1), ("MiB", "mib", 0)):
        print(f"| {unit} | " + " | ".join(IMPLEMENTATIONS) + " |")
        print("|---:|" + "---:|" * len(IMPLEMENTATIONS))
        for T in lengths:
            cells = ["failed" if results[T, n] is None else f"{results[T, n][key]:.{digits}f}"
                     for n in IMPLEMENTATIONS]
            print(f"| T={T} | " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
