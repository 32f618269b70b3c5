"""MKL's GEMM under the CPU backend's matmul (tensorgrad/backend/mkl_blas.py): the same products
as NumPy's matmul for every layout it takes, None for what it does not, gradients unchanged, the
TENSORGRAD_BLAS=numpy switch, and a fork after a threaded GEMM."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.backend import aligned, get_backend, mkl_blas

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
needs_mkl = pytest.mark.skipif(
    mkl_blas.library() is None,
    reason="MKL not loaded: libmkl_rt not found (pip install tensorgrad[mkl]) or "
           "TENSORGRAD_BLAS=numpy")


@pytest.fixture
def every_size(monkeypatch):
    """Let MKL take the small products these tests use (it normally leaves them to NumPy)."""
    monkeypatch.setattr(mkl_blas, "MIN_WORK", 0)


def _run(code, **env):
    """Run `code` in a fresh interpreter from the repository root, with TENSORGRAD_BLAS as
    given in `env` (else unset, whatever this process has); its stdout."""
    inherited = {k: v for k, v in os.environ.items() if k != "TENSORGRAD_BLAS"}
    environment = dict(inherited, PYTHONPATH=ROOT, **env)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environment,
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


# --- layouts --------------------------------------------------------------------------------------
def _laid_out(array, layout):
    """The same values as `array` (..., r, c) in another memory layout."""
    if layout == "C":
        return array
    if layout == "F":  # each matrix column-major: a transposed view of its transpose
        return np.ascontiguousarray(array.swapaxes(-1, -2)).swapaxes(-1, -2)
    if layout == "padded":  # rows further apart than their length: a slice of a wider array
        wide = np.zeros(array.shape[:-1] + (array.shape[-1] + 3,), array.dtype)
        wide[..., :array.shape[-1]] = array
        return wide[..., :array.shape[-1]]
    if layout == "F padded":
        wide = np.zeros(array.shape[:-2] + (array.shape[-1], array.shape[-2] + 5), array.dtype)
        wide[..., :array.shape[-2]] = array.swapaxes(-1, -2)
        return wide[..., :array.shape[-2]].swapaxes(-1, -2)
    raise ValueError(layout)


LAYOUTS = ("C", "F", "padded", "F padded")


def _operands(rng, a_shape, b_shape, dtype, layout_a="C", layout_b="C"):
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal(b_shape).astype(dtype)
    return _laid_out(a, layout_a), _laid_out(b, layout_b)


def _check(a, b, ours=None):
    """MKL's product (`ours`, else mkl_blas.matmul's) equals NumPy's: float64 to round-off,
    float32 within float32's round-off of the exact product (bounded by k * eps * |a| @ |b|)."""
    ours = mkl_blas.matmul(a, b) if ours is None else ours
    assert ours is not None, f"MKL declined {a.shape} {a.strides} @ {b.shape} {b.strides}"
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert ours.dtype == a.dtype and ours.shape == exact.shape
    bound = a.shape[-1] * np.finfo(a.dtype).eps * np.matmul(np.abs(a).astype(np.float64),
                                                            np.abs(b).astype(np.float64))
    assert np.all(np.abs(ours - exact) <= bound + np.finfo(a.dtype).tiny)
    assert ours.flags.c_contiguous


SHAPES = {
    "2-D": [((m, k), (k, n)) for m, k, n in
            ((7, 5, 3), (1, 9, 4), (6, 8, 1), (1, 1, 1), (33, 17, 65))],
    "batched and broadcast": [
        ((3, 5, 4), (3, 4, 6)), ((2, 3, 5, 4), (2, 3, 4, 6)),
        ((2, 3, 5, 4), (4, 6)),         # N-D @ 2-D
        ((4, 6), (2, 3, 6, 5)),         # 2-D @ N-D: a is shared
        ((2, 3, 5, 4), (1, 1, 4, 6)),   # size-1 batch dims broadcast
        ((5, 1, 4), (5, 4, 1)), ((2, 1, 4), (2, 4, 7))],
}


