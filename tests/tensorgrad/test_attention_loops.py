"""Attention's two paths compiled as whole loops that call MKL's GEMM themselves (the overrides
attention.tiled and attention.whole, with their VJPs), against the same loops in array code with
the same per-step overrides, and the cases each leaves to that code: the tiled path's block loop
(kernels/tiled_attention.py) and the whole-matrix path (kernels/whole_attention.py), each over
its batch of matrices."""
import math

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.backend import get_backend, mkl_blas
from tensorgrad.backend.overrides import OVERRIDES

if get_backend("cpu").kernels() is None:  # (loads them: registers the overrides)
    pytest.skip("no compiled overrides: numba is not installed (pip install tensorgrad[fast]) "
                "or TENSORGRAD_NUMBA=0", allow_module_level=True)


WHOLE = ("attention.whole", "attention.whole_vjp")
TILED = ("attention.tiled", "attention.tiled_vjp")


def _recording(monkeypatch, names, declining=False):
    """{name: [what its override answered, call by call]} (NotImplemented: it declined and the
    array code ran); declining: the overrides decline every call."""
    taken = {}
    for name in names:
        for candidate in OVERRIDES[name]:
            def answer(*args, real=candidate.run, name=name):
                taken.setdefault(name, []).append(NotImplemented if declining else real(*args))
                return taken[name][-1]
            monkeypatch.setattr(candidate, "run", answer)
    return taken


def _inputs(case, dtype, rng):
    """q, k, v for a case; 'packed' slices them out of one (B, T, 3, H, E) projection, as a fused
    qkv Linear does, so that each is a strided view the BLAS reads in place."""
    if case == "packed":
        qkv = rng.standard_normal((2, 12, 3, 3, 8)).astype(dtype)
        return tuple(qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
    tq, tk = {"square": (9, 9), "more keys": (5, 11), "more queries": (11, 4)}.get(case, (7, 7))
    batch = (3,) if case == "3-D" else (2, 3)
    q = rng.standard_normal(batch + (tq, 8)).astype(dtype)
    k = rng.standard_normal(batch + (tk, 8)).astype(dtype)
    v = rng.standard_normal(batch + (tk, 5)).astype(dtype)
    return q, k, v


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [None, 0.3])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("wanted", ["q k v", "q", "k", "v"])
@pytest.mark.parametrize("mask", [None, "bool"])
@pytest.mark.parametrize("case", ["square", "more keys", "more queries", "3-D", "packed"])
def test_compiled_whole_path_matches_the_array_code(case, mask, wanted, causal, scale, dtype,
                                                    monkeypatch):
    """Forward and VJP, compiled, against the array code; with a bool mask the forward is the
    array code's and the VJP, which reads only P, still runs compiled (a query that sees no key
    included)."""
    if mkl_blas.gemm_address(np.dtype(dtype)) is None:
        pytest.skip("no MKL: the compiled loops call its GEMM (pip install tensorgrad[mkl])")
    rng = np.random.default_rng(11)
    arrays = _inputs(case, dtype, rng)
    probe = rng.standard_normal(arrays[0].shape[:-1] + (arrays[2].shape[-1],)).astype(dtype)
    keep = None
    if mask == "bool":
        keep = rng.random(arrays[0].shape[-2:-1] + arrays[1].shape[-2:-1]) < 0.7
        keep[1] = False
    results = []
    for declining in (False, True):
        taken = _recording(monkeypatch, WHOLE, declining)
        if not declining:
            compiled = taken
        leaves = [tg.tensor(x, requires_grad=name in wanted.split())
                  for x, name in zip(arrays, "qkv")]
        out = tg.scaled_dot_product_attention(
            *leaves, attn_mask=None if keep is None else tg.tensor(keep), is_causal=causal,
            scale=scale)
        grads = tg.grad(out, [t for t in leaves if t.requires_grad], tg.tensor(probe))
        results.append([out.detach().numpy()] + [g.numpy() for g in grads])
    assert NotImplemented not in compiled["attention.whole_vjp"]
    assert ("attention.whole" in compiled) == (mask is None)
    assert NotImplemented not in compiled.get("attention.whole", [])
    tolerance = 1e-12 if dtype == np.float64 else 3e-6
    for compiled, array_code in zip(*results):
        assert compiled.dtype == dtype
        np.testing.assert_allclose(compiled, array_code, rtol=tolerance, atol=tolerance)


