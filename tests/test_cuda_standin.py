"""The CuPy stand-in itself (tests/cupy_standin.py): its names are the real package's, and it
refuses what CuPy refuses. Runs with TENSORGRAD_CUDA_STANDIN=1, when it is installed."""
import json
import subprocess
import sys

import numpy as np
import pytest

from cupy_standin_array import MODULES as INSTALLED

pytestmark = pytest.mark.skipif(
    "cupy" not in INSTALLED,
    reason="the CuPy stand-in is on with TENSORGRAD_CUDA_STANDIN=1 and the real cupy installed")
MODULES = ("cupy", "cupy.random", "cupy.linalg", "cupy.cuda", "cupyx", "cupyx.scipy.special")


def test_each_module_has_exactly_the_real_packages_names():
    import importlib
    script = ("import importlib, json, warnings; warnings.simplefilter('ignore'); "
              "import cupy.cuda.nccl; print(json.dumps({m: sorted(n for n in dir("
              "importlib.import_module(m)) if not n.startswith('_')) for m in %r}))" % (MODULES,))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)  # a fresh interpreter: the real cupy, no stand-in
    real = json.loads(done.stdout)
    for name in MODULES:
        ours = sorted(n for n in dir(importlib.import_module(name)) if not n.startswith("_"))
        assert ours == real[name], name


def test_no_implicit_trip_to_the_host():
    import cupy
    x = cupy.arange(3.0)
    for implicit in (lambda: np.asarray(x), lambda: x.__array__(), lambda: float(x),
                     lambda: x + np.ones(3), lambda: np.ones(3) + x,
                     lambda: cupy.add(x, np.ones(3)), lambda: cupy.concatenate([x, np.ones(3)])):
        with pytest.raises(TypeError):
            implicit()
    assert isinstance(x.get(), np.ndarray) and isinstance(cupy.asnumpy(x), np.ndarray)
    assert x[1].item() == 1.0 and float(x.sum()) == 3.0


def test_cupy_semantics_where_they_differ_from_numpys():
    import cupy
    host = np.ones(3)
    x = cupy.asarray(host)
    host[0] = 5.0  # asarray copied to the device
    assert x[0].item() == 1.0
    assert type(x.sum()) is cupy.ndarray and x.sum().ndim == 0  # a 0-d array, not a scalar
    assert type(x[0]) is cupy.ndarray and x[0].ndim == 0
    assert type(np.exp(x)) is cupy.ndarray  # NumPy's ufuncs dispatch to CuPy's, as CuPy's do
    assert type(np.sum(x)) is cupy.ndarray
    assert (cupy.ones(2, dtype=cupy.float32) + 1.0).dtype == np.float32  # Python scalars are weak
    assert (cupy.ones(2, dtype=cupy.int32) + 1.5).dtype == np.float64
    assert (cupy.ones(2, dtype=cupy.int8) + 1).dtype == np.int8


def test_random_has_cupys_api_and_its_own_stream():
    import cupy
    rng = cupy.random.default_rng(0)
    assert not hasattr(rng, "permutation") and not hasattr(rng, "choice")
    draws = rng.random(4, dtype=np.float32)
    assert type(draws) is cupy.ndarray and draws.dtype == np.float32
    assert not np.allclose(cupy.asnumpy(cupy.random.default_rng(0).random(4)),
                           np.random.default_rng(0).random(4))


def test_limits_say_so():
    import cupy
    with pytest.raises(NotImplementedError, match="CUDA C\\+\\+"):
        cupy.RawKernel("extern \"C\" __global__ void f() {}", "f")
    with pytest.raises(NotImplementedError, match="world of one rank"):
        cupy.cuda.nccl.NcclCommunicator(2, b"id", 0)