@needs_mkl
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout_a", LAYOUTS)
@pytest.mark.parametrize("layout_b", LAYOUTS)
@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_every_layout(every_size, dtype, layout_a, layout_b, kind):
    rng = np.random.default_rng(0)
    for a_shape, b_shape in SHAPES[kind]:
        _check(*_operands(rng, a_shape, b_shape, dtype, layout_a, layout_b))


@needs_mkl
def test_stride_zero_broadcast_and_transposed_batches(every_size):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((6, 5, 4)).astype(np.float32)
    shared = np.broadcast_to(rng.standard_normal((4, 3)).astype(np.float32), (6, 4, 3))
    _check(a, shared)  # batch stride 0, read-only
    k = rng.standard_normal((2, 3, 7, 4)).astype(np.float32)  # attention's q @ k^T
    q = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    _check(q, k.swapaxes(-1, -2))
    heads_first = rng.standard_normal((3, 2, 5, 4)).astype(np.float32).transpose(1, 0, 2, 3)
    _check(heads_first, k.swapaxes(-1, -2))  # batch dims permuted: no one batch stride, grouped


@needs_mkl
def test_batches_that_do_not_fold_into_one_stride(every_size):
    """The grouped call, given each matrix's address: GPT's heads sliced out of one (B, T, 3H, D)
    projection, mixed broadcasting, a reversed batch."""
    rng = np.random.default_rng(5)
    qkv = rng.standard_normal((2, 7, 3 * 4, 5)).astype(np.float32).transpose(0, 2, 1, 3)
    q, k, v = qkv[:, :4], qkv[:, 4:8], qkv[:, 8:]  # (2, 4, 7, 5) views, batch strides (420, 5)
    _check(q, k.swapaxes(-1, -2))
    _check(rng.standard_normal((2, 4, 6, 7)).astype(np.float32), v)
    _check(rng.standard_normal((2, 1, 4, 6)).astype(np.float32),  # (B, 1) against (1, H)
           rng.standard_normal((1, 3, 6, 5)).astype(np.float32))
    stack = rng.standard_normal((5, 4, 6)).astype(np.float32)
    _check(stack[::-1], rng.standard_normal((5, 6, 3)).astype(np.float32)[::2].repeat(2, 0)[:5])
    folded = rng.standard_normal((4, 6, 5)).astype(np.float32).transpose(1, 0, 2)  # (6, 4, 5)
    _check(folded, rng.standard_normal((5, 3)).astype(np.float32))  # rows do not fold: batched
    _check(folded.swapaxes(-1, -2).copy().swapaxes(-1, -2),  # column-major rows: batched
           rng.standard_normal((5, 3)).astype(np.float32))


@needs_mkl
def test_the_grouped_calls_arguments_live_until_it_returns(every_size, monkeypatch):
    """Each argument of the grouped call is an array read by address. One made in the call's
    argument list was freed before MKL read it: NumPy gave its memory to the next small array,
    and MKL read a wrong group size (a crash beside a second thread, or wrong products)."""
    import ctypes
    real = mkl_blas._grouped[np.dtype(np.float32)]
    seen = []

    def spy(*args):
        reuse = [np.full(1, -7, np.intc) for _ in range(64)]  # takes any freed small block
        read = lambda address: ctypes.c_int.from_address(address).value  # noqa: E731
        seen.append((read(args[3]), read(args[4]), read(args[5]), args[14], read(args[15])))
        del reuse
        return real(*args)

    monkeypatch.setitem(mkl_blas._grouped, np.dtype(np.float32), spy)
    rng = np.random.default_rng(6)
    qkv = rng.standard_normal((2, 7, 3 * 4, 5)).astype(np.float32).transpose(0, 2, 1, 3)
    q, k = qkv[:, :4], qkv[:, 4:8]  # batch dims that do not fold: the grouped call
    _check(q, k.swapaxes(-1, -2))
    assert seen == [(7, 7, 5, 1, 8)]  # m, n, k, one group of 2 x 4 products


