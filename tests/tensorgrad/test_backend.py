"""Backends: device names, selection, dtype normalisation, the kernels each backend provides, and
the rule that only tensorgrad/backend imports numpy or cupy."""
import ast
import math
import pathlib

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import backend as backends

SOURCE = pathlib.Path(tg.__file__).resolve().parent


# --- devices and selection ------------------------------------------------------------------------
@pytest.mark.parametrize("given, expected", [
    ("cpu", "cpu"), ("cuda", "cuda:0"), ("cuda:1", "cuda:1"),
])
def test_normalize_device(given, expected):
    assert backends.normalize_device(given) == expected


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "CPU", "cuda:"])
def test_unknown_device_is_a_clear_error(bad):
    with pytest.raises(ValueError, match=f"unknown device '{bad}'; expected 'cpu', 'cuda'"):
        backends.normalize_device(bad)


def test_cpu_backend_is_numpy_and_shared():
    cpu = backends.get_backend("cpu")
    assert cpu.name == "numpy" and cpu.device == "cpu" and cpu.xp is np
    assert backends.get_backend("cpu") is cpu and tg.ones(1)._backend is cpu


def test_cuda_is_available_agrees_with_cupy():
    available = tg.cuda_is_available()
    assert isinstance(available, bool)
    try:
        import cupy
        expected = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no GPU: all mean unavailable
        expected = False
    assert available == expected


def test_cuda_backend_without_a_gpu():
    if tg.cuda_is_available():
        pytest.skip("a GPU is available here")
    with pytest.raises(RuntimeError, match="needs CuPy and an NVIDIA GPU"):
        backends.get_backend("cuda")


def test_backend_of_array(device):
    backend = backends.get_backend(device)
    assert backends.backend_of_array(backend.zeros(2)) is backend
    with pytest.raises(TypeError, match="cannot place an array of type list"):
        backends.backend_of_array([1, 2])


def test_manual_seed_reaches_backends_created_later(monkeypatch):
    monkeypatch.setattr(backends, "_backends", {})  # as if no backend had been made yet
    tg.manual_seed(5)
    first = backends.get_backend("cpu").random_normal((4,), tg.float32)
    tg.manual_seed(5)
    np.testing.assert_array_equal(backends.get_backend("cpu").random_normal((4,), tg.float32),
                                  first)


# --- dtypes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("given, expected", [
    (None, None), ("float32", tg.float32), ("float", tg.float32), ("double", tg.float64),
    ("half", tg.float16), ("long", tg.int64), ("int", tg.int32), ("bool", tg.bool),
    (tg.float16, tg.float16), (bool, tg.bool), (np.float64, tg.float64), ("uint8", tg.uint8),
])
def test_as_dtype(given, expected):
    assert backends.as_dtype(given) == expected


def test_dtype_aliases_match_torch_names():
    assert tg.float is tg.float32 and tg.double is tg.float64 and tg.half is tg.float16
    assert tg.long is tg.int64 and tg.int is tg.int32 and tg.bool == np.dtype(bool)


def test_unknown_dtype_is_a_clear_error():
    with pytest.raises(TypeError, match="unknown dtype 'float8'; expected one of"):
        backends.as_dtype("float8")
    with pytest.raises(TypeError, match="unknown dtype"):
        tg.zeros(2, dtype=object())


# --- the contract every backend keeps (numpy on cpu, cupy on cuda) --------------------------------
def test_host_round_trip(device):
    backend = backends.get_backend(device)
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    on_device = backend.from_host(host)
    assert isinstance(backend.to_host(on_device), np.ndarray)
    np.testing.assert_array_equal(backend.to_host(on_device), host)


def test_scatter_add_accumulates_repeated_indices(device):
    backend = backends.get_backend(device)
    target = backend.zeros(4, dtype=tg.float32)
    backend.scatter_add(target, (backend.asarray([0, 2, 0, 0]),),
                        backend.asarray([1.0, 2.0, 3.0, 4.0], dtype=tg.float32))
    np.testing.assert_array_equal(backend.to_host(target), [8.0, 0.0, 2.0, 0.0])


@pytest.mark.parametrize("dtype", [tg.float16, tg.float32, tg.float64])
def test_erf_keeps_dtype(device, dtype):
    backend = backends.get_backend(device)
    x = backend.asarray([-1.0, 0.0, 0.5, 2.0], dtype=dtype)
    y = backend.erf(x)
    assert y.dtype == dtype
    np.testing.assert_allclose(backend.to_host(y).astype(float),
                               [math.erf(v) for v in (-1.0, 0.0, 0.5, 2.0)],
                               rtol=1e-3 if dtype == tg.float16 else 1e-6)


