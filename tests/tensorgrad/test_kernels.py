"""The NumPy backend's fused Numba kernels against the array code they replace.

With Numba installed, the rest of the suite runs the kernels (test_ops' gradchecks, the torch
parity tests); here every op that has a kernel also runs with the kernels switched off, and the
two paths are compared directly, forward and backward, in float32 and float64.
"""
import math
import os

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.backend import get_backend, kernel_loading

CPU = get_backend("cpu")
pytest.importorskip("numba", reason="numba is not installed: the CPU backend runs without "
                                    "fused kernels (pip install tensorgrad[fast])")
if kernel_loading.mode() == "off":
    pytest.skip("TENSORGRAD_NUMBA=0: the kernels are switched off", allow_module_level=True)


@pytest.fixture
def arrays_only(monkeypatch):
    """The CPU backend with its kernels switched off: ops run their array code."""
    monkeypatch.setattr(CPU, "_kernels", None)


def _both_paths(fn, inputs, probe, monkeypatch):
    """fn's output and input gradients with the kernels, then with the array code."""
    results = []
    for kernels in (kernel_loading.load(), None):
        monkeypatch.setattr(CPU, "_kernels", kernels)
        leaves = [tg.tensor(np.asarray(x), requires_grad=True) for x in inputs]
        out = fn(*leaves)
        grads = tg.grad(out, leaves, tg.tensor(probe))
        results.append([out.detach().numpy()] + [g.numpy() for g in grads])
    return results


# Every case takes (x, w, b); ones that leave w or b out add them times 0, so that every input
# has a gradient to compare.
NORMS = {
    "layer_norm": lambda x, w, b: tg.layer_norm(x, x.shape[-1], w, b),
    "layer_norm bare": lambda x, w, b: tg.layer_norm(x, x.shape[-1]) + 0 * (w.sum() + b.sum()),
    "layer_norm, two dims": lambda x, w, b: tg.layer_norm(x, x.shape[-2:]) * w.sum() + b.sum(),
    "rms_norm": lambda x, w, b: tg.rms_norm(x, x.shape[-1], w, eps=1e-6) + 0 * b.sum(),
    "gelu tanh": lambda x, w, b: tg.gelu(x, approximate="tanh") + 0 * (w.sum() + b.sum()),
    "gelu exact": lambda x, w, b: tg.gelu(x) + 0 * (w.sum() + b.sum()),
    "relu": lambda x, w, b: tg.relu(x) + 0 * (w.sum() + b.sum()),
}


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
@pytest.mark.parametrize("shape", [(5, 7), (2, 3, 16), (1, 128)])
@pytest.mark.parametrize("name", sorted(NORMS))
def test_kernels_match_the_array_code(name, shape, dtype, monkeypatch):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    w = rng.standard_normal(shape[-1]).astype(dtype)
    b = rng.standard_normal(shape[-1]).astype(dtype)
    probe = rng.standard_normal(shape).astype(dtype)
    fused, plain = _both_paths(NORMS[name], [x, w, b], probe, monkeypatch)
    tolerance = 1e-5 if dtype == tg.float32 else 1e-12
    for a, e in zip(fused, plain):
        assert a.dtype == dtype  # float32 stays float32
        np.testing.assert_allclose(a, e, rtol=tolerance, atol=tolerance)


