"""tensorgrad/warmup.py: one recipe per family of compiled kernels, and what the recipes build is
what a training step runs (nothing is left to compile in the middle of a run's step)."""
import importlib
import pkgutil

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import warmup
from tensorgrad.backend import kernel_loading, overrides

numba = pytest.importorskip("numba", reason="numba is not installed: there are no kernels to "
                                            "build (pip install tensorgrad[fast])")
from numba.core.registry import CPUDispatcher  # noqa: E402

from tensorgrad.backend import kernels  # noqa: E402  (registers the overrides)


def test_every_family_of_overrides_has_a_recipe():
    families = {name.split(".")[0] for name, found in overrides.OVERRIDES.items() if found}
    # embedding: backend.scatter_add; matmul: the backend matmul's large 2-D products
    assert families | {"embedding", "matmul"} <= set(warmup.RECIPES)


def _compiled_signatures():
    """{kernel: its compiled signatures} over every Numba function of the kernel package."""
    found = {}
    for info in pkgutil.iter_modules(kernels.__path__):
        module = importlib.import_module(f"{kernels.__name__}.{info.name}")
        for value in vars(module).values():
            for dispatcher in (value, getattr(value, "serial", None),
                               getattr(value, "parallel", None)):
                if isinstance(dispatcher, CPUDispatcher):
                    name = f"{info.name}.{dispatcher.py_func.__qualname__}"
                    found[name] = {str(s) for s in dispatcher.signatures}
    return found


@pytest.mark.parametrize("threads", [1, 2])
def test_a_gpt_training_step_compiles_nothing_the_recipes_did_not(threads, monkeypatch):
    from benchmarks import workloads
    from benchmarks.workloads.gpt_step import _STEPS, MINI
    monkeypatch.setattr(tg.backend.threads, "_set_by_user", tg.backend.threads._set_by_user)
    before_threads = tg.get_num_threads()
    tg.set_num_threads(threads)  # a run's count: the recipes build the twins it runs
    try:
        with kernel_loading.warming(True):
            for family in warmup.RECIPES:
                warmup.run(family, np.dtype(np.float32))
        before = _compiled_signatures()
        env = workloads.Env("tensorgrad", "cpu", "tiny")
        idx, targets = (env.randint(MINI["vocab_size"], 16, MINI["block_size"]) for _ in "ab")
        step = _STEPS["tensorgrad"](env, MINI)
        with kernel_loading.warming(True):  # every kernel the step can use runs
            step(idx, targets)
    finally:
        tg.set_num_threads(before_threads)
    new = {name: sigs - before.get(name, set()) for name, sigs in _compiled_signatures().items()}
    assert not {name: sigs for name, sigs in new.items() if sigs}


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_decoding_compiles_nothing_the_recipes_did_not(use_cache):
    """Decoding's one-row products (with the cache) and its re-read sequence (without) run
    kernels the recipes built: a run's first tokens wait for no compilation."""
    from tensorgrad.models import GPT, GPTConfig, generate
    with kernel_loading.warming(True):
        for family in warmup.RECIPES:
            warmup.run(family, np.dtype(np.float32))
    before = _compiled_signatures()
    tg.manual_seed(0)
    model = GPT(GPTConfig.mini(block_size=40)).eval()
    with kernel_loading.warming(True):
        generate(model, tg.randint(0, 256, (1, 24)), 8, temperature=0.0, use_cache=use_cache)
    new = {name: sigs - before.get(name, set()) for name, sigs in _compiled_signatures().items()}
    assert not {name: sigs for name, sigs in new.items() if sigs}