@pytest.mark.parametrize("dtype", [tg.float16, tg.float32, tg.float64])
def test_random_samplers_give_the_asked_dtype(device, dtype):
    backend = backends.get_backend(device)
    assert backend.random_normal((3, 2), dtype).dtype == dtype
    uniform = backend.to_host(backend.random_uniform((1000,), dtype))
    assert uniform.dtype == dtype and uniform.min() >= 0 and uniform.max() < 1
    ints = backend.to_host(backend.random_integers(-2, 3, (1000,), tg.int64))
    assert ints.dtype == np.int64 and set(ints.tolist()) == {-2, -1, 0, 1, 2}


def test_backend_proxies_array_module_functions(device):
    backend = backends.get_backend(device)
    assert backend.exp is backend.xp.exp  # looked up once, then a plain attribute
    assert not hasattr(backend, "no_such_function")


@pytest.mark.parametrize("a_shape, b_shape, b_transposed", [
    ((2, 5, 8), (8, 3), False),  # rows times one matrix: folded into one GEMM
    ((2, 4, 1, 8), (2, 4, 6, 8), True),  # one query against k^T (decoding)
    ((2, 4, 3, 8), (2, 4, 6, 8), True),  # several rows against k^T: laid out row-major
    ((4, 1, 8), (1, 6, 8), True),  # broadcast batch
    ((8,), (2, 8, 3), False),
])
def test_matmul_layouts_give_numpys_products(device, a_shape, b_shape, b_transposed):
    backend = backends.get_backend(device)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    if b_transposed:
        b = np.swapaxes(b, -1, -2)
    out = backend.matmul(backend.from_host(a), backend.from_host(b))
    np.testing.assert_allclose(backend.to_host(out), np.matmul(a, b), rtol=1e-12, atol=1e-12)


def test_cpu_matmul_routes_each_product(monkeypatch):
    """Which way the CPU backend's matmul sends a 2-D product: small ones straight to NumPy
    (MKL is not asked), a few float32 rows times a transposed weight turned round (on MKL's
    side of its size threshold only from 16 rows and for a weight of 2^20 elements), large
    ones offered to MKL first, when it is loaded; each gives NumPy's values."""
    from tensorgrad.backend import mkl_blas, numpy_backend
    backend = backends.get_backend("cpu")
    asked, gemms = [], []  # the first operand's shape of each call to MKL / to the GEMM
    # every MKL 2-D product is planned here, from ctypes (mkl_blas.matmul) or compiled code
    monkeypatch.setattr(mkl_blas, "gemm_2d", lambda a, b, *work: asked.append(a.shape) and None)
    real_gemm = numpy_backend.NumpyBackend._gemm
    monkeypatch.setattr(numpy_backend.NumpyBackend, "_gemm", lambda self, a, b: gemms.append(
        (a.shape, b.flags.c_contiguous)) or real_gemm(self, a, b))
    rng = np.random.default_rng(1)
    openblas = mkl_blas.library() is None  # then every product of a few rows is turned
    # (rows, in, out, dtype, turned, x^T laid out row-major when turned)
    for rows, k, n, dtype, turned, row_major in (
            (1, 128, 384, np.float32, False, False), (8, 128, 384, np.float32, True, True),
            (4, 256, 512, np.float32, True, True), (8, 512, 128, np.float32, True, False),
            (16, 128, 384, np.float32, True, False), (48, 128, 384, np.float32, openblas, False),
            (8, 1024, 1024, np.float32, openblas, False),
            (16, 1024, 1024, np.float32, True, False),
            (64, 128, 384, np.float32, False, False), (8, 128, 384, np.float64, False, False)):
        asked.clear(), gemms.clear()
        x = rng.standard_normal((rows, k)).astype(dtype)
        w = rng.standard_normal((n, k)).astype(dtype)
        np.testing.assert_allclose(backend.matmul(x, w.T), x @ w.T, rtol=1e-5, atol=1e-4)
        first = (n, k) if turned else (rows, k)
        assert gemms == [(first, row_major)], (rows, k, n, dtype)
        # MKL is asked only from its size threshold on; smaller products go to NumPy at once
        big = rows * k * n >= mkl_blas.MIN_WORK and not openblas
        assert asked == ([first] if big else []), (rows, dtype)