def test_float32_erf_gelu_is_exact_to_float32_round_off():
    # The float32 kernel's erf is a rational approximation: held against math.erf in float64
    # (and against the composite) over the range where the gate changes and far past it.
    x = np.concatenate([np.linspace(-8, 8, 40001), [0.0, 1e-30, -1e-30, 5.54, -5.55, 1e4, -1e4,
                                                    3e38, -3e38]]).astype(np.float32)
    gate = np.array([1.0 + math.erf(v * math.sqrt(0.5)) for v in x.astype(np.float64)])
    y, fused_gate = CPU.kernels(x).gelu_erf(x)
    assert y.dtype == fused_gate.dtype == np.float32
    np.testing.assert_allclose(fused_gate, gate, rtol=0, atol=1.2e-7)  # ulp(1) = 1.19e-7
    # y = x gate / 2: the gate's absolute error, scaled by |x| / 2, plus y's own rounding
    composite = tg.ops.activation._gelu_composite(tg.tensor(x.astype(np.float64)), "none")
    for expected in (0.5 * x.astype(np.float64) * gate, composite.numpy()):
        error = np.abs(y - expected)
        assert np.all(error <= 1.2e-7 * np.abs(expected) + 0.6e-7 * np.abs(x)), error.max()
    special = tg.gelu(tg.tensor([np.nan, np.inf, -np.inf], dtype=tg.float32)).numpy()
    np.testing.assert_array_equal(special, [np.nan, np.inf, np.nan])  # as the composite


def test_kernels_take_strided_and_scalar_inputs(monkeypatch):
    x = np.random.default_rng(1).standard_normal((6, 8)).T  # not contiguous
    probe = np.ones((8, 6))
    fused, plain = _both_paths(lambda t: tg.layer_norm(t, 6) * tg.gelu(t, approximate="tanh"),
                               [x], probe, monkeypatch)
    for a, e in zip(fused, plain):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)
    scalar = tg.tensor(0.7, dtype=tg.float64, requires_grad=True)
    assert tg.gradcheck(lambda t: tg.gelu(t, approximate="tanh"), [scalar])


@pytest.mark.parametrize("name", sorted(NORMS))
def test_gradcheck_on_both_paths(name, monkeypatch):
    for kernels in (kernel_loading.load(), None):
        monkeypatch.setattr(CPU, "_kernels", kernels)
        inputs = [tg.randn(*s, dtype=tg.float64, requires_grad=True) for s in ((3, 4), (4,), (4,))]
        assert tg.gradcheck(NORMS[name], inputs)
        assert tg.gradgradcheck(NORMS[name], inputs)


def test_kernels_are_used_and_can_be_switched_off(monkeypatch, arrays_only):
    assert CPU.kernels(np.zeros(3, np.float32)) is None
    monkeypatch.setattr(CPU, "_kernels", kernel_loading.load())
    assert CPU.kernels(np.zeros(3, np.float32)) is not None
    assert CPU.kernels(np.zeros(3, np.float16)) is None  # only float32 and float64
    monkeypatch.setenv("TENSORGRAD_NUMBA", "0")
    assert kernel_loading.load() is None


def test_row_scatter_add_matches_numpy_add_at():
    rng = np.random.default_rng(2)
    rows = np.array([[3, -1, 3], [0, 4, -5]])  # repeats, and negative rows counted from the end
    values = rng.standard_normal((2, 3, 2, 4)).astype(np.float32)
    expected = np.zeros((5, 2, 4), np.float32)
    np.add.at(expected, (rows,), values)
    target = np.zeros((5, 2, 4), np.float32)
    CPU.scatter_add(target, (rows,), values)
    np.testing.assert_allclose(target, expected, rtol=1e-6)
    CPU.scatter_add(target, (np.zeros((0,), np.int64),), np.zeros((0, 2, 4), np.float32))
    np.testing.assert_allclose(target, expected, rtol=1e-6)  # no rows: nothing changes
    with pytest.raises(IndexError, match="out of range"):
        CPU.scatter_add(target, (np.array([5]),), values[:1, :1, :, :].reshape(1, 2, 4))


def test_embedding_gradient_is_the_same_on_both_paths(monkeypatch):
    ids = tg.tensor([[1, 2, 1], [0, 1, 3]])
    results = []
    for kernels in (kernel_loading.load(), None):
        monkeypatch.setattr(CPU, "_kernels", kernels)
        table = tg.tensor(np.arange(20.0).reshape(5, 4), requires_grad=True)
        (tg.embedding(ids, table) ** 2).sum().backward()
        results.append(table.grad.numpy())
    np.testing.assert_array_equal(*results)


