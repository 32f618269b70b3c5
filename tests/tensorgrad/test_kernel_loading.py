"""backend/kernel_loading.py: on a cold cache an op runs its array code while a background
thread compiles its family of kernels (with a message), then the kernels take over; on a warm one
they run at once; only the families a run asks for are built; TENSORGRAD_NUMBA=wait and =0; a
broken kernel module is an error."""
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from tensorgrad.backend import kernel_loading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytest.importorskip("numba", reason="numba is not installed: there are no kernels to load "
                                    "(pip install tensorgrad[fast])")
F32 = np.dtype(np.float32)


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A process that has asked for no kernels yet, with an empty cache and background mode;
    each recipe records what it was run for and waits for `release`."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TENSORGRAD_NUMBA", "1")
    for name, value in (("_ready", set()), ("_asked", set()), ("_queue", []),
                        ("_failed", []), ("_announced", False), ("_worker", None)):
        monkeypatch.setattr(kernel_loading, name, value)
    release, ran = threading.Event(), []

    def run(family, dtype):
        ran.append((family, dtype, kernel_loading.is_warming()))
        assert release.wait(30)

    from tensorgrad import warmup
    monkeypatch.setattr(warmup, "run", run)
    return release, ran, tmp_path


def _wait_for_warm_up():
    for thread in threading.enumerate():
        if thread.name.startswith("tensorgrad-warmup"):
            thread.join(30)


def _until(condition):
    for _ in range(3000):
        if condition():
            return
        time.sleep(0.01)


def test_a_cold_cache_runs_the_array_code_until_the_background_build_is_done(fresh, capsys):
    release, ran, cache = fresh
    x = np.zeros(4, np.float32)
    assert not kernel_loading.ready([x], "relu") and not kernel_loading.ready([None, x], "relu")
    _until(lambda: ran)  # the thread imports Numba, says it compiles, then runs the recipe
    assert capsys.readouterr().err.count("compiling CPU kernels for float32") == 1
    release.set()
    _wait_for_warm_up()
    assert ran == [("relu", F32, True)]  # the recipe ran as the warm-up's, for relu alone
    assert kernel_loading.ready([x], "relu")
    assert [p.name for p in cache.iterdir() if p.name.startswith("tensorgrad-warm-relu-float32")]
    # another family, and float64, are asked for apart, and say nothing more
    assert not kernel_loading.ready([x], "gelu")
    assert not kernel_loading.ready([x.astype(np.float64)], "relu")
    _wait_for_warm_up()
    assert ran[1:] == [("gelu", F32, True), ("relu", np.dtype(np.float64), True)]
    assert "compiling" not in capsys.readouterr().err


def test_only_the_families_a_run_asks_for_are_built(fresh):
    release, ran, _ = fresh
    release.set()
    x = np.zeros(4, np.float32)
    for family in ("layer_norm", "linear", "layer_norm"):
        kernel_loading.ready([x], family)
    _wait_for_warm_up()
    assert [family for family, *_ in ran] == ["layer_norm", "linear"]
    assert kernel_loading.ready([x], "linear") and not kernel_loading.ready([x], "attention")
    _wait_for_warm_up()


def test_a_warm_cache_runs_the_kernels_at_once_and_says_nothing(fresh, monkeypatch, capsys):
    release, ran, cache = fresh
    release.set()
    kernel_loading.warm_up("float32", ["relu"])  # what `python -m tensorgrad.warmup` does
    monkeypatch.setattr(kernel_loading, "_ready", set())  # a new process, the same cache
    x = np.zeros(3, np.float32)
    assert kernel_loading.ready([x], "relu")  # loaded from the cache at each kernel's first call
    assert not kernel_loading.ready([x], "gelu")  # never built: in the background
    _until(lambda: len(ran) == 2)
    assert capsys.readouterr().err.count("compiling") == 1 and ran[1][0] == "gelu"
    _wait_for_warm_up()


def test_the_warmup_builds_every_family(fresh):
    from tensorgrad import warmup
    release, ran, _ = fresh
    release.set()
    kernel_loading.warm_up("float64")
    assert [family for family, *_ in ran] == list(warmup.RECIPES)
    x = np.zeros(3, np.float64)
    assert all(kernel_loading.ready([x], family) for family in warmup.RECIPES)
    assert kernel_loading.ready([x])  # a caller naming no family: every one is built