def test_cpu_matmul_takes_a_row_major_stack_of_rows_as_one_2d_product(monkeypatch):
    """x @ W with x (B, T, k) row-major is one 2-D product over the B * T rows, which then takes
    the 2-D path's choices (turned round, MKL from compiled code); a stack that is not
    row-major keeps the batched path. Both give NumPy's values."""
    from tensorgrad.backend import numpy_backend
    backend = backends.get_backend("cpu")
    gemms = []
    real_gemm = numpy_backend.NumpyBackend._gemm
    monkeypatch.setattr(numpy_backend.NumpyBackend, "_gemm", lambda self, a, b: gemms.append(
        a.shape) or real_gemm(self, a, b))
    rng = np.random.default_rng(2)
    w = rng.standard_normal((256, 128)).astype(np.float32)
    for x, expected in ((rng.standard_normal((2, 48, 128)).astype(np.float32), [(96, 128)]),
                        (rng.standard_normal((48, 2, 128)).astype(np.float32).swapaxes(0, 1),
                         [])):
        gemms.clear()
        np.testing.assert_allclose(backend.matmul(x, w.T), x @ w.T, rtol=1e-5, atol=1e-4)
        assert gemms == expected, gemms

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_is_the_product_plus_the_bias(device, dtype):
    """backend.linear(x, weight, bias) is x @ weight.T + bias, with or without the bias, for one
    row (decoding), a few, and enough for MKL's GEMM (the CPU kernels take the first and the
    last: kernels/matmul.py), with a row-major and a transposed weight and widths that are
    not multiples of four."""
    backend = backends.get_backend(device)
    rng = np.random.default_rng(3)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for rows, k, n in ((1, 128, 384), (1, 37, 130), (1, 0, 6), (4, 64, 96), (64, 128, 256)):
        x = rng.standard_normal((rows, k)).astype(dtype)
        for weight in (rng.standard_normal((n, k)).astype(dtype),
                       rng.standard_normal((k, n)).astype(dtype).T):
            for bias in (rng.standard_normal(n).astype(dtype), None):
                exact = x.astype(np.float64) @ weight.T.astype(np.float64)
                if bias is not None:
                    exact += bias
                on = [None if a is None else backend.from_host(a) for a in (x, weight, bias)]
                out = backend.to_host(backend.linear(*on))
                assert out.dtype == dtype and out.shape == (rows, n)
                np.testing.assert_allclose(out, exact, **tol, err_msg=f"{rows, k, n}")


def test_cupy_backend_arrays_live_on_the_gpu(device):
    if device == "cpu":
        pytest.skip("cupy backend: runs on the cuda device only")
    x = tg.randn(3, 4, device=device, requires_grad=True)
    assert type(x.data).__module__.startswith("cupy") and x.device == "cuda:0"
    (x.tanh() @ x.mT).sum().backward()
    assert type(x.grad.data).__module__.startswith("cupy")
    cpu = tg.tensor(np.asarray(x.detach()), requires_grad=True)
    (cpu.tanh() @ cpu.mT).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), np.asarray(cpu.grad), rtol=1e-5, atol=1e-6)


# --- only tensorgrad/backend imports array libraries ----------------------------------------------
ARRAY_LIBRARIES = ("numpy", "cupy", "cupyx", "scipy")


def _array_library_imports(path):
    """Lines of `path` that import an array library, statically or through importlib."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(
                node.func, "id", None)) in ("import_module", "__import__") and node.args and \
                isinstance(node.args[0], ast.Constant):
            names = [node.args[0].value]
        found += [f"{path.name}:{node.lineno} {name}" for name in names
                  if str(name).split(".")[0] in ARRAY_LIBRARIES]
    return found


def test_only_the_backend_imports_numpy_or_cupy():
    files = [p for p in SOURCE.rglob("*.py") if "backend" not in p.relative_to(SOURCE).parts]
    assert any(p.parent.name == "ops" for p in files)  # the op modules are really scanned
    offenders = [hit for path in files for hit in _array_library_imports(path)]
    assert not offenders, f"array libraries imported outside tensorgrad/backend: {offenders}"


def test_the_import_scan_would_notice(tmp_path):
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text("import numpy as np\nfrom cupy import asarray\n"
                      "import importlib\nxp = importlib.import_module('cupy')\n")
    assert len(_array_library_imports(sneaky)) == 3


def test_default_dtype_is_global_and_drives_creation_as_torch():
    torch = pytest.importorskip("torch")
    assert tg.get_default_dtype() == tg.float32
    assert (tg.tensor([1, 2]) * 0.5).dtype == tg.float32  # its constant cached at float32
    try:
        for lib in (tg, torch):
            lib.set_default_dtype(lib.float64)
        made = {
            "tensor": lambda lib: lib.tensor([1.5]), "zeros": lambda lib: lib.zeros(2),
            "randn": lambda lib: lib.randn(2), "arange": lambda lib: lib.arange(0.0, 2.0),
            "full": lambda lib: lib.full((2,), 0.5), "linspace": lambda lib: lib.linspace(0, 1, 3),
            "int times float": lambda lib: lib.tensor([1, 2]) * 0.5,
            "int tensor": lambda lib: lib.tensor([1, 2]),
            "int / int": lambda lib: lib.tensor([1, 2]) / lib.tensor([2, 2]),
            "atan2 of ints": lambda lib: lib.atan2(lib.tensor([1]), lib.tensor([2])),
        }
        for name, make in made.items():
            assert str(make(tg).dtype) == str(make(torch).dtype)[6:], name
        assert tg.nn.Linear(2, 3).weight.dtype == tg.float64
        assert tg.get_default_dtype() == tg.float64
        with pytest.raises(TypeError, match="floating point"):
            tg.set_default_dtype(tg.int64)
    finally:
        tg.set_default_dtype(tg.float32)
        torch.set_default_dtype(torch.float32)
    assert tg.zeros(1).dtype == tg.float32
