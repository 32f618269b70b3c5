"""The workloads, one module each, and the environment a workload runs in.

A workload module has FRAMEWORKS (which of "tensorgrad", "torch", "numpy" it runs), optionally
DEVICES (default both "cpu" and "cuda"), SIZES ({"full": ..., "quick": ..., "tiny": ...}), a
one-line DESCRIPTION (run.py --help lists them) and `run(env)`, which measures one framework and
returns result rows (see `row`). run.py calls it in a fresh process
per workload and framework, so the peak RSS a row reports belongs to that framework alone.
"""
import importlib
import os

import numpy

from .. import timing

NAMES = ("matmul", "op_overhead", "mlp_step", "gpt_step", "attention", "generate",
         "generate_user", "generate_nocache", "conv2d", "vit_step", "bert_step", "t5_step",
         "cold_start")
BUDGETS = {"full": timing.FULL, "quick": timing.QUICK, "tiny": timing.TINY}


def load(name):
    """The workload module called `name`."""
    if name not in NAMES:
        raise ValueError(f"unknown workload {name!r}; expected one of {', '.join(NAMES)}")
    return importlib.import_module(f"{__name__}.{name}")


def row(case, metric, stats, better="lower", spread="range"):
    """One result: a case (e.g. "n=512"), a metric with its unit (e.g. "ms/step"), the
    statistics {"median", "min", "max", "reps"} (and "q1", "q3" when timed), whether higher or
    lower is better, and the spread the report shows beside the median: "range" (min-max) or
    "quartiles" (q1-q3, for figures whose extremes are the machine's hiccups: op_overhead)."""
    return {"case": case, "metric": metric, "better": better, "spread": spread, **stats}


def single(value):
    """Statistics for a figure read once (a memory high-water mark)."""
    return {"median": value, "min": value, "max": value, "reps": 1}


class Env:
    """One framework on one device: imports it, seeds it, pins torch's threads, and times.

    framework: "tensorgrad", "torch" or "numpy" (the hand-written floor; on cuda it runs on
    CuPy). device: "cpu" or "cuda". mode: "full", "quick" or "tiny" (sizes and budget).
    """

    def __init__(self, framework, device="cpu", mode="full"):
        self.framework, self.device, self.mode = framework, device, mode
        self.budget = BUDGETS[mode]
        self.rng = numpy.random.default_rng(0)
        self.sync = None
        self.notes = {}
        if framework == "torch":
            import torch
            # as many threads as BLAS was given (run.py sets the variable; default every core)
            torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", os.cpu_count())))
            torch.manual_seed(0)
            self.notes["torch_threads"] = torch.get_num_threads()
            if device == "cuda":
                if not torch.cuda.is_available():
                    raise RuntimeError("--device cuda: this torch build sees no CUDA GPU")
                self.sync = torch.cuda.synchronize
        elif framework == "tensorgrad":
            import tensorgrad as tg
            tg.backend.tune_process()  # malloc and thread settings, as measured
            tg.manual_seed(0)
            if device == "cuda":
                if not tg.cuda_is_available():
                    raise RuntimeError("--device cuda: tensorgrad's CuPy backend sees no GPU")
                self.sync = _cupy_sync
        elif framework == "numpy":
            self.xp = numpy
            if device == "cuda":
                try:
                    import cupy
                except ImportError:
                    raise RuntimeError("--device cuda: the NumPy floor runs on CuPy, which is "
                                       "not installed") from None
                self.xp = cupy
                self.sync = _cupy_sync
        else:
            raise ValueError(f"unknown framework {framework!r}")

    def measure(self, fn, factor=1.0):
        """Time fn() under this mode's budget (time limits times `factor` for long calls)."""
        return timing.measure(fn, self.budget.scaled(factor), self.sync)

    # --- inputs: made on the host with one seeded generator, then moved, so every framework
    # --- sees the same numbers -------------------------------------------------------------
    def randn(self, *shape, requires_grad=False):
        return self.array(self.rng.standard_normal(shape, dtype=numpy.float32), requires_grad)

    def randint(self, high, *shape):
        return self.array(self.rng.integers(0, high, shape, dtype=numpy.int64))

    def array(self, host, requires_grad=False):
        """A host NumPy array as this framework's array on this device."""
        if self.framework == "torch":
            import torch
            return torch.from_numpy(host).to(self.device).requires_grad_(requires_grad)
        if self.framework == "tensorgrad":
            import tensorgrad as tg
            return tg.tensor(host, device=self.device, requires_grad=requires_grad)
        return self.xp.asarray(host)


def _cupy_sync():
    import cupy
    cupy.cuda.Device().synchronize()
