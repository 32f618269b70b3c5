"""The matrix products of one gpt_step, timed alone: tensorgrad's BLAS against torch's, one thread.

    python benchmarks/blas_shapes.py            # GPT-mini, B=16, T=128 (the gpt_step workload)
    python benchmarks/blas_shapes.py --tiny     # toy sizes (checks the script)
    OMP_NUM_THREADS=2 python benchmarks/blas_shapes.py   # both on two threads

Every GEMM that tensorgrad's GPT-mini step runs (benchmarks/workloads/gpt_step.py), with the
operand layouts tensorgrad passes: the Linear layers' x @ W.T forward, g @ W and g^T @ x
backward, and attention's batched products over (B * heads) matrices, forward and backward.
Each product is timed on NumPy arrays and on torch tensors of the same shape and layout, and
the step's total adds them up as often as a step runs them. What it shows is the floor under
gpt_step's ratio to torch that no framework code can remove: the time the two BLAS libraries
take for the same products. tensorgrad's column is whatever its CPU backend's matmul runs: MKL
when the `mkl` wheel is installed (tensorgrad[mkl]), NumPy's OpenBLAS with TENSORGRAD_BLAS=numpy
or without it; the BLAS is named under the table.
"""
import argparse
import os
import sys
import timeit

for _name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # before NumPy or torch load a BLAS
    os.environ.setdefault(_name, os.environ.setdefault("OMP_NUM_THREADS", "1"))

import numpy as np  # noqa: E402


def products(B=16, T=128, C=128, heads=4, d_ff=512, vocab=256, layers=4):
    """(name, count per step, a's shape, b's shape, how b is laid out) for every GEMM."""
    N, hs, BH = B * T, C // heads, B * heads
    linears = [("qkv", C, 3 * C, layers), ("attn out", C, C, layers), ("ffn up", C, d_ff, layers),
               ("ffn down", d_ff, C, layers), ("head (tied)", C, vocab, 1)]
    out = []
    for name, fan_in, fan_out, count in linears:
        out.append((f"{name} fwd x @ W.T", count, (N, fan_in), (fan_out, fan_in), "T"))
        out.append((f"{name} bwd g @ W", count, (N, fan_out), (fan_out, fan_in), "N"))
        out.append((f"{name} bwd g.T @ x", count, (fan_out, N), (N, fan_in), "aT"))
    out += [("attn q @ k.T", layers, (BH, T, hs), (BH, T, hs), "T"),
            ("attn p @ v", layers, (BH, T, T), (BH, T, hs), "N"),
            ("attn bwd (x3 more)", 3 * layers, (BH, T, T), (BH, T, hs), "N")]
    return out


def operands(lib, a_shape, b_shape, layout, rng):
    a = rng.standard_normal(a_shape[::-1] if layout == "aT" else a_shape, dtype=np.float32)
    b = rng.standard_normal(b_shape, dtype=np.float32)
    if lib != "numpy":
        import torch
        a, b = torch.from_numpy(a), torch.from_numpy(b)
    transpose = (lambda t: t.swapaxes(-1, -2)) if lib == "numpy" else (lambda t: t.mT)
    if layout == "aT":
        a = transpose(a)
    if layout == "T":
        b = transpose(b)
    return a, b


TINY = dict(B=2, T=8, C=16, heads=2, d_ff=32, vocab=16, layers=1)


def best_us(fn, budget, repeat):
    """The best of `repeat` timings of fn, each over as many calls as fill `budget` seconds."""
    number = max(1, int(budget / max(timeit.timeit(fn, number=1), 1e-6)))
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main(argv=None):
    """Prints the table; returns the step's totals (NumPy µs, torch µs)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="toy sizes (checks the script)")
    args = parser.parse_args(argv)
    import torch
    threads = int(os.environ["OMP_NUM_THREADS"])
    torch.set_num_threads(threads)
    from tensorgrad.backend import get_backend
    xp = get_backend("cpu")  # tensorgrad's matmul: MKL or NumPy's, steered onto one BLAS call
    rng = np.random.default_rng(0)
    timing = dict(budget=0.001, repeat=1) if args.tiny else dict(budget=0.05, repeat=5)
    print("| product | per step | shapes | tensorgrad's matmul µs | torch µs | ratio |")
    print("|---|---:|---|---:|---:|---:|")
    totals = [0.0, 0.0]
    for name, count, a_shape, b_shape, layout in products(**(TINY if args.tiny else {})):
        a, b = operands("numpy", a_shape, b_shape, layout, rng)
        ta, tb = operands("torch", a_shape, b_shape, layout, rng)
        ours = best_us(lambda a=a, b=b: xp.matmul(a, b), **timing)
        theirs = best_us(lambda a=ta, b=tb: torch.matmul(a, b), **timing)
        totals[0] += count * ours
        totals[1] += count * theirs
        print(f"| {name} | {count} | {tuple(a.shape)} @ {tuple(b.shape)} | {ours:,.0f} | "
              f"{theirs:,.0f} | {ours / theirs:.2f} |")
    print(f"| **per step** | | | **{totals[0] / 1e3:,.1f} ms** | **{totals[1] / 1e3:,.1f} ms** | "
          f"**{totals[0] / totals[1]:.2f}** |")
    print(f"\ntensorgrad: {xp.blas_name()}, NumPy {np.__version__}; torch {torch.__version__} "
          f"({'MKL' if torch.backends.mkl.is_available() else 'its own BLAS'}); "
          f"{threads} thread{'s' * (threads != 1)}")
    return tuple(totals)


if __name__ == "__main__":
    if __package__ in (None, ""):  # run as a script: make tensorgrad importable from the repo
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
