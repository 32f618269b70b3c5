"""Causal multi-head attention forward + backward, B=1, 4 heads, head dim 64, T = 512 ... 4096:
time and peak memory growth, tensorgrad's fused attention primitive against PyTorch's fused
F.scaled_dot_product_attention.

The measuring is benchmarks/attention.py's own (run it directly for its composite variants as
well): this workload calls its worker once per length, each in a fresh process, because a
memory high-water mark can only be read once per process. Its worker reports the median time
and the growth of the peak RSS over the first forward + backward; for tensorgrad, whose compiled
kernels it loads before that step (as every run.py child does), also what loading them added
to the resident set (Numba and LLVM: the compile-time memory).
"""
import json
import os
import subprocess
import sys

from . import row, single
from .. import attention

FRAMEWORKS = ("tensorgrad", "torch")
DEVICES = ("cpu",)  # benchmarks/attention.py measures the CPU (RSS) only
DESCRIPTION = "causal attention fwd+bwd: ms and peak memory growth"
SIZES = {"full": (512, 1024, 2048, 4096), "quick": (512, 1024), "tiny": (32, 64)}
# benchmarks/attention.py's names for the two fused kernels
IMPLEMENTATION = {"tensorgrad": "tensorgrad", "torch": "torch sdpa"}


def run(env):
    threads = os.environ.get("OMP_NUM_THREADS", str(os.cpu_count()))  # as every workload
    child_env = dict(os.environ, OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads,
                     MKL_NUM_THREADS=threads)
    name = IMPLEMENTATION[env.framework]
    if name not in attention.IMPLEMENTATIONS:
        raise RuntimeError(f"attention: benchmarks/attention.py has no implementation {name!r}; "
                           f"it has {attention.IMPLEMENTATIONS}")
    rows = []
    for T in SIZES[env.mode]:
        command = [sys.executable, attention.__file__, "--worker", name, str(T)] + (
            [] if env.mode == "full" else ["--quick"])
        done = subprocess.run(command, env=child_env, capture_output=True, text=True, check=False)
        if done.returncode:
            raise RuntimeError(f"attention T={T}: {done.stderr.strip().splitlines()[-1:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row(f"T={T}", "ms fwd+bwd", single(result["ms"])))
        rows.append(row(f"T={T}", "peak growth MiB", single(result["mib"])))
        if env.framework == "tensorgrad":  # loading the compiled kernels, before the step
            rows.append(row(f"T={T}", "kernels' RSS MiB", single(result["kernels_mib"])))
    return rows
