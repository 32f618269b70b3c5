"""Products, scans, the scatter/gather family, layout ops and sampling against PyTorch: values,
dtypes, requires_grad and gradients (float64), with 0-d, size-1 and empty dims among the shapes."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import tensorgrad as tg  # noqa: E402
from test_torch_parity import shapes  # noqa: E402
from torch_parity import FAST, check, seeds, values  # noqa: E402


with_empty = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def with_zeros(seed, shape):
    """Normal values with about a third set to exactly zero (runs of zeros included)."""
    x = values(seed, shape)
    return np.where(np.random.default_rng(seed + 1).random(shape) < 0.35, 0.0, x)


# --- products and scans ---------------------------------------------------------------------------
@FAST
@given(shape=with_empty, seed=seeds, data=st.data(), keepdim=st.booleans())
def test_prod(shape, seed, data, keepdim):
    x = with_zeros(seed, shape)
    check(lambda t: t.prod(), lambda t: t.prod(), x, seed=seed)
    dim = data.draw(st.integers(-max(len(shape), 1), max(len(shape), 1) - 1))
    check(lambda t: t.prod(dim, keepdim=keepdim), lambda t: t.prod(dim, keepdim=keepdim), x,
          seed=seed)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"])
@FAST
@given(shape=with_empty, seed=seeds, data=st.data())
def test_scans(name, shape, seed, data):
    dim = data.draw(st.integers(-max(len(shape), 1), max(len(shape), 1) - 1))
    x = with_zeros(seed, shape) if name == "cumprod" else values(seed, shape)
    if name in ("cummax", "cummin"):  # ties from rounding: the index PyTorch reports is the latest
        x = np.round(x)
    check(lambda t: tuple(_tuple(getattr(t, name)(dim))),
          lambda t: tuple(_tuple(getattr(t, name)(dim))), x, seed=seed)


def _tuple(out):
    return tuple(out) if isinstance(out, tuple) else (out,)


def test_prod_gradient_with_zeros():
    for row in ([2.0, 0.0, 3.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0, 5.0], [1.5, -2.0, 4.0]):
        check(lambda t: t.prod(), lambda t: t.prod(), np.array(row))
        check(lambda t: t.cumprod(0), lambda t: t.cumprod(0), np.array(row))


def test_integer_products_and_scans_are_int64():
    for dtype in (tg.int32, tg.bool):
        x = tg.tensor([1, 2, 0], dtype=dtype)
        t = torch.tensor([1, 2, 0], dtype=getattr(torch, str(dtype).replace("bool_", "bool")))
        for name in ("prod", "cumprod", "cumsum"):
            args = () if name == "prod" else (0,)
            assert str(getattr(x, name)(*args).dtype) == str(getattr(t, name)(*args).dtype)[6:]


def test_logcumsumexp_is_stable():
    x = np.array([-1000.0, 0.0, 1000.0, -5.0])
    check(lambda t: t.logcumsumexp(0), lambda t: t.logcumsumexp(0), x)


@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean"])
@FAST
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=3, max_side=4), seed=seeds,
       data=st.data(), keepdim=st.booleans(), correction=st.sampled_from([0, 1, 2]))
def test_variance_family(name, shape, seed, data, keepdim, correction):
    dim = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    check(lambda t: getattr(tg, name)(t, dim, correction=correction, keepdim=keepdim),
          lambda t: getattr(torch, name)(t, dim, correction=correction, keepdim=keepdim),
          values(seed, shape), seed=seed)


def test_variance_legacy_unbiased():
    x = values(0, (3, 4))
    check(lambda t: t.var(False), lambda t: t.var(False), x)
    check(lambda t: t.std(1, False, True), lambda t: t.std(1, False, True), x)
    check(lambda t: t.var(0, unbiased=True), lambda t: t.var(0, unbiased=True), x)


@FAST
@given(shape=shapes, seed=seeds)
def test_nan_reductions_count_nonzero_aminmax(shape, seed):
    x = values(seed, shape)
    holes = np.where(np.random.default_rng(seed).random(shape) < 0.3, np.nan, x)
    if shape:  # no slice all NaN: there PyTorch's nanmean gradient is NaN
        holes[..., :1] = x[..., :1]
    else:
        holes = x
    check(lambda t: (t.nansum(), t.nanmean()), lambda t: (t.nansum(), t.nanmean()), holes)
    check(lambda t: t.count_nonzero(), lambda t: t.count_nonzero(), np.round(x))
    check(lambda t: tuple(t.aminmax()), lambda t: tuple(t.aminmax()), x)
    if shape:
        check(lambda t: (t.nansum(-1), t.count_nonzero(0)),
              lambda t: (t.nansum(-1), t.count_nonzero(0)), np.round(holes))


# --- scatter / gather family ----------------------------------------------------------------------
X = np.array([[1.5, 2.0, 0.0, 4.0], [0.0, 2.5, -3.0, 1.0]])
SRC = np.array([[5.0, 0.0, 7.0], [1.0, -2.0, 3.0]])
SCATTER_INDEX = np.array([[0, 0, 3], [1, 1, 1]])
PERMUTED = np.array([[0, 2], [3, 1]])  # distinct targets: scatter's result is unambiguous


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    check(lambda x, s, i: x.scatter_reduce(1, i, s, reduce, include_self=include_self),
          lambda x, s, i: x.scatter_reduce(1, i, s, reduce, include_self=include_self),
          X, SRC, SCATTER_INDEX)
    check(lambda x, s, i: x.scatter_reduce(0, i, s, reduce, include_self=include_self),
          lambda x, s, i: x.scatter_reduce(0, i, s, reduce, include_self=include_self),
          values(1, (3, 2)), values(2, (2, 2)), np.array([[2, 2], [2, 0]]))


def test_scatter_reduce_amax_ties_split_the_gradient():
    # Deliberate difference: with include_self=False PyTorch still counts x's own value among
    # the ties (src gets half of g though x gets none). Here only the values that take part share
    # it, so the gradient is the derivative (what gradcheck sees).
    x = tg.tensor([[0.0, 3.0]], dtype=tg.float64, requires_grad=True)
    src = tg.tensor([[3.0, 1.0, 3.0]], dtype=tg.float64, requires_grad=True)
    index = tg.tensor([[1, 1, 1]])
    x.scatter_reduce(1, index, src, "amax").sum().backward()
    assert x.grad.tolist() == [[1.0, 1 / 3]] and src.grad.tolist() == [[1 / 3, 0.0, 1 / 3]]
    x.grad = src.grad = None
    x.scatter_reduce(1, index, src, "amax", include_self=False).sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0]] and src.grad.tolist() == [[0.5, 0.0, 0.5]]


def test_scatter_forms():
    check(lambda x, s, i: x.scatter(1, i, s), lambda x, s, i: x.scatter(1, i, s),
          X, SRC[:, :2], PERMUTED)
    check(lambda x, i: x.scatter(1, i, -1.5), lambda x, i: x.scatter(1, i, -1.5), X, PERMUTED)
    check(lambda x, s, i: x.scatter_add(1, i, s), lambda x, s, i: x.scatter_add(1, i, s),
          X, SRC, SCATTER_INDEX)
    x, s, i = tg.tensor(X), tg.tensor(SRC), tg.tensor(SCATTER_INDEX)
    for legacy, modern in (("add", "sum"), ("multiply", "prod")):
        ours = x.scatter(1, i, s, reduce=legacy)
        theirs = torch.tensor(X).scatter(1, torch.tensor(SCATTER_INDEX), torch.tensor(SRC),
                                         reduce=legacy)
        np.testing.assert_allclose(np.asarray(ours), theirs.numpy())
        np.testing.assert_allclose(np.asarray(ours), np.asarray(x.scatter_reduce(1, i, s, modern)))


INDEX_OPS = [
    ("index_add", lambda x, s, i: x.index_add(1, i, s, alpha=2.0)),
    ("index_copy", lambda x, s, i: x.index_copy(1, i, s)),
    ("index_fill", lambda x, s, i: x.index_fill(1, i, -2.0)),
    ("index_select", lambda x, s, i: x.index_select(1, i) * s.sum()),
]


@pytest.mark.parametrize("name, fn", INDEX_OPS, ids=[n for n, _ in INDEX_OPS])
def test_index_ops(name, fn):
    repeats = name == "index_add" or name == "index_select"  # index_copy wants distinct targets
    index = np.array([3, 0, 3] if repeats else [3, 0, 2])
    check(fn, fn, X, SRC, index)


def test_index_ops_on_0d():  # PyTorch treats a 0-d tensor as one element along dim 0
    for fn in (lambda x, s, i: x.index_add(0, i, s), lambda x, s, i: x.index_copy(-1, i, s),
               lambda x, s, i: x.index_fill(0, i, s), lambda x, s, i: x.index_select(0, i) * s):
        check(fn, fn, np.array(2.5), np.array(4.0), np.array([0]))


def test_take_and_take_along_dim():
    check(lambda x, i: x.take(i), lambda x, i: x.take(i), X, np.array([[7, 0], [0, 3]]))
    check(lambda x, i: x.take(i), lambda x, i: x.take(i), X, np.array(5))
    for index, dim in ((np.array([[0], [3]]), 1), (np.array([[1, 2]]), 1),
                       (np.array([[1], [0]]), 0), (np.array([5, 1]), None)):
        check(lambda x, i, d=dim: tg.take_along_dim(x, i, d),
              lambda x, i, d=dim: torch.take_along_dim(x, i, d), X, index)


def test_masks():
    mask = np.array([True, False, True, True])
    check(lambda x, m: x.masked_select(m), lambda x, m: x.masked_select(m), X, mask)
    check(lambda x, m: x.masked_select(m), lambda x, m: x.masked_select(m), X[0], X > 1)
    check(lambda x, m, s: x.masked_scatter(m, s), lambda x, m, s: x.masked_scatter(m, s),
          X, mask, SRC)


@pytest.mark.parametrize("array", [np.array([[1, 0, 2], [0, 0, 3]]), np.array(5.0),
                                   np.array(0.0), np.zeros((2, 0)), np.array([0, 1, 1])])
def test_nonzero_argwhere(array):
    ours, theirs = tg.tensor(array), torch.tensor(array)
    for o, t in ((ours.nonzero(), theirs.nonzero()), (tg.argwhere(ours), torch.argwhere(theirs))):
        assert o.shape == tuple(t.shape) and o.dtype == tg.int64
        assert o.tolist() == t.tolist()
    for o, t in zip(ours.nonzero(as_tuple=True), theirs.nonzero(as_tuple=True), strict=True):
        assert o.tolist() == t.tolist() and o.dtype == tg.int64


def test_unique_and_bincount():
    x = np.array([[3, 1, 2], [1, 3, 3]])
    for kwargs in ({}, {"return_inverse": True}, {"return_counts": True},
                   {"return_inverse": True, "return_counts": True}, {"dim": 1},
                   {"dim": 0, "return_inverse": True, "return_counts": True}):
        ours, theirs = _tuple(tg.unique(tg.tensor(x), **kwargs)), _tuple(
            torch.unique(torch.tensor(x), **kwargs))
        for o, t in zip(ours, theirs, strict=True):
            assert o.shape == tuple(t.shape) and o.tolist() == t.tolist(), kwargs
    counts = tg.bincount(tg.tensor([1, 1, 3]), minlength=6)
    assert counts.tolist() == torch.bincount(torch.tensor([1, 1, 3]), minlength=6).tolist()
    weighted = tg.bincount(tg.tensor([0, 2, 2]), weights=tg.tensor([0.5, 1.0, 2.0]))
    assert weighted.dtype == tg.float32 and weighted.tolist() == [0.5, 0.0, 3.0]


IN_PLACE = [  # (name, update(x, module)): the same call on a tensorgrad and a torch tensor
    ("scatter_", lambda x, m: x.scatter_(1, m.tensor([[0, 2], [3, 1]]), 9.0)),
    ("scatter_add_", lambda x, m: x.scatter_add_(1, m.tensor([[0, 0], [3, 1]]),
                                                 m.tensor([[1.0, 2.0], [3.0, 4.0]]).double())),
    ("scatter_reduce_", lambda x, m: x.scatter_reduce_(
        1, m.tensor([[0, 0], [3, 1]]), m.tensor([[1.0, 2.0], [3.0, 4.0]]).double(), "amax")),
    ("index_add_", lambda x, m: x.index_add_(0, m.tensor([1, 1]), m.ones(2, 4).double())),
    ("index_copy_", lambda x, m: x.index_copy_(1, m.tensor([2]), m.ones(2, 1).double())),
    ("index_fill_", lambda x, m: x.index_fill_(1, m.tensor([0, 3]), -1.0)),
    ("masked_fill_", lambda x, m: x.masked_fill_(m.tensor(X > 1.0), 0.5)),
    ("masked_scatter_", lambda x, m: x.masked_scatter_(m.tensor(X > 1.0), m.tensor(SRC))),
]


@pytest.mark.parametrize("name, update", IN_PLACE, ids=[n for n, _ in IN_PLACE])
def test_in_place_forms(name, update):
    results = []
    for module in (tg, torch):
        x = module.tensor(X)
        assert update(x, module) is x
        results.append(np.asarray(x))
    np.testing.assert_array_equal(*results)
    version = tg.tensor(X)
    before = version._version[0]
    update(version, tg)
    assert version._version[0] > before  # saved copies of it are caught at backward
    with pytest.raises(RuntimeError, match=name):
        update(tg.tensor(X, requires_grad=True), tg)


# --- layout ---------------------------------------------------------------------------------------
@FAST
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4), seed=seeds,
       data=st.data())
def test_roll(shape, seed, data):
    ndim = len(shape)
    shift = data.draw(st.integers(-5, 5))
    dim = data.draw(st.integers(-ndim, ndim - 1))
    x = values(seed, shape)
    check(lambda t: (t.roll(shift, dim), t.roll(shift)), lambda t: (t.roll(shift, dim),
                                                                   t.roll(shift)), x, seed=seed)


@FAST
@given(shape=hnp.array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=4), seed=seeds,
       data=st.data())
def test_diagonal_and_rotations(shape, seed, data):
    ndim = len(shape)
    d1, d2 = data.draw(st.lists(st.integers(0, ndim - 1), min_size=2, max_size=2, unique=True))
    offset, k = data.draw(st.integers(-3, 3)), data.draw(st.integers(-2, 5))
    x = values(seed, shape)
    check(lambda t: (t.diagonal(offset, d1, d2), t.rot90(k, (d1, d2)), t.fliplr(), t.flipud(),
                     t.swapaxes(d1, d2), t.moveaxis((d1, d2), (0, -1))),
          lambda t: (t.diagonal(offset, d1, d2), t.rot90(k, (d1, d2)), t.fliplr(), t.flipud(),
                     t.swapaxes(d1, d2), t.moveaxis((d1, d2), (0, -1))), x, seed=seed)


@pytest.mark.parametrize("offset", [-2, 0, 1])
def test_diag_and_diag_embed(offset):
    check(lambda t: (tg.diag(t, offset), t.diag_embed(offset)),
          lambda t: (torch.diag(t, offset), t.diag_embed(offset)), values(0, (3,)))
    check(lambda t: (tg.diag(t, offset), t.diag_embed(offset, 0, 2)),
          lambda t: (torch.diag(t, offset), t.diag_embed(offset, 0, 2)), values(1, (3, 4)))


def test_triangle_indices():
    for row, col, offset in ((3, 4, 0), (4, 3, -1), (3, 3, 2), (2, 5, -4), (0, 3, 0)):
        for name in ("tril_indices", "triu_indices"):
            ours = getattr(tg, name)(row, col, offset)
            theirs = getattr(torch, name)(row, col, offset)
            assert ours.shape == tuple(theirs.shape) and ours.tolist() == theirs.tolist()
            assert ours.dtype == tg.int64


@pytest.mark.parametrize("shape, dim, size, step", [((5,), 0, 2, 1), ((2, 7), 1, 3, 2),
                                                    ((4, 3, 2), 0, 4, 3), ((), 0, 1, 1),
                                                    ((3, 2), -1, 2, 5)])
def test_unfold_windows(shape, dim, size, step):
    check(lambda t: t.unfold(dim, size, step), lambda t: t.unfold(dim, size, step),
          values(0, shape))


def test_repeats_and_reshapes():
    x = values(0, (2, 3))
    counts = np.array([2, 0, 1])
    check(lambda t: (t.repeat_interleave(2), t.repeat_interleave(3, 0)),
          lambda t: (t.repeat_interleave(2), t.repeat_interleave(3, 0)), x)
    check(lambda t, r: t.repeat_interleave(r, dim=1), lambda t, r: t.repeat_interleave(r, dim=1),
          x, counts)
    assert tg.repeat_interleave(tg.tensor([2, 1])).tolist() == [0, 0, 1]
    check(lambda t: (t.tile((2,)), t.tile((2, 1, 2)), t.unflatten(1, (3, 1)), t.t()),
          lambda t: (t.tile((2,)), t.tile((2, 1, 2)), t.unflatten(1, (3, 1)), t.t()), x)
    check(lambda t: (t.t(), t.unflatten(0, (-1, 2))), lambda t: (t.t(), t.unflatten(0, (-1, 2))),
          values(0, (4,)))
    check(lambda t: t.t(), lambda t: t.t(), np.array(1.5))


def test_view_dtype_reinterprets_bits():
    x = np.array([[1.0, -2.0], [0.5, 3.0]], dtype=np.float32)
    for dtype in ("int32", "uint8", "float64", "int16"):
        ours = tg.tensor(x).view(getattr(tg, dtype))
        theirs = torch.tensor(x).view(getattr(torch, dtype))
        assert ours.shape == tuple(theirs.shape) and ours.dtype == getattr(tg, dtype)
        np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())
    leaf = tg.tensor(x, requires_grad=True)
    bits = leaf.view(tg.int32)
    assert not bits.requires_grad
    with tg.no_grad():
        leaf.view(tg.int32).fill_(0)  # the same memory: writes show through
    assert not np.asarray(leaf.detach()).any()


@pytest.mark.parametrize("shapes_", [[(), (3,)], [(2,), (2,)], [(2, 3), (2, 3)], [(3,), (1, 3)],
                                     [(2, 2, 1), (2, 2, 1)]])
def test_stacking_helpers(shapes_):
    arrays = [values(i, s) for i, s in enumerate(shapes_)]
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        check(getattr(tg, name), getattr(torch, name), *arrays)
    same = [values(i, shapes_[-1]) for i in range(2)]
    for name in ("hstack", "vstack", "dstack", "column_stack"):
        if name == "column_stack" and len(shapes_[-1]) > 2:
            continue
        ours, theirs = getattr(tg, name), getattr(torch, name)
        check(lambda *t, f=ours: f(t), lambda *t, f=theirs: f(t), *same)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_and_cartesian_prod(indexing):
    a, b, c = values(0, (2,)), values(1, (3,)), values(2, (4,))
    check(lambda *t: tg.meshgrid(*t, indexing=indexing),
          lambda *t: torch.meshgrid(*t, indexing=indexing), a, b, c)
    check(lambda *t: tg.meshgrid(t, indexing=indexing),
          lambda *t: torch.meshgrid(t, indexing=indexing), a, b)
    check(lambda *t: tg.cartesian_prod(*t), lambda *t: torch.cartesian_prod(*t), a, b, c)


ZERO_D = [  # 0-d tensors take dim 0 / -1 wherever PyTorch does
    lambda t: t.prod(0), lambda t: t.prod(-1, keepdim=True), lambda t: t.cumprod(0),
    lambda t: tuple(t.cummax(0)), lambda t: tuple(t.cummin(-1)), lambda t: t.logcumsumexp(0),
    lambda t: t.nansum(0), lambda t: t.count_nonzero(0), lambda t: tuple(t.aminmax(dim=0)),
    lambda t: t.roll(1), lambda t: t.unfold(0, 1, 1), lambda t: t.repeat_interleave(2),
    lambda t: t.take(_zero_index(t)), lambda t: t.t(),
]


def _zero_index(t):
    return (tg.tensor if isinstance(t, tg.Tensor) else torch.tensor)(0)


@pytest.mark.parametrize("fn", ZERO_D, ids=[str(i) for i in range(len(ZERO_D))])
def test_zero_dim(fn):
    check(fn, fn, np.array(-1.5))
    check(fn, fn, np.array(0.0))


ERRORS = [  # bad input: the op's name and what was wrong, not an array library's complaint
    (lambda x: x.scatter(1, tg.tensor([[0.5]]), 1.0), TypeError, "scatter: index must be"),
    (lambda x: x.scatter(1, tg.tensor([[0, 1]]), tg.ones(1, 1)), RuntimeError, "scatter: src"),
    (lambda x: x.scatter_reduce(1, tg.tensor([[0]]), tg.ones(1, 1), "max"), ValueError,
     "reduce must be"),
    (lambda x: x.index_select(0, tg.tensor([[0]])), TypeError, "index_select: index must"),
    (lambda x: x.index_add(0, tg.tensor([3]), tg.ones(1, 4)), IndexError, r"\[0, 2\)"),
    (lambda x: x.index_copy(1, tg.tensor([0]), tg.ones(2, 2)), RuntimeError, r"shape \(2, 1\)"),
    (lambda x: x.masked_select(x), TypeError, "masked_select: mask must be a bool"),
    (lambda x: x.masked_scatter(x > -10, tg.ones(3)), RuntimeError, "selects 8 elements"),
    (lambda x: x.unfold(1, 5, 1), RuntimeError, "unfold: windows of size 5"),
    (lambda x: x.prod((0, 1)), TypeError, "prod: dim must be one int"),
    (lambda x: x.long().logcumsumexp(0), TypeError, "logcumsumexp: expected a floating"),
    (lambda x: tg.meshgrid(x, x), RuntimeError, "meshgrid: expects 0-d or 1-D"),
    (lambda x: x.diagonal(0, 1, -1), RuntimeError, "diagonal: dim1 and dim2 must differ"),
    (lambda x: x.unsqueeze(0).t(), RuntimeError, "t: expects a tensor with at most 2 dims"),
    (lambda x: x.repeat_interleave(tg.tensor([1, 2, 3]), 0), RuntimeError, "has 3 entries"),
    (lambda x: x.roll((1, 2), 0), RuntimeError, "roll: shifts"),
    (lambda x: tg.bincount(x), TypeError, "bincount: expected a 1-D integer"),
]


@pytest.mark.parametrize("fn, error, message", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_errors_name_the_op(fn, error, message):
    with pytest.raises(error, match=message):
        fn(tg.tensor(X))