@needs_mkl
def test_large_k_and_one_row_one_column():
    rng = np.random.default_rng(3)
    _check(*_operands(rng, (3, 200_000), (200_000, 2), np.float32))
    _check(*_operands(rng, (1, 2048), (2048, 1024), np.float32, "C", "F"))  # a Linear's one row
    _check(*_operands(rng, (1024, 2048), (2048, 1), np.float32))


def _unaligned(shape):
    raw = np.zeros(int(np.prod(shape)) * 4 + 1, np.uint8)
    return np.frombuffer(raw.data, np.float32, count=int(np.prod(shape)), offset=1).reshape(shape)


class _Subclass(np.ndarray):
    """An ndarray subclass: its own __array_ufunc__ or methods may matter, so MKL leaves it."""


@needs_mkl
@pytest.mark.parametrize("case", [
    "1-D", "complex", "int", "float16", "mixed dtypes", "odd strides", "negative strides",
    "zero-size", "misaligned", "subclass", "small"])
def test_what_it_declines(monkeypatch, case):
    """None, so that NumPy's matmul runs (and gives its own result or error)."""
    if case != "small":
        monkeypatch.setattr(mkl_blas, "MIN_WORK", 0)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    b = rng.standard_normal((6, 5)).astype(np.float32)
    operands = {
        "1-D": (a[0], b), "complex": (a.astype(np.complex64), b.astype(np.complex64)),
        "int": (a.astype(np.int32), b.astype(np.int32)),
        "float16": (a.astype(np.float16), b.astype(np.float16)),
        "mixed dtypes": (a, b.astype(np.float64)),
        "odd strides": (rng.standard_normal((4, 12)).astype(np.float32)[:, ::2], b),
        "negative strides": (a[::-1], b), "zero-size": (a[:0], b),
        "misaligned": (_unaligned((4, 6)), b),
        "subclass": (a.view(_Subclass), b), "small": (a, b)}[case]
    assert mkl_blas.matmul(*operands) is None
    assert get_backend("cpu").matmul(*operands).shape == np.matmul(*operands).shape


def test_a_contiguous_arrays_layout_is_what_the_stride_rules_give():
    """_layout reads a C- or F-contiguous array's (flag, leading dimension) off its flags; it is
    what _matrix gives from the strides, for every shape with dims of one and any batch (empty
    arrays never get there: _takes turns them away first)."""
    rng = np.random.default_rng(11)
    for shape in ((3, 4), (1, 4), (3, 1), (1, 1), (2, 3, 4), (2, 1, 4), (5, 2, 3, 1)):
        x = rng.standard_normal(shape).astype(np.float32)
        for a in (x, np.asfortranarray(x), x.swapaxes(-1, -2), x[..., ::2, :], x[..., 1:]):
            if a.size == 0:
                continue
            assert mkl_blas._layout(a) == mkl_blas._matrix(a.shape[-2:], a.strides[-2:],
                                                           a.itemsize), (shape, a.strides)


def test_dimensions_must_fit_a_c_int():
    assert mkl_blas._matrix((3, 4), (4 * 2**31, 4), 4) is None  # leading dimension 2^31
    assert mkl_blas._matrix((3, 4), (16, 4), 4) == (mkl_blas._NO_TRANS, 4)
    assert mkl_blas._matrix((3, 4), (4, 12), 4) == (mkl_blas._TRANS, 3)
    assert mkl_blas._batch_stride((3,), (3,), (4 * 2**30,), 4) is None  # last matrix past 2^31
    assert mkl_blas._batch_stride((2, 3), (2, 3), (48, 16), 4) == 4
    assert mkl_blas._batch_stride((2, 3), (3,), (16,), 4) is None  # broadcast over the outer dim


# --- the same call from compiled code (kernels/matmul.py) -----------------------------------------
def _compiled_gemm():
    pytest.importorskip("numba", reason="numba is not installed: no compiled kernels")
    from tensorgrad.backend import kernels
    return kernels.gemm


