"""The matrix products of one gpt_step, timed alone: tensorgrad's BLAS against torch's, one thread.

    python benchmarks/blas_shapes.py            # GPT-mini, B=16, T=128 (the gpt_step workload)
    python benchmarks/blas_shapes.py --workload generate_nocache   # one no-cache greedy decode
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
or without it; the BLAS is named under the table. The last column runs the same product through
NumPy's matmul with b copied row-major first (the copy not timed): for x @ W.T, what a Linear
layer would cost if it kept its weight as (in, out), which neither framework does.

`--workload generate_nocache` lists the products of one greedy decode without a cache, as the
generate_nocache row runs it (B=1, a 16-token prompt, 64 new tokens): every step runs the whole
sequence again, so each Linear layer's product appears once per sequence length, 16 to 79 rows.
Every fourth length is timed and stands for itself and the three after it.
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


def decode_products(prompt=16, new=64, C=128, d_ff=512, vocab=256, layers=4, every=4):
    """The same for one no-cache greedy decode (generate_nocache, B=1): per sequence length L,
    the Linear layers' x @ W.T and the tied head, L rows each; every `every`-th length is listed,
    counted for `every` lengths."""
    linears = [("qkv", C, 3 * C, layers), ("attn out", C, C, layers), ("ffn up", C, d_ff, layers),
               ("ffn down", d_ff, C, layers), ("head (tied)", C, vocab, 1)]
    out = []
    for rows in range(prompt, prompt + new, every):
        steps = min(every, prompt + new - rows)
        out += [(f"{name} x @ W.T", count * steps, (rows, fan_in), (fan_out, fan_in), "T")
                for name, fan_in, fan_out, count in linears]
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
TINY_DECODE = dict(prompt=4, new=8, C=16, d_ff=32, vocab=16, layers=1)
WORKLOADS = {"gpt_step": (products, TINY, "step"),
             "generate_nocache": (decode_products, TINY_DECODE, "decode")}


def best_us(fn, budget, repeat):
    """The best of `repeat` timings of fn, each over as many calls as fill `budget` seconds."""
    number = max(1, int(budget / max(timeit.timeit(fn, number=1), 1e-6)))
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main(argv=None):
    """Prints the table; returns the workload's totals (NumPy µs, torch µs)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="gpt_step",
                        help="whose products (default gpt_step)")
    parser.add_argument("--tiny", action="store_true", help="toy sizes (checks the script)")
    args = parser.parse_args(argv)
    import torch
    threads = int(os.environ["OMP_NUM_THREADS"])
    torch.set_num_threads(threads)
    from tensorgrad.backend import get_backend
    xp = get_backend("cpu")  # tensorgrad's matmul: MKL or NumPy's, steered onto one BLAS call
    rng = np.random.default_rng(0)
    timing = dict(budget=0.001, repeat=1) if args.tiny else dict(budget=0.05, repeat=5)
    listing, tiny, unit = WORKLOADS[args.workload]
    rows = {}  # name -> [count, a's shapes, b's shape, tensorgrad µs, torch µs, row-major µs]
    for name, count, a_shape, b_shape, layout in listing(**(tiny if args.tiny else {})):
        a, b = operands("numpy", a_shape, b_shape, layout, rng)
        ta, tb = operands("torch", a_shape, b_shape, layout, rng)
        b_row_major = np.ascontiguousarray(b)
        times = [best_us(lambda a=a, b=b: xp.matmul(a, b), **timing),
                 best_us(lambda a=ta, b=tb: torch.matmul(a, b), **timing),
                 best_us(lambda a=a, b=b_row_major: np.matmul(a, b), **timing)]
        row = rows.setdefault(name, [0, [], tuple(b.shape), 0.0, 0.0, 0.0])
        row[0] += count
        row[1].append(a.shape)
        for i, us in enumerate(times):
            row[3 + i] += count * us
    print(f"| product | per {unit} | shapes | tensorgrad's matmul µs | "
          "torch µs | ratio | NumPy, b row-major µs |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for name, (count, a_shapes, b_shape, ours, theirs, row_major) in rows.items():
        lead = sorted({s[0] for s in a_shapes})
        a_text = (f"({lead[0]}-{lead[-1]}, {a_shapes[0][-1]})" if len(lead) > 1
                  else str(tuple(a_shapes[0])))
        print(f"| {name} | {count} | {a_text} @ {b_shape} | {ours:,.0f} | {theirs:,.0f} | "
              f"{ours / theirs:.2f} | {row_major:,.0f} |")
    totals = [sum(row[i] for row in rows.values()) for i in (3, 4, 5)]
    print(f"| **in all** | | | **{totals[0] / 1e3:,.1f} ms** | **{totals[1] / 1e3:,.1f} ms** | "
          f"**{totals[0] / totals[1]:.2f}** | {totals[2] / 1e3:,.1f} ms |")
    print(f"\ntensorgrad: {xp.blas_name()}, NumPy {np.__version__}; torch {torch.__version__} "
          f"({'MKL' if torch.backends.mkl.is_available() else 'its own BLAS'}); "
          f"{threads} thread{'s' * (threads != 1)}")
    return tuple(totals[:2])


if __name__ == "__main__":
    if __package__ in (None, ""):  # run as a script: make tensorgrad importable from the repo
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