OPTIMIZERS = {  # each one's update has a compiled path: Adam's whole step, SGD's add_ with alpha
    "SGD": ("SGD", {}),
    "SGD momentum": ("SGD", {"momentum": 0.9, "dampening": 0.25}),
    "Adam": ("Adam", {"weight_decay": 0.05}),
    "AdamW": ("AdamW", {"weight_decay": 0.05}),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_optimizer_steps_are_the_same_on_both_paths(name, dtype, monkeypatch):
    from tensorgrad import nn  # tensorgrad.nn's optimizers ask the backend for the kernel

    optimizer, options = OPTIMIZERS[name]
    start = np.random.default_rng(3).standard_normal((4, 5))
    grads = np.random.default_rng(4).standard_normal((6, 4, 5))
    trajectories = []
    for kernels in (kernel_loading.load(), None):
        monkeypatch.setattr(CPU, "_kernels", kernels)
        p = nn.Parameter(tg.tensor(start, dtype=dtype))
        view = p.detach()[1]  # shares p's memory: the update is in place
        opt = getattr(nn.optim, optimizer)([p], lr=0.1, **options)
        for g in grads:
            p.grad = tg.tensor(g, dtype=dtype)
            version = p._version[0]
            opt.step()
            assert p._version[0] > version  # an in-place update, as autograd must know
        assert p.dtype == dtype and all(s.dtype == dtype for s in opt.state[p].values()
                                        if isinstance(s, tg.Tensor))
        np.testing.assert_array_equal(view.numpy(), p.detach().numpy()[1])
        trajectories.append(p.detach().numpy())
    tolerance = 1e-6 if dtype == tg.float32 else 1e-13
    np.testing.assert_allclose(*trajectories, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_linear_bias_is_the_same_on_both_paths(dtype, monkeypatch):
    """Outputs past the kernels' grain add the bias and sum its gradient in compiled loops."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 150, 64)).astype(dtype)  # 300 rows x 130 outputs: past it
    w = rng.standard_normal((130, 64)).astype(dtype)
    b = rng.standard_normal(130).astype(dtype)
    probe = rng.standard_normal((2, 150, 130)).astype(dtype)
    fused, plain = _both_paths(tg.nn.functional.linear, [x, w, b], probe, monkeypatch)
    tolerance = 1e-5 if dtype == tg.float32 else 1e-12
    for a, e in zip(fused, plain):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, e, rtol=tolerance, atol=tolerance)


CROSS_ENTROPY = {
    "plain": {},
    "weights, ignored rows, smoothing": {"weight": True, "ignore_index": 1,
                                         "label_smoothing": 0.2},
    "sum": {"reduction": "sum"},
    "none": {"reduction": "none"},
}


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
@pytest.mark.parametrize("name", sorted(CROSS_ENTROPY))
def test_cross_entropy_is_the_same_on_both_paths(name, dtype, monkeypatch):
    rng = np.random.default_rng(5)
    logits = (rng.standard_normal((9, 7)) * 4).astype(dtype)
    target = tg.tensor(rng.integers(0, 7, 9))
    options = dict(CROSS_ENTROPY[name])
    if options.pop("weight", False):
        options["weight"] = tg.tensor(rng.uniform(0.5, 2.0, 7).astype(dtype))
    probe = rng.standard_normal(9 if options.get("reduction") == "none" else ()).astype(dtype)
    fn = lambda x: tg.nn.functional.cross_entropy(x, target, **options)  # noqa: E731
    fused, plain = _both_paths(fn, [logits], probe, monkeypatch)
    tolerance = 1e-5 if dtype == tg.float32 else 1e-12
    for a, e in zip(fused, plain):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, e, rtol=tolerance, atol=tolerance)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NumPy's, on inf - inf
def test_cross_entropy_kernels_give_nan_where_the_array_code_does(monkeypatch):
    logits = np.array([[0.0, np.nan, 1.0], [np.inf, 0.0, 1.0], [-np.inf] * 3, [1.0, 2.0, 3.0]],
                      np.float32)
    target = tg.tensor(np.array([0, 1, 2, 0]))
    fn = lambda x: tg.nn.functional.cross_entropy(x, target, reduction="none")  # noqa: E731
    fused, plain = _both_paths(fn, [logits], np.ones(4, np.float32), monkeypatch)
    for a, e in zip(fused, plain):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(e))
        np.testing.assert_allclose(a[~np.isnan(a)], e[~np.isnan(e)], rtol=1e-5)
    assert np.isnan(fused[0][:3]).all() and np.isfinite(fused[0][3])


def test_relu_kernel_keeps_nan_and_gives_zero_gradient_at_zero():
    x = tg.tensor([np.nan, -1.0, 0.0, 2.0], requires_grad=True)
    y = tg.relu(x)
    y.backward(tg.ones(4))
    np.testing.assert_array_equal(y.detach().numpy(), [np.nan, 0.0, 0.0, 2.0])
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0, 1.0])  # torch's at 0 and NaN




@pytest.mark.parametrize("scale", [None, -0.7, 0.0])  # the kernels scale (before the max if <= 0)
@pytest.mark.parametrize("tiled", [False, True])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shapes", [
    ((2, 3, 5, 4), (2, 3, 5, 4)),  # square
    ((2, 3, 1, 4), (2, 3, 7, 4)),  # one query (decoding)
    ((1, 2, 6, 4), (1, 2, 3, 4)),  # more queries than keys: top-left causal
    ((1, 2, 4, 4), (1, 2, 9, 4)),  # more keys than queries
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mask", [None, "bool", "float"])
def test_attention_softmax_kernels_match_the_array_code(shapes, causal, tiled, dtype, mask,
                                                        scale, monkeypatch):
    if tiled:  # blocks of 2 queries x 3 keys: the online softmax across blocks, forward and VJP
        from tensorgrad.ops import attention
        monkeypatch.setattr(attention, "TILE", 2)
        monkeypatch.setattr(attention, "KEY_TILE", 3)
    rng = np.random.default_rng(5)
    q, k = (rng.standard_normal(s).astype(dtype) for s in shapes)
    v = rng.standard_normal(shapes[1][:-1] + (3,)).astype(dtype)
    probe = rng.standard_normal(shapes[0][:-1] + (3,)).astype(dtype)
    tq, tk = shapes[0][-2], shapes[1][-2]
    keep = rng.random((tq, tk)) < 0.7
    keep[0] = False  # query 0 attends to nothing: its row is 0 on both paths
    inputs = [q, k, v]
    if mask == "float":  # a bias with -inf where keep is False; it gets a gradient too
        inputs.append(np.where(keep, rng.standard_normal((tq, tk)), -np.inf).astype(dtype))

    def attend(q, k, v, bias=None):
        attn_mask = bias if mask == "float" else tg.tensor(keep) if mask == "bool" else None
        return tg.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=causal,
                                               scale=scale)

    fused, plain = _both_paths(attend, inputs, probe, monkeypatch)
    tolerance = 1e-12 if dtype == np.float64 else 2e-6  # float32: the kernels' own exp
    for a, e in zip(fused, plain):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, e, rtol=tolerance, atol=tolerance)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NumPy's, on the NaN
@pytest.mark.parametrize("tiled", [False, True])
def test_attention_kernels_pass_a_nan_on_as_the_array_code_does(tiled, monkeypatch):
    if tiled:
        from tensorgrad.ops import attention
        monkeypatch.setattr(attention, "TILE", 2)
        monkeypatch.setattr(attention, "KEY_TILE", 3)
    q, k, v = (np.random.default_rng(i).standard_normal((1, 2, 6, 4), dtype=np.float32)
               for i in range(3))
    k[0, 1, 2, 0] = np.nan  # head 1's key 2: every query from 2 on sees it
    fused, plain = _both_paths(
        lambda q, k, v: tg.scaled_dot_product_attention(q, k, v, is_causal=True),
        [q, k, v], np.ones((1, 2, 6, 4), np.float32), monkeypatch)
    for a, e in zip(fused, plain):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(e))
    assert np.isnan(fused[0][0, 1, 2:]).all() and not np.isnan(fused[0][0, 1, :2]).any()


def _compiled_over(scalar_exp):
    """scalar_exp applied to every value of an array in compiled code, where its overload (the
    vectorisable float32 form) is the one that runs."""
    import numba

    @numba.njit
    def each(x):
        out = np.empty_like(x)
        for i in range(x.size):
            out[i] = scalar_exp(x[i])
        return out
    return each


def _assert_within_ulps(got, x, ulps=1.5):
    """got against float64's exp of x, in float32 ulps, wherever the true value is normal."""
    true = np.exp(x.astype(np.float64))
    normal = (true >= np.finfo(np.float32).tiny) & (true <= np.finfo(np.float32).max)
    ulp = np.spacing(true[normal].astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got[normal] - true[normal]) / ulp) < ulps
    return true


def test_compiled_exp_is_within_an_ulp_of_the_true_exp():
    from tensorgrad.backend.kernels.exp import exp

    exp_all = _compiled_over(exp)
    # every float32 from far below the smallest normal result to past the largest finite one
    x = np.linspace(-100, 100, 2_000_001, dtype=np.float32)
    got = exp_all(x)
    assert got.dtype == np.float32
    true = _assert_within_ulps(got, x)
    assert np.all(got[true < np.finfo(np.float32).tiny] < np.finfo(np.float32).tiny)
    assert np.all(np.isinf(got[true > np.finfo(np.float32).max]))
    edges = np.array([-np.inf, np.inf, np.nan, 0, 88.72, -87.3], np.float32)
    np.testing.assert_array_equal(exp_all(edges)[:4], [0, np.inf, np.nan, 1])
    assert np.isfinite(exp_all(edges)[4]) and exp_all(edges)[5] > 0
    # float64 keeps the C library's exp
    x64 = np.linspace(-700, 700, 10_001)
    np.testing.assert_array_equal(exp_all(x64), [math.exp(v) for v in x64])


def test_compiled_exp_of_nonpositive_values_is_the_same_exp():
    """exp_nonpositive, the softmax's and the GELU gradient's exp (arguments <= 0): bit for bit
    exp's over 2 million float32 from -100 to 0 (so within an ulp of the true exp), 0 below
    the smallest normal result, NaN kept, and a positive argument taken as 0 (its contract,
    not an overflow)."""
    from tensorgrad.backend.kernels.exp import exp, exp_nonpositive

    exp_all = _compiled_over(exp_nonpositive)
    x = np.linspace(-100, 0, 2_000_001, dtype=np.float32)
    got = exp_all(x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, _compiled_over(exp)(x))
    true = _assert_within_ulps(got, x)
    assert np.all(got[true < np.finfo(np.float32).tiny] == 0)
    edges = np.array([-np.inf, np.nan, 0, -0.0, 3.5, np.finfo(np.float32).min], np.float32)
    np.testing.assert_array_equal(exp_all(edges), [0, np.nan, 1, 1, 1, 0])
    x64 = np.linspace(-700, 0, 10_001)
    np.testing.assert_array_equal(exp_all(x64), [math.exp(v) for v in x64])
    assert exp_all(np.array([2.0]))[0] == 1.0


def test_an_unusable_numba_falls_back_to_the_array_code(monkeypatch):
    import sys

    import numba

    import tensorgrad.backend

    def broken(*args, **kwargs):
        raise RuntimeError("cannot cache function: no locator available")

    for name in [m for m in sys.modules if m.startswith("tensorgrad.backend.kernels")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(tensorgrad.backend, "kernels")
    monkeypatch.setattr(numba, "njit", broken)
    with pytest.warns(RuntimeWarning, match="no locator available"):
        assert kernel_loading.load() is None


def test_kernels_compile_without_warnings(tmp_path):
    """Every kernel gpt_step and long attention use, compiled from nothing (an empty Numba cache,
    as on a user's first run): Numba's own warnings (an inlined exp used twice in one loop once
    set off its SSA check) would reach the user's console. About 7 s, in the default suite:
    the kernels change often, and the warning shows only on a cold cache."""
    import subprocess
    import sys

    code = """
import warnings
warnings.simplefilter("always")
import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.models import GPT, GPTConfig
for t in (8, 300):  # the whole-matrix path and the tiled one
    q, k, v = (tg.randn(1, 2, t, 16, requires_grad=True) for _ in range(3))
    tg.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
from tensorgrad.backend.kernels import jit
model = GPT(GPTConfig.mini(vocab_size=32, block_size=16, n_layer=1, n_head=2, n_embd=16, d_ff=32))
opt = nn.optim.AdamW(model.parameters(), lr=1e-3)
for threads in (1, 2):  # the plain loops, then every call split (the threaded twins)
    tg.set_num_threads(threads)
    jit.GRAIN = 0
    model(tg.randint(0, 32, (2, 16)), tg.randint(0, 32, (2, 16)))[1].backward()
    opt.step()
"""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_linear_layer_runs_the_compiled_forward_where_it_takes_the_arrays(dtype, monkeypatch):
    """kernels.linear takes one row with a row-major weight (the compiled dot products), and
    more row-major rows with a bias where MKL takes the product (the bias, then the GEMM adding
    to it), from MIN_WORK_LINEAR multiply-adds; it leaves the rest (a column-major x, say) to
    the backend's matmul and its path choices (None). What a Linear layer gives is the same
    either way."""
    from tensorgrad.backend import kernels, mkl_blas
    rng = np.random.default_rng(4)
    mkl = mkl_blas.library() is not None
    assert 16 * 128 * 128 < mkl_blas.MIN_WORK_LINEAR <= 48 * 128 * 128 < mkl_blas.MIN_WORK
    for rows, k, n, order, taken in ((1, 128, 384, "C", True), (1, 7, 5, "C", True),
                                     (4, 64, 96, "C", False), (64, 128, 256, "C", mkl),
                                     (64, 128, 256, "F", False), (16, 128, 128, "C", False),
                                     (48, 128, 128, "C", mkl)):
        x = np.asarray(rng.standard_normal((rows, k)).astype(dtype), order=order)
        weight = rng.standard_normal((n, k)).astype(dtype)
        bias = rng.standard_normal(n).astype(dtype)
        out = kernels.linear(x, weight, bias)
        assert (out is not None) == taken, (rows, k, n, order)
        if taken:
            np.testing.assert_allclose(out, x @ weight.T + bias, rtol=1e-5, atol=1e-5)
            assert out.dtype == dtype and out.flags.c_contiguous
        if rows > 1:  # without a bias there is no pass to save: the backend's product
            assert kernels.linear(x, weight, None) is None
    one = rng.standard_normal((1, 32)).astype(dtype)
    assert kernels.linear(one, rng.standard_normal((32, 8)).astype(dtype).T, None) is None
    lin = tg.nn.Linear(32, 24, dtype=tg.float32 if dtype == np.float32 else tg.float64)
    x = tg.tensor(one)
    calls, real = [], kernels.linear
    monkeypatch.setattr(kernels, "linear", lambda *a: calls.append(a[0].shape) or real(*a))
    with tg.no_grad():
        compiled = lin(x).numpy()
        assert calls == [(1, 32)]
        monkeypatch.setattr(CPU, "_kernels", None)
        np.testing.assert_allclose(lin(x).numpy(), compiled, rtol=1e-5, atol=1e-6)
    assert calls == [(1, 32)]