@needs_mkl
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout_a", LAYOUTS)
@pytest.mark.parametrize("layout_b", LAYOUTS)
def test_the_compiled_call_gives_the_ctypes_calls_product(every_size, dtype, layout_a, layout_b):
    """The kernels' gemm passes MKL what mkl_blas.matmul passes it through ctypes: the product
    to round-off, in every layout (rows further apart than their length take the ctypes call
    itself). Not compared bit for bit: MKL does not promise that two calls agree to the last
    bit (its path may depend on the output's alignment)."""
    gemm = _compiled_gemm()
    rng = np.random.default_rng(8)
    for a_shape, b_shape in SHAPES["2-D"]:
        a, b = _operands(rng, a_shape, b_shape, dtype, layout_a, layout_b)
        ours = gemm(a, b)
        assert ours is not None
        _check(a, b, ours)


@needs_mkl
def test_the_compiled_call_declines_what_mkl_declines():
    gemm = _compiled_gemm()
    a = np.ones((4, 6), np.float32)
    assert gemm(a, np.ones((6, 5), np.float32)) is None  # under MKL's size threshold
    big = np.ones((256, 64), np.float32)
    assert gemm(big.astype(np.int32), big.T.astype(np.int32)) is None
    assert gemm(big, big.T.astype(np.float64)) is None


@needs_mkl
def test_the_backend_calls_mkl_from_compiled_code_once_the_kernels_load(monkeypatch):
    """A large 2-D product goes to the kernels' gemm where they run, through ctypes where they
    do not (TENSORGRAD_NUMBA=0), with the same result."""
    from tensorgrad.backend import kernels
    _compiled_gemm()
    backend = get_backend("cpu")
    rng = np.random.default_rng(9)
    x, weight = _operands(rng, (64, 256), (128, 256), np.float32)  # 2^21 multiply-adds
    if backend.kernels(x, weight, family="matmul") is None:
        pytest.skip("the compiled kernels do not run in this configuration")
    calls, real = [], kernels.gemm
    monkeypatch.setattr(kernels, "gemm", lambda a, b: calls.append(a.shape) or real(a, b))
    compiled = backend.matmul(x, weight.T)
    assert calls == [(64, 256)]
    monkeypatch.setattr(backend, "_kernels", None)  # as with TENSORGRAD_NUMBA=0
    np.testing.assert_allclose(backend.matmul(x, weight.T), compiled, rtol=1e-5, atol=1e-4)
    assert calls == [(64, 256)]


# --- through the backend and autograd -------------------------------------------------------------
@needs_mkl
def test_backend_matmul_with_the_few_rows_turn():
    """The backend's matmul on MKL: plain products, and a few rows times a transposed weight
    (turned round, then MKL) as NumPy gives them."""
    rng = np.random.default_rng(5)
    backend = get_backend("cpu")
    for m in (1, 4, 8, 16, 48, 64):
        x, weight = _operands(rng, (m, 1024), (2048, 1024), np.float32)
        np.testing.assert_allclose(backend.matmul(x, weight.T), x @ weight.T, rtol=1e-4, atol=1e-3)
    a, b = _operands(rng, (8, 64, 128), (8, 128, 96), np.float32, "F", "C")
    np.testing.assert_allclose(backend.matmul(a, b), a @ b, rtol=1e-4, atol=1e-4)


@needs_mkl
def test_gradients_through_linear_and_matmul_unchanged(monkeypatch):
    def grads():
        rng = np.random.default_rng(6)
        x = tg.tensor(rng.standard_normal((4, 64, 128)).astype(np.float32), requires_grad=True)
        w = tg.tensor(rng.standard_normal((384, 128)).astype(np.float32), requires_grad=True)
        k = tg.tensor(rng.standard_normal((4, 96, 384)).astype(np.float32), requires_grad=True)
        h = tg.nn.functional.linear(x, w)  # (4, 64, 384)
        (h @ k.mT).square().sum().backward()  # (4, 64, 384) @ (4, 384, 96)
        return x.grad.numpy(), w.grad.numpy(), k.grad.numpy()

    with_mkl = grads()
    monkeypatch.setattr(mkl_blas, "_lib", None)  # as with TENSORGRAD_BLAS=numpy
    without = grads()
    for ours, theirs in zip(with_mkl, without):
        np.testing.assert_allclose(ours, theirs, rtol=2e-4, atol=1e-3 * np.abs(theirs).max())