def test_a_broken_kernel_module_is_an_error_at_the_next_op(fresh, monkeypatch):
    def load():
        raise SyntaxError("a typo in a kernel")

    monkeypatch.setattr(kernel_loading, "load", load)
    x = np.zeros(3, np.float32)
    assert not kernel_loading.ready([x], "relu")
    _wait_for_warm_up()
    with pytest.raises(SyntaxError, match="a typo in a kernel"):
        kernel_loading.ready([x], "relu")


def test_other_dtypes_start_nothing(fresh):
    for dtype in (np.float16, np.int64, np.bool_):
        assert not kernel_loading.ready([np.zeros(3, dtype)], "relu")
    assert not kernel_loading._asked and kernel_loading._worker is None


def test_wait_mode_builds_in_the_calling_thread(fresh, monkeypatch):
    monkeypatch.setenv("TENSORGRAD_NUMBA", "wait")
    assert kernel_loading.ready([np.zeros(3, np.float32)], "relu")
    assert not [t for t in threading.enumerate() if t.name.startswith("tensorgrad-warmup")]


def test_numba_0_loads_no_kernels(monkeypatch):
    monkeypatch.setenv("TENSORGRAD_NUMBA", "0")
    assert kernel_loading.load() is None


def test_the_warmup_command_builds_the_kernels_and_its_help_runs_nothing():
    done = subprocess.run([sys.executable, "-m", "tensorgrad.warmup", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "--dtype" in done.stdout and "compiling" not in done.stdout
    done = subprocess.run([sys.executable, "-m", "tensorgrad.warmup"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    if kernel_loading.mode() == "off":  # TENSORGRAD_NUMBA=0 reaches the command too
        assert "no compiled kernels to build" in done.stdout
    else:
        assert "compiling CPU kernels for float32 ... done" in done.stdout


LOAD_FROM_THE_CACHE = """
import json, sys
import numba
import numpy as np
import tensorgrad
from numba.core.dispatcher import Dispatcher
from tensorgrad.backend import kernels
from tensorgrad.nn import functional as F
x = np.random.default_rng(0).standard_normal((64, 1024)).astype(np.float32)
t = tensorgrad.tensor(x, requires_grad=True)
out = F.layer_norm(t, (1024,))
out.sum().backward()  # the VJP's kernel makes its own arrays inside its loop (jit.new_array)
y = out.detach().numpy()
expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
q = np.random.default_rng(1).standard_normal((300, 16)).astype(np.float32)
tq = tensorgrad.tensor(q[None, None], requires_grad=True)
attended = F.scaled_dot_product_attention(tq, tq, tq, is_causal=True)  # 300 > a tile: tiled
attended.sum().backward()  # its kernels view blocks of their buffers (jit.matrix_view)
scores = np.where(np.tri(300, dtype=bool), q @ q.T / 4.0, -np.inf)
weights = np.exp(scores - scores.max(-1, keepdims=True))
weights /= weights.sum(-1, keepdims=True)
seen = {"close": bool(np.abs(y - expected).max() < 1e-4
                      and np.abs(attended.detach().numpy()[0, 0] - weights @ q).max() < 1e-4
                      and np.isfinite(tq.grad.numpy()).all()),
        "registries": "numba.np.linalg" in sys.modules,
        "numpy.empty's module": "numba.np.arrayobj" in sys.modules}
modules = [m for name, m in sys.modules.items() if name.startswith(kernels.__name__ + ".")]
compiled = [kernel for module in modules for value in vars(module).values()
            for kernel in (value, getattr(value, "serial", None), getattr(value, "parallel", None))
            if isinstance(kernel, Dispatcher)]
seen["loaded"] = sum(sum(kernel.stats.cache_hits.values()) for kernel in compiled)
seen["compiled"] = sum(sum(kernel.stats.cache_misses.values()) for kernel in compiled)
from tensorgrad.backend.kernels import activation
relu = activation._relu_loop.serial
x = np.linspace(-1.0, 1.0, 9, dtype=np.float32)
y = np.empty_like(x)
relu(x, y)
libraries = [result.library for kernel in compiled for result in kernel.overloads.values()]
seen["bitcode parsed"] = sum(getattr(library, "_bitcode", None) is None for library in libraries)
seen["libraries"] = sorted({type(library).__name__ for library in libraries})
(relu_library,) = [result.library for result in relu.overloads.values()]
other = next(library for library in libraries if library is not relu_library)
seen["no such symbol"] = other.get_pointer_to_function("no_such_symbol")
seen["relu bitcode waits"] = relu_library._bitcode is not None
@numba.njit
def doubled_relu(x):  # compiled here: it links the loaded kernel's bitcode in
    y = np.empty_like(x)
    relu(x, y)
    return y * 2
seen["linked"] = doubled_relu(x).tolist() == (np.maximum(x, 0) * 2).tolist()
seen["relu bitcode parsed"] = relu_library._bitcode is None
@numba.njit
def squares(a):  # array arithmetic and a reduction: registries a kernel's load did not install
    return np.sum(a * a)
seen["a new function compiles"] = float(squares(np.arange(3.0)))
print(json.dumps(seen))
"""


def test_a_cached_kernel_loads_without_numbas_compiler_registries():
    # they serve compiling (benchmarks/README.md: cold_start), which still works after, as
    # does a compilation calling a loaded kernel, whose bitcode is parsed only then
    if kernel_loading.mode() == "off":
        pytest.skip("TENSORGRAD_NUMBA=0: no kernels to load")
    env = {**os.environ, "TENSORGRAD_NUMBA": "wait"}
    runs = [subprocess.run([sys.executable, "-c", LOAD_FROM_THE_CACHE], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600) for _ in "12"]
    assert all(run.returncode == 0 for run in runs), runs[-1].stderr[-2000:]
    first, second = (json.loads(run.stdout.splitlines()[-1]) for run in runs)
    assert first["close"] and first["a new function compiles"] == 5.0  # compiled, or loaded
    assert second == {"close": True, "registries": False, "numpy.empty's module": False,
                      "loaded": second["loaded"],
                      "compiled": 0, "a new function compiles": 5.0,
                      # kernels/disk_cache.py: the bitcode waits for a compilation that links it
                      "bitcode parsed": 0, "libraries": ["CachedLibrary"],
                      "no such symbol": 0,
                      "relu bitcode waits": True, "linked": True, "relu bitcode parsed": True}
    assert second["loaded"] > 0


def test_the_collector_pauses_for_a_load_and_is_left_as_the_user_set_it():
    """collector_paused turns Python's garbage collector off inside and back on after, even
    when the load fails; a collector the user switched off stays off."""
    import gc
    assert gc.isenabled()
    with pytest.raises(RuntimeError), kernel_loading.collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("a load that fails")
    assert gc.isenabled()
    gc.disable()
    try:
        with kernel_loading.collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


EXTENSIONS = """
import json
import numpy as np
from numba.core import entrypoints
from tensorgrad.backend import kernel_loading
kernels = kernel_loading.load()
x = np.linspace(-1.0, 1.0, 9, dtype=np.float32)
y = np.empty_like(x)
kernels.activation._relu_loop.serial(x, y)
print(json.dumps({"looked for": entrypoints._already_initialized, "relu": y.tolist()}))
"""


def test_numbas_extensions_are_looked_for_before_a_kernel_compiles_not_when_it_loads(tmp_path):
    # looking for them reads every installed package's metadata (benchmarks/README.md:
    # cold_start, warm cache); a compilation still finds them first, as Numba's own would
    if kernel_loading.mode() == "off":
        pytest.skip("TENSORGRAD_NUMBA=0: no kernels to load")
    env = {**os.environ, "TENSORGRAD_NUMBA": "wait", "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", EXTENSIONS], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600) for _ in "12"]
    assert all(run.returncode == 0 for run in runs), runs[-1].stderr[-2000:]
    compiled, loaded = (json.loads(run.stdout.splitlines()[-1]) for run in runs)
    relu = [0.0] * 4 + [0.0, 0.25, 0.5, 0.75, 1.0]
    assert compiled == {"looked for": True, "relu": relu}
    assert loaded == {"looked for": False, "relu": relu}


def _plus_one(x):  # a kernel made by the test below
    return x + 1


def test_a_numba_without_the_pieces_the_kernels_cache_keeps_gets_numbas_own_cache(monkeypatch):
    from numba.core.caching import FunctionCache
    from tensorgrad.backend.kernels import disk_cache, jit
    ours = jit.jit(_plus_one)
    assert type(ours._cache) is disk_cache.DiskCache
    assert ours._compilation_chain_init_hook is disk_cache.find_extensions_when_compiling
    monkeypatch.setattr(disk_cache, "USABLE", False)
    numbas = jit.jit(_plus_one)
    assert type(numbas._cache) is FunctionCache
    assert "_compilation_chain_init_hook" not in vars(numbas)
    assert numbas(2) == 3