def test_compiled_whole_path_steps_aside_for_what_it_does_not_take(monkeypatch):
    """Broadcast batch dims, more than two of them, a scale <= 0, columns that do not step by
    one value, and no MKL: the wrappers say None and the array code runs."""
    from tensorgrad.backend.kernels import whole_attention as whole

    q = np.ones((2, 3, 6, 4), np.float32)
    every_other = np.ones((2, 3, 6, 8), np.float32)[..., ::2]
    assert whole.whole_forward(q, q[:1], q[:1], True, 0.5) is None  # k, v broadcast over B
    assert whole.whole_forward(q[None], q[None], q[None], True, 0.5) is None  # 5-D
    assert whole.whole_forward(q, q, q, True, 0.0) is None
    assert whole.whole_forward(q, every_other, q, True, 0.5) is None
    assert whole.whole_backward(q, q, q, every_other, q, q[..., :6], 0.5, True, True, True) \
        is None
    if mkl_blas.library() is not None:  # and what it does take, with MKL's GEMM to call
        assert whole.whole_forward(q, q, q, True, 0.5) is not None
    monkeypatch.setattr(mkl_blas, "gemm_address", lambda dtype: None)
    assert whole.whole_forward(q, q, q, True, 0.5) is None
    assert whole.whole_backward(q, q, q, q, q, q[..., :6], 0.5, True, True, True) is None


@pytest.mark.parametrize("what", ["float bias", "dropout", "GQA"])
def test_biases_dropout_and_gqa_take_the_array_code(what, monkeypatch):
    """The compiled loops have no bias, dropout or head groups: with those neither runs (a bias
    that needs its gradient, dS itself, keeps the VJP in array code too)."""
    taken = _recording(monkeypatch, WHOLE)
    q = tg.randn(2, 4, 6, 8, requires_grad=True)
    kv = tg.randn(2, 2 if what == "GQA" else 4, 6, 8, requires_grad=True)
    options = {"float bias": dict(attn_mask=tg.randn(6, 6, requires_grad=True)),
               "dropout": dict(dropout_p=0.5),
               "GQA": dict(enable_gqa=True)}[what]
    tg.scaled_dot_product_attention(q, kv, kv, **options).sum().backward()
    assert all(a is NotImplemented for answers in taken.values() for a in answers)
    assert q.grad is not None