# --- aligned outputs -----------------------------------------------------------------------------
def _address(array):
    return array.__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_empty_aligned_starts_on_64_bytes(dtype):
    """The arrays themselves, with or without MKL: every shape starts on a 64-byte boundary,
    C-contiguous and writeable, and counts as owning its memory."""
    backend = get_backend("cpu")
    for shape in [(1, 1), (3, 5), (17, 33), (256, 784), (2, 3, 4)]:
        a = aligned.empty_aligned(shape, np.dtype(dtype))
        assert a.shape == shape and a.dtype == dtype and type(a) is np.ndarray
        assert _address(a) % 64 == 0
        assert a.flags.c_contiguous and a.flags.writeable
        assert backend.owner(a) is a
        a[...] = 2.0
        assert float(a.sum()) == 2.0 * a.size


@needs_mkl
@pytest.mark.parametrize("kernels", ["compiled", "ctypes"])
def test_a_large_products_output_is_aligned_and_its_own(monkeypatch, kernels):
    """From ALIGNED_WORK multiply-adds, matmul's and linear's outputs start on 64 bytes (MKL
    writes them faster); they behave as fresh arrays: storage_offset 0 (a view's counts from
    it, as in PyTorch), values as NumPy's."""
    if kernels == "compiled":
        _compiled_gemm()
    else:
        monkeypatch.setattr(get_backend("cpu"), "_kernels", None)  # as TENSORGRAD_NUMBA=0
    rng = np.random.default_rng(10)
    a, b = (rng.standard_normal((256, 256)).astype(np.float32) for _ in "ab")  # 2^24
    bias = rng.standard_normal(256).astype(np.float32)
    assert 256 ** 3 >= aligned.ALIGNED_WORK
    x, w = tg.tensor(a), tg.tensor(b)
    for out, expected in [(x @ w, a @ b), (x @ w.T, a @ b.T),
                          (tg.nn.functional.linear(x, w, tg.tensor(bias)), a @ b.T + bias)]:
        assert _address(out.data) % 64 == 0
        assert out.storage_offset() == 0 and out[1:].storage_offset() == 256
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-3)


@needs_mkl
def test_an_aligned_gradient_is_taken_without_a_copy():
    """A weight's gradient that is a large product's aligned output becomes its .grad as it
    is (the copy a view gets is for memory another array may see); the optimizer then updates
    the weight in place, and a second backward adds into it."""
    rng = np.random.default_rng(11)
    x, target = (tg.tensor(rng.standard_normal((256, 256)).astype(np.float32)) for _ in "ab")
    layer = tg.nn.Linear(256, 256)
    (layer(x) * target).sum().backward()  # the output's gradient is target
    grad = layer.weight.grad.data
    assert type(grad.base) is aligned.AlignedBuffer  # the product's own output, not a copy
    expected = target.numpy().T @ x.numpy()
    np.testing.assert_allclose(grad, expected, rtol=1e-4, atol=1e-3)
    before = layer.weight.detach().numpy().copy()
    tg.nn.optim.SGD(layer.parameters(), lr=0.5).step()
    np.testing.assert_allclose(layer.weight.detach().numpy(), before - 0.5 * expected, rtol=1e-4,
                               atol=1e-3)
    (layer(x) * target).sum().backward()
    np.testing.assert_allclose(layer.weight.grad.numpy(), 2 * expected, rtol=1e-4, atol=2e-3)


