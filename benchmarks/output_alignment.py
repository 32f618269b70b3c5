"""MKL's GEMM writing its output at each 16-byte step from a 64-byte boundary: the large 2-D
products of mlp_step and gpt_step, timed alone, one offset after another in turn.

    python benchmarks/output_alignment.py            # one thread
    OMP_NUM_THREADS=2 python benchmarks/output_alignment.py
    python benchmarks/output_alignment.py --tiny     # toy sizes (checks the script)

Why: NumPy's arrays start where malloc puts them, 16 bytes past a 64-byte boundary or 48 as
often as on one, and PyTorch's allocator starts every tensor on 64. tensorgrad makes a large
product's output 64-byte aligned (tensorgrad/backend/aligned.py, from ALIGNED_WORK
multiply-adds); this shows what that is worth, product by product. Each offset's column is the
median over rounds of the best of a few calls; the ratio is the worst offset's time over the
aligned one's. Needs MKL (tensorgrad[mkl]).
"""
import argparse
import os
import statistics
import sys
import time

for _name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # before NumPy loads a BLAS
    os.environ.setdefault(_name, os.environ.setdefault("OMP_NUM_THREADS", "1"))

import numpy as np  # noqa: E402

if __package__ in (None, ""):  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import blas_shapes  # noqa: E402

OFFSETS = (0, 16, 32, 48)  # bytes past a 64-byte boundary


def products(tiny=False):
    """(name, a's shape, b's shape, b's layout) for mlp_step's products and gpt_step's 2-D
    ones, in blas_shapes.py's terms."""
    mlp = [("mlp fc1 fwd x @ W.T", (128, 784), (512, 784), "T"),
           ("mlp fc2 fwd x @ W.T", (128, 512), (512, 512), "T"),
           ("mlp fc2 bwd g @ W", (128, 512), (512, 512), "N"),
           ("mlp fc2 bwd g.T @ x", (512, 128), (128, 512), "aT"),
           ("mlp fc1 bwd g.T @ x", (512, 128), (128, 784), "aT")]
    gpt = [(f"gpt {name}", a, b, layout)
           for name, _, a, b, layout in blas_shapes.products(**(blas_shapes.TINY if tiny else {}))
           if len(a) == 2]
    if tiny:
        mlp = [(name, tuple(max(8, n // 16) for n in a), tuple(max(8, n // 16) for n in b),
                layout) for name, a, b, layout in mlp]
    return mlp + gpt


def _outputs(m, n, dtype):
    """One (m, n) array at each offset, in one buffer of their own."""
    size = m * n * dtype.itemsize
    outs = {}
    for offset in OFFSETS:
        memory = np.empty(size + 128, np.uint8)
        start = -memory.__array_interface__["data"][0] % 64 + offset
        outs[offset] = np.ndarray((m, n), dtype, memory, start)
    return outs


def main(argv=None):
    """Prints the table; returns {product: {offset: µs}} (empty without MKL)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="toy sizes (checks the script)")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    from tensorgrad.backend import mkl_blas
    if mkl_blas.library() is None:
        print("MKL is not loaded (pip install tensorgrad[mkl], TENSORGRAD_BLAS unset): nothing "
              "to time")
        return {}
    rounds, calls = (2, 1) if args.tiny else (args.rounds, 3)
    least = mkl_blas.MIN_WORK
    if args.tiny:
        mkl_blas.MIN_WORK = 0  # let MKL take the toy products
    try:
        table = _timed(products(args.tiny), rounds, calls)
    finally:
        mkl_blas.MIN_WORK = least
    print("| product | shapes | " + " | ".join(f"+{o} B µs" for o in OFFSETS)
          + " | worst / aligned |")
    print("|---|---|" + "---:|" * (len(OFFSETS) + 1))
    for (name, a_shape, b_shape, layout), us in zip(products(args.tiny), table.values()):
        shapes = f"{a_shape} @ {b_shape}{'.T' if layout == 'T' else ''}"
        print(f"| {name} | {shapes} | " + " | ".join(f"{us[o]:,.0f}" for o in OFFSETS)
              + f" | {max(us.values()) / us[0]:.3f} |")
    print(f"\n{mkl_blas.name()}; {os.environ['OMP_NUM_THREADS']} thread(s); NumPy {np.__version__}")
    return table


def _timed(listed, rounds, calls):
    """{product: {offset: median µs}} for the (name, a, b, layout) products listed."""
    from tensorgrad.backend import mkl_blas
    rng = np.random.default_rng(0)
    table = {}
    for name, a_shape, b_shape, layout in listed:
        a, b = blas_shapes.operands("numpy", a_shape, b_shape, layout, rng)
        outs = _outputs(a.shape[0], b.shape[1], a.dtype)
        times = {offset: [] for offset in OFFSETS}
        mkl_blas.gemm_into(a, b, outs[0], False)  # MKL's first call of a shape: not timed
        for r in range(rounds):
            # each round in another order, so that no offset always follows the same one
            order = OFFSETS[r % len(OFFSETS):] + OFFSETS[:r % len(OFFSETS)]
            for offset in order:
                best = float("inf")
                for _ in range(calls):
                    start = time.perf_counter()
                    if not mkl_blas.gemm_into(a, b, outs[offset], False):
                        raise RuntimeError(f"MKL did not take {name}: {a.shape} @ {b.shape}")
                    best = min(best, time.perf_counter() - start)
                times[offset].append(best)
        table[name] = {offset: statistics.median(t) * 1e6 for offset, t in times.items()}
    return table


if __name__ == "__main__":
    main()
