"""The matrix-product family against PyTorch (ops/matmul.py, ops/products.py): mm, bmm, the scaled
add*-products, inner, kron, tensordot, trace, cross, cdist; values and gradients in float64."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402
from torch_parity import FAST, check, seeds, values  # noqa: E402

import tensorgrad as tg  # noqa: E402


# --- the matrix-product family -----------------------------------------------------------------
sides = st.integers(0, 4)


@FAST
@given(n=sides, m=sides, p=sides, b=st.integers(1, 3), seed=seeds)
def test_matrix_products(n, m, p, b, seed):
    A, B, v, w = values(seed, (n, m), (m, p), (m,), (n,))
    check(tg.mm, torch.mm, A, B, seed=seed)
    check(lambda x, y: x.mm(y), lambda x, y: x.mm(y), A, B, seed=seed)
    check(tg.mv, torch.mv, A, v, seed=seed)
    check(tg.dot, torch.dot, v, v * 2, seed=seed)
    check(lambda x, y: x.vdot(y), lambda x, y: x.vdot(y), v, v + 1, seed=seed)
    check(tg.outer, torch.outer, v, w, seed=seed)
    check(lambda x, y: x.ger(y), lambda x, y: x.ger(y), w, v, seed=seed)
    X, Y = values(seed + 1, (b, n, m), (b, m, p))
    check(tg.bmm, torch.bmm, X, Y, seed=seed)


@FAST
@given(n=sides, m=sides, p=sides, b=st.integers(0, 3), seed=seeds, data=st.data(),
       scale=st.sampled_from([(1, 1), (0.5, -2.0), (0, 1.5)]))
def test_scaled_products(n, m, p, b, seed, data, scale):
    beta, alpha = scale
    full = data.draw(st.sampled_from([(n, p), (p,), (1, p), (n, 1), ()]))
    inp, A, B, v = values(seed, full, (n, m), (m, p), (m,))
    check(lambda i, x, y: tg.addmm(i, x, y, beta=beta, alpha=alpha),
          lambda i, x, y: torch.addmm(i, x, y, beta=beta, alpha=alpha), inp, A, B, seed=seed)
    # (torch's addmv keeps a broadcast input's shape when the matrix is empty: a quirk that is
    # not followed here, the result has the product's shape)
    vec_in = values(seed + 2, data.draw(st.sampled_from([(n,), (1,), ()] if n * m else [(n,)])))
    check(lambda i, x, y: i.addmv(x, y, beta=beta, alpha=alpha),
          lambda i, x, y: i.addmv(x, y, beta=beta, alpha=alpha), vec_in, A, v, seed=seed)
    X, Y = values(seed + 1, (b, n, m), (b, m, p))
    binp = values(seed + 3, data.draw(st.sampled_from([(b, n, p), (n, p), (1, p), ()])))
    check(lambda i, x, y: tg.baddbmm(i, x, y, beta=beta, alpha=alpha),
          lambda i, x, y: torch.baddbmm(i, x, y, beta=beta, alpha=alpha), binp, X, Y, seed=seed)
    check(lambda i, x, y: i.addbmm(x, y, beta=beta, alpha=alpha),
          lambda i, x, y: i.addbmm(x, y, beta=beta, alpha=alpha), inp, X, Y, seed=seed)


def test_beta_zero_ignores_nan_and_inplace_forms():
    inp = np.full((2, 2), np.nan)
    A, B = values(0, (2, 3), (3, 2))
    out = tg.addmm(tg.tensor(inp), tg.tensor(A), tg.tensor(B), beta=0)
    np.testing.assert_allclose(np.asarray(out), A @ B)
    x = tg.tensor(np.ones((2, 2)))
    assert x.addmm_(tg.tensor(A), tg.tensor(B), alpha=2) is x
    np.testing.assert_allclose(np.asarray(x), 1 + 2 * A @ B)


@pytest.mark.parametrize("op, args, match", [
    (tg.mm, ((2, 3), (3,)), "mm: expected a 2-D and a 2-D tensor"),
    (tg.mm, ((2, 3), (2, 3)), "mm: inner sizes differ"),
    (tg.mm, ((1, 2, 3), (3, 2)), "mm: expected a 2-D"),
    (tg.bmm, ((2, 2, 3), (1, 3, 2)), "bmm: expected batch2 of shape"),
    (tg.bmm, ((2, 3), (3, 2)), "bmm: expected a 3-D"),
    (tg.mv, ((2, 3), (2,)), "mv: sizes differ"),
    (tg.dot, ((3,), (2,)), "dot: expected 1-D tensors of the same size"),
    (tg.dot, ((3, 1), (3,)), "dot: expected a 1-D"),
])
def test_strict_shapes(op, args, match):
    tensors = [tg.zeros(*s) for s in args]
    with pytest.raises(RuntimeError, match=match):
        op(*tensors)
    with pytest.raises(RuntimeError):  # torch refuses them too
        getattr(torch, op.__name__)(*(torch.zeros(*s) for s in args))
    with pytest.raises(RuntimeError, match="same dtype"):
        tg.mm(tg.zeros(2, 2), tg.zeros(2, 2, dtype=tg.float64))


@FAST
@given(a=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
       b=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3), seed=seeds)
def test_inner_and_kron(a, b, seed):
    x, y = values(seed, a, b)
    check(tg.kron, torch.kron, x, y, seed=seed)
    if a and b:
        y = values(seed, b[:-1] + a[-1:])
    check(tg.inner, torch.inner, x, y, seed=seed)


@pytest.mark.parametrize("a, b, dims", [
    ((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 2), 1), ((2, 3), (4,), 0), ((3,), (3,), 1),
    ((2, 3, 4), (4, 2, 3), ([1, 2], [2, 0])), ((2, 3, 4), (4, 5), ([-1], [0])),
    ((2, 3, 4), (3,), ([1], [0])), ((0, 3), (3, 2), 1),
])
def test_tensordot(a, b, dims):
    x, y = values(1, a, b)
    check(lambda s, t: tg.tensordot(s, t, dims), lambda s, t: torch.tensordot(s, t, dims), x, y)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 1), (0, 2)])
def test_trace(shape):
    check(tg.trace, torch.trace, values(2, shape))
    assert tg.trace(tg.tensor([[1, 2], [3, 4]])).dtype == tg.int64


@FAST
@given(ndim=st.integers(0, 2), seed=seeds, explicit=st.booleans(), data=st.data())
def test_cross(ndim, seed, explicit, data):
    # batch dims broadcast (torch wants equal ranks) and are < 3, so dim=None finds the last
    batch = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=ndim, max_dims=ndim,
                                              min_side=0, max_side=2)
    a, b = data.draw(batch).input_shapes
    x, y = values(seed, a + (3,), b + (3,))
    if explicit:
        check(lambda s, t: tg.cross(s, t, dim=-1), lambda s, t: torch.cross(s, t, dim=-1), x, y)
    else:
        check(lambda s, t: s.cross(t), lambda s, t: s.cross(t), x, y)  # first dim of size 3


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, 0.5, float("inf")])
@FAST
@given(P=sides, R=sides, M=st.integers(1, 3), batch=st.sampled_from([(), (2,)]), seed=seeds)
def test_cdist(p, P, R, M, batch, seed):
    x, y = values(seed, batch + (P, M), batch + (R, M))
    if P and R:
        y[..., 0, :] = x[..., 0, :]  # a zero distance: the gradient there is 0
    check(lambda s, t: tg.cdist(s, t, p), lambda s, t: torch.cdist(s, t, p), x, y, seed=seed)