# --- the switch, the name, threads and fork -------------------------------------------------------
def test_tensorgrad_blas_numpy_turns_it_off():
    probe = """
        import numpy as np
        from tensorgrad.backend import mkl_blas
        a = np.ones((512, 512), np.float32)
        print(mkl_blas.name())
        print(mkl_blas.matmul(a, a) is None)
        print(any("libmkl_rt" in line for line in open("/proc/self/maps")))
    """
    default = _run(probe).split("\n")
    if not default[0].startswith("MKL"):
        pytest.skip(f"MKL is not installed here ({default[0]})")
    assert default[1:3] == ["False", "True"]
    name, declined, loaded = _run(probe, TENSORGRAD_BLAS="numpy").split("\n")[:3]
    assert name.startswith("NumPy's") and "TENSORGRAD_BLAS=numpy" in name
    assert (declined, loaded) == ("True", "False")


def test_import_does_not_load_mkl():
    assert _run("""
        import tensorgrad
        x = tensorgrad.ones(3, 3, dtype="int64") @ tensorgrad.ones(3, 3, dtype="int64")
        print(any("libmkl" in line for line in open("/proc/self/maps")))
    """).strip() == "False"


@needs_mkl
def test_thread_count_from_the_environment():
    assert _run("""
        from tensorgrad.backend import mkl_blas
        print(mkl_blas.name())
    """, MKL_NUM_THREADS="2").strip().endswith("(ctypes, 2 threads)")


@needs_mkl
@pytest.mark.parametrize("torch_first", [True, False])
def test_threaded_products_right_beside_torch(torch_first):
    """PyTorch's wheel brings GNU OpenMP; MKL threaded by Intel's runtime in the same process
    gave wrong products now and then (this shape, doubled). Both import orders, two threads."""
    pytest.importorskip("torch")
    out = _run(f"""
        import numpy as np
        if {torch_first}:
            import torch
            torch.ones(4, 4) @ torch.ones(4, 4)
        from tensorgrad.backend import mkl_blas
        mkl_blas.library()
        import torch
        torch.ones(4, 4) @ torch.ones(4, 4)
        rng = np.random.default_rng(3)
        worst = 0.0
        for m, k, n in [(1024, 2048, 1)] * 30 + [(2048, 128, 384), (384, 2048, 128)] * 3:
            a = rng.standard_normal((m, k)).astype(np.float32)
            b = rng.standard_normal((k, n)).astype(np.float32)
            exact = a.astype(np.float64) @ b
            worst = max(worst, float(np.abs(mkl_blas.matmul(a, b) - exact).max()))
        print(mkl_blas.name(), worst)
    """, MKL_NUM_THREADS="2")
    name, worst = out.rsplit(" ", 1)
    assert name.endswith("2 threads)") and float(worst) < 1e-2


