"""GEMM throughput: C = A @ B for float32 n x n matrices, in GFLOP/s (2 n^3 flops per product).

The machine's practical compute limit: every framework ends in the same BLAS (or cuBLAS) call,
so the three figures should agree; a gap is per-call overhead or a different library.
"""
from . import row
from ..timing import rate

FRAMEWORKS = ("tensorgrad", "torch", "numpy")
DESCRIPTION = "GEMM GFLOP/s, n x n float32"
SIZES = {"full": (512, 1024, 2048), "quick": (512, 1024), "tiny": (64,)}


def run(env):
    rows = []
    for n in SIZES[env.mode]:
        a, b = env.randn(n, n), env.randn(n, n)
        stats = env.measure(lambda a=a, b=b: a @ b)
        rows.append(row(f"n={n}", "GFLOP/s", rate(stats, 2 * n**3 / 1e9), better="higher"))
    return rows
