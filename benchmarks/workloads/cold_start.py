"""A run's first seconds: `import`, and the first AdamW step of GPT-mini (gpt_step's model and
batch) in a fresh interpreter, on a cold and on a warm kernel cache.

Each repetition is a new process. "cold cache": an empty Numba cache (NUMBA_CACHE_DIR in a new
temporary folder), as on a machine's first run, where tensorgrad compiles its kernels in the
background and runs the array code meanwhile. "warm cache": Numba's usual cache after
`python -m tensorgrad.warmup`. torch has no such cache: both of its rows are its first step.
"""
import os
import statistics
import subprocess
import sys
import tempfile

from . import row
from .gpt_step import MINI, TINY

FRAMEWORKS = ("tensorgrad", "torch")
DEVICES = ("cpu",)
DESCRIPTION = "seconds to import, and to run the first GPT-mini step (cold and warm cache)"
SIZES = {"full": (MINI, 16, 5), "quick": (MINI, 16, 3), "tiny": (TINY, 2, 1)}  # (config, B, reps)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

IMPORT = """
import time
start = time.perf_counter()
import {module}
print(time.perf_counter() - start)
"""
FIRST_STEP = """
import sys, time
sys.path.insert(0, {root!r})
from benchmarks import workloads
from benchmarks.workloads.gpt_step import _STEPS
env = workloads.Env({framework!r}, "cpu", "tiny")
config, batch = {config!r}, {batch}
idx, targets = (env.randint(config["vocab_size"], batch, config["block_size"]) for _ in "ab")
step = _STEPS[{framework!r}](env, config)
start = time.perf_counter()
step(idx, targets)
print(time.perf_counter() - start)
"""


def run(env):
    config, batch, reps = SIZES[env.mode]
    module = "tensorgrad" if env.framework == "tensorgrad" else "torch"
    imports, cold, warm = [], [], []
    step = FIRST_STEP.format(root=ROOT, framework=env.framework, config=config, batch=batch)
    for _ in range(reps):
        imports.append(_seconds(IMPORT.format(module=module)))
        with tempfile.TemporaryDirectory() as empty_cache:
            cold.append(_seconds(step, NUMBA_CACHE_DIR=empty_cache))
    if env.framework == "tensorgrad":
        _seconds("from tensorgrad import warmup; warmup.main([]); print(0)")
    for _ in range(reps):
        warm.append(_seconds(step))
    return [row("import", "s", _stats(imports)),
            row("first step, cold cache", "s", _stats(cold)),
            row("first step, warm cache", "s", _stats(warm))]


def _seconds(code, **env):
    """What a fresh interpreter running `code` prints last, as a float (its own timing)."""
    # as a user's run: kernels on (unless switched off) and built in the background, even when
    # this runs under the tests, which build them in the calling thread
    kernels = "0" if os.environ.get("TENSORGRAD_NUMBA") == "0" else ""
    # and with Python's bytecode cache, as a user's Python runs (a tool's environment may turn
    # it off, and then every import compiles the sources again)
    inherited = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**inherited, "TENSORGRAD_NUMBA": kernels, **env}, timeout=600)
    if done.returncode:
        raise RuntimeError(f"cold_start child failed: {done.stderr.strip()[-500:]}")
    return float(done.stdout.split()[-1])


def _stats(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "reps": len(values)}