@needs_mkl
def test_products_run_on_the_process_count_and_compiled_loops_on_one_thread():
    """MKL's thread count is chosen per thread: every product MKL takes gets the process's count,
    the compiled loops' products one (the loop around them is what is split), and NumPy's
    OpenBLAS, left with the small products, keeps its count until tune_process puts it on one
    thread (its spinning worker takes the core the others need: gpt_step at two threads)."""
    out = _run("""
        import numpy as np
        from threadpoolctl import threadpool_info
        from tensorgrad.backend import mkl_blas
        lib = mkl_blas.library()
        a = np.ones((128, 128), np.float32)
        assert (mkl_blas.matmul(a, a) == 128).all()  # 2^21 multiply-adds
        print(lib.MKL_Get_Max_Threads())
        mkl_blas.gemm_address(a.dtype)
        print(lib.MKL_Get_Max_Threads())
        assert (mkl_blas.matmul(a, a) == 128).all()
        print(lib.MKL_Get_Max_Threads())
        def openblas():
            return {i["num_threads"] for i in threadpool_info() if i["internal_api"] == "openblas"}
        print(*openblas())
        from tensorgrad.backend import tune_process
        tune_process()
        print(*openblas())
    """, MKL_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2")
    assert out.split() == ["2", "1", "2", "2", "1"]


@needs_mkl
@pytest.mark.parametrize("env, expected", [({"OMP_NUM_THREADS": "1"}, "1 1"),
                                           ({"OMP_NUM_THREADS": "2"}, "2 2"),
                                           ({"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "1"},
                                            "1 1"),
                                           ({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "2"},
                                            "2 2")])
def test_mkl_keeps_its_count_when_numba_starts_openmp(env, expected):
    """Left to itself, GNU-threaded MKL follows the thread's OpenMP setting, which Numba's
    OpenMP layer raises to every CPU when it starts: MKL ran two threads at OMP_NUM_THREADS=1.
    MKL_NUM_THREADS, where set, is MKL's count, whatever OMP_NUM_THREADS says."""
    pytest.importorskip("numba", reason="numba is not installed (pip install tensorgrad[fast])")
    out = _run("""
        import numpy as np
        from tensorgrad.backend import mkl_blas
        from tensorgrad.backend.kernels import jit
        lib = mkl_blas.library()
        before = lib.MKL_Get_Max_Threads()
        jit._on_openmp()  # starts Numba's threading layer
        a = np.ones((256, 256), np.float32)
        assert (mkl_blas.matmul(a, a) == 256).all()
        print(before, lib.MKL_Get_Max_Threads())
    """, **{"OMP_NUM_THREADS": "", "MKL_NUM_THREADS": "", **env})
    assert out.strip() == expected


@needs_mkl
def test_fork_after_a_threaded_gemm():
    """Worker processes forked after a two-thread GEMM (what a DataLoader with workers does) run
    their own GEMMs and finish: GNU OpenMP would hang in them, so they run MKL on one thread."""
    out = _run("""
        import multiprocessing
        import numpy as np
        from tensorgrad.backend import get_backend, mkl_blas

        def product(seed):
            a = np.random.default_rng(seed).standard_normal((256, 256)).astype(np.float32)
            return float(np.abs(get_backend("cpu").matmul(a, a.T) - a @ a.T).max())

        if __name__ == "__main__":
            product(0)
            with multiprocessing.get_context("fork").Pool(2) as pool:
                print(max(pool.map_async(product, range(4)).get(timeout=120)) < 1e-3)
    """, MKL_NUM_THREADS="2")
    assert out.strip() == "True"


@needs_mkl
def test_a_forked_child_that_sets_a_thread_count_keeps_mkl_on_one_thread():
    """set_num_threads(2) in a forked child leaves its MKL on one thread (where GNU OpenMP would
    hang), and its products finish."""
    out = _run("""
        import multiprocessing
        import numpy as np
        import tensorgrad as tg
        from tensorgrad.backend import get_backend, mkl_blas

        def product(seed):
            tg.set_num_threads(2)
            a = np.random.default_rng(seed).standard_normal((256, 256)).astype(np.float32)
            error = float(np.abs(get_backend("cpu").matmul(a, a.T) - a @ a.T).max())
            return error < 1e-3, mkl_blas.library().MKL_Get_Max_Threads()

        if __name__ == "__main__":
            product(0)
            with multiprocessing.get_context("fork").Pool(2) as pool:
                print(sorted(set(pool.map_async(product, range(4)).get(timeout=120))))
    """, MKL_NUM_THREADS="2")
    assert out.strip() == "[(True, 1)]"


@needs_mkl
@pytest.mark.parametrize("count", [1, 2])
def test_a_thread_count_set_before_mkl_loads_reaches_it(count):
    """set_num_threads before the first float product (which loads MKL) still sets MKL's
    threads, whatever MKL would have taken from the machine."""
    code = f"""
        import tensorgrad as tg
        from tensorgrad.backend import mkl_blas
        tg.set_num_threads({count})
        print(mkl_blas.library().MKL_Get_Max_Threads(), tg.get_num_threads())
    """
    unset = {k: v for k, v in os.environ.items()
             if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TENSORGRAD_BLAS")}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=dict(
        unset, PYTHONPATH=ROOT), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(count), str(count)]