def test_the_output_is_c_contiguous_as_in_torch():
    """torch's CPU attention returns a C-contiguous (B, H, T, E) output (strides are observable:
    is_contiguous, stride); the compiled loop's does too. Laid out (B, T, H, E) underneath, the
    heads' merge would be a view, 1% of gpt_step, but the strides would differ from torch's."""
    if mkl_blas.gemm_address(np.dtype(np.float32)) is None:
        pytest.skip("no MKL: the compiled loops call its GEMM (pip install tensorgrad[mkl])")
    q = tg.randn(2, 3, 5, 4)
    out = tg.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert out.is_contiguous() and out.stride() == (60, 20, 4, 1)
    expected = tg.softmax((q @ q.mT * 0.5).masked_fill(tg.ones(5, 5).triu(1).bool(), -np.inf),
                          -1) @ q
    np.testing.assert_allclose(out.numpy(), expected.numpy(), atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("case", ["square", "more keys", "more queries", "views", "k, v broadcast",
                                  "2-D", "GQA"])
def test_compiled_tiled_loops_match_the_array_loop(case, causal, dtype, monkeypatch):
    """The tiled path's whole block loops, compiled (kernels/tiled_attention.py, calling MKL),
    against the same loop in array code, at sizes past one default tile: several row blocks,
    key blocks cut at the causal diagonal, transposed views read in place, and batch dims
    broadcast, grouped-query attention's three included."""
    if mkl_blas.gemm_address(np.dtype(dtype)) is None:
        pytest.skip("no MKL: the compiled loops call its GEMM (pip install tensorgrad[mkl])")
    rng = np.random.default_rng(3)
    tq, tk = {"more keys": (520, 900), "more queries": (900, 530)}.get(case, (560, 560))
    if case in ("views", "GQA"):  # (B, T, H, E) projections seen as (B, H, T, E)
        q = rng.standard_normal((1, tq, 4, 16)).astype(dtype).transpose(0, 2, 1, 3)
        k, v = (rng.standard_normal((1, tk, 2 if case == "GQA" else 4, 16)).astype(dtype)
                .transpose(0, 2, 1, 3) for _ in range(2))
    elif case == "2-D":
        q, k, v = (rng.standard_normal((t, 16)).astype(dtype) for t in (tq, tk, tk))
    else:
        q = rng.standard_normal((2, 3, tq, 16)).astype(dtype)
        heads = 1 if case == "k, v broadcast" else 3
        k = rng.standard_normal((2, heads, tk, 16)).astype(dtype)
        v = rng.standard_normal((2, heads, tk, 8)).astype(dtype)
    probe = rng.standard_normal(q.shape[:-1] + (v.shape[-1],)).astype(dtype)
    results = []
    for declining in (False, True):
        taken = _recording(monkeypatch, TILED, declining)
        if not declining:
            compiled = taken
        leaves = [tg.tensor(x, requires_grad=True) for x in (q, k, v)]
        out = tg.scaled_dot_product_attention(*leaves, is_causal=causal, scale=0.3,
                                              enable_gqa=case == "GQA")
        grads = tg.grad(out, leaves, tg.tensor(probe))
        results.append([out.detach().numpy()] + [g.numpy() for g in grads])
    assert all(compiled[name] and NotImplemented not in compiled[name] for name in TILED)
    tolerance = 1e-12 if dtype == np.float64 else 3e-6
    for compiled, array_loop in zip(*results):
        assert compiled.dtype == dtype
        np.testing.assert_allclose(compiled, array_loop, rtol=tolerance, atol=tolerance)


def test_compiled_tiled_loops_step_aside_for_what_the_blas_cannot_read(monkeypatch):
    """Columns that do not step by one value, or rows that overlap, cannot be handed to the
    BLAS in place; more than three batch dims are not taken; and without MKL
    (TENSORGRAD_BLAS=numpy, or no mkl wheel) there is no GEMM to call: the wrappers then say
    None and the array loop runs."""
    from tensorgrad.backend import mkl_blas
    from tensorgrad.backend.kernels import tiled_attention

    q = np.ones((300, 8), np.float32)
    lse = np.zeros((300, 1), np.float32)
    every_other = np.ones((300, 16), np.float32)[:, ::2]
    overlapping = np.lib.stride_tricks.as_strided(q, (300, 8), (4, 4))
    for bad in (every_other, overlapping):
        assert tiled_attention.tiled_forward(bad, q, q, True, 1.0, 256, 512) is None
        assert tiled_attention.tiled_backward(q, q, q, bad, q, lse, True, 1.0, True, True, True,
                                              256, 512) is None
    six = q.reshape(1, 1, 1, 1, 300, 8)
    assert tiled_attention.tiled_forward(six, six, six, True, 1.0, 256, 512) is None
    assert tiled_attention.tiled_backward(six, six, six, six, six, lse.reshape(1, 1, 1, 1, 300, 1),
                                          True, 1.0, True, True, True, 256, 512) is None
    if mkl_blas.library() is not None:  # and what it does take, with MKL's GEMM to call
        assert tiled_attention.tiled_forward(q, q, q, True, 1.0, 256, 512) is not None
    monkeypatch.setattr(mkl_blas, "gemm_address", lambda dtype: None)
    assert tiled_attention.tiled_forward(q, q, q, True, 1.0, 256, 512) is None
    assert tiled_attention.tiled_backward(q, q, q, q, q, lse, True, 1.0, True, True, True, 256,
                                          512) is None
    x = tg.randn(1, 1, 300, 8, requires_grad=True)
    expected = tg.softmax((x @ x.mT).masked_fill(tg.ones(300, 300).triu(1).bool(), -math.inf)
                          * 8 ** -0.5, -1) @ x
    got = tg.scaled_dot_product_attention(x, x, x, is_causal=True)  # the array loop
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), atol=1e-5)
