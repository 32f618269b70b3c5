"""Values and gradients against PyTorch on random shapes, broadcasts and dims (hypothesis).

Every check runs in float64 with tight tolerances, compares output shapes, dtypes and
requires_grad, then the gradients of <probe, outputs> for a random probe; a float32 rerun must
give float32 outputs.
"""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import tensorgrad as tg  # noqa: E402
from torch_parity import FAST, Const, check, seeds, values  # noqa: F401,E402

F = torch.nn.functional

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)
nonempty_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)
pairs = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4)


def broadcastable_to(data, shape):
    """A shape that broadcasts to `shape`: leading dims dropped, some sizes set to 1."""
    drop = data.draw(st.integers(0, len(shape)))
    return tuple(1 if data.draw(st.booleans()) else s for s in shape[drop:])


def dims(data, ndim, tuples=True, none=True):
    """A dim argument: None, an int (maybe negative) or a tuple of distinct dims."""
    options = [st.none()] if none or ndim == 0 else []
    if ndim:
        options.append(st.integers(-ndim, ndim - 1))
        if tuples:
            options.append(st.lists(st.integers(0, ndim - 1), min_size=1, unique=True)
                           .map(tuple))
    return data.draw(st.one_of(options))


# --- elementwise ----------------------------------------------------------------------------------
UNARY = [
    ("neg", lambda x: -x, lambda x: -x, "real"),
    ("exp", tg.exp, torch.exp, "real"),
    ("log", tg.log, torch.log, "positive"),
    ("sqrt", tg.sqrt, torch.sqrt, "positive"),
    ("rsqrt", tg.rsqrt, torch.rsqrt, "positive"),
    ("abs", tg.abs, torch.abs, "nonzero"),
    ("tanh", tg.tanh, torch.tanh, "real"),
    ("sigmoid", tg.sigmoid, torch.sigmoid, "real"),
    ("relu", tg.relu, torch.relu, "nonzero"),
    ("gelu", tg.gelu, F.gelu, "real"),
    ("gelu_tanh", lambda x: tg.gelu(x, approximate="tanh"),
     lambda x: F.gelu(x, approximate="tanh"), "real"),
    ("silu", tg.silu, F.silu, "real"),
    ("sin", tg.sin, torch.sin, "real"),
    ("cos", tg.cos, torch.cos, "real"),
    ("erf", tg.erf, torch.erf, "real"),
    ("square", tg.square, torch.square, "real"),
    ("reciprocal", tg.reciprocal, torch.reciprocal, "nonzero"),
    ("scalar_ops", lambda x: (2.5 - x) * 3 / 4 + 1, lambda x: (2.5 - x) * 3 / 4 + 1, "real"),
    ("scalar_pow", lambda x: x ** 3 + x ** 0.5 + 2.0 ** x,
     lambda x: x ** 3 + x ** 0.5 + 2.0 ** x, "positive"),
]


@pytest.mark.parametrize("name, ours, theirs, domain", UNARY, ids=[u[0] for u in UNARY])
@FAST
@given(shape=shapes, seed=seeds)
def test_unary(name, ours, theirs, domain, shape, seed):
    check(ours, theirs, values(seed, shape, domain=domain), seed=seed)


BINARY = [
    ("add", lambda a, b: a + b, lambda a, b: a + b, "real"),
    ("sub", lambda a, b: a - b, lambda a, b: a - b, "real"),
    ("mul", lambda a, b: a * b, lambda a, b: a * b, "real"),
    ("div", lambda a, b: a / b, lambda a, b: a / b, "nonzero"),
    ("pow", lambda a, b: a ** b, lambda a, b: a ** b, "positive"),
    ("maximum", tg.maximum, torch.maximum, "real"),
    ("minimum", tg.minimum, torch.minimum, "real"),
]


@pytest.mark.parametrize("name, ours, theirs, domain", BINARY, ids=[b[0] for b in BINARY])
@FAST
@given(shapes_=pairs, seed=seeds)
def test_binary_broadcast(name, ours, theirs, domain, shapes_, seed):
    check(ours, theirs, *values(seed, *shapes_.input_shapes, domain=domain), seed=seed)


COMPARE = ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]


@pytest.mark.parametrize("op", COMPARE)
@FAST
@given(shapes_=pairs, seed=seeds)
def test_comparisons(op, shapes_, seed):
    rng = np.random.default_rng(seed)  # small integers as floats, so ties happen
    a, b = (rng.integers(-2, 3, s).astype(float) for s in shapes_.input_shapes)
    check(lambda x, y: getattr(x, op)(y), lambda x, y: getattr(x, op)(y), a, b)


@FAST
@given(shapes_=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3),
       seed=seeds)
def test_where(shapes_, seed):
    cond_shape, a_shape, b_shape = shapes_.input_shapes
    cond = np.random.default_rng(seed).random(cond_shape) > 0.5
    a, b = values(seed + 1, a_shape, b_shape)
    check(tg.where, torch.where, cond, a, b, seed=seed)


@FAST
@given(shape=shapes, seed=seeds, bounds=st.sampled_from([(-0.5, 0.5), (None, 0.3), (-0.2, None)]))
def test_clamp(shape, seed, bounds):
    x = values(seed, shape)
    x = np.where(np.abs(np.abs(x) - 0.35) < 0.2, x + 0.5, x)  # keep away from the bounds
    lo, hi = bounds
    check(lambda t: t.clamp(lo, hi), lambda t: t.clamp(lo, hi), x, seed=seed)


@FAST
@given(shape=shapes, seed=seeds, data=st.data())
def test_clamp_tensor_bounds(shape, seed, data):
    x, lo, hi = values(seed, shape, broadcastable_to(data, shape), broadcastable_to(data, shape))
    check(lambda t, a, b: t.clamp(a, b), lambda t, a, b: t.clamp(a, b), x, lo, hi, seed=seed)
    check(lambda t, a: t.clamp(min=a), lambda t, a: t.clamp(min=a), x, lo, seed=seed)


# --- reductions -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "logsumexp"])
@FAST
@given(shape=shapes, seed=seeds, data=st.data(), keepdim=st.booleans())
def test_reduction(name, shape, seed, data, keepdim):
    if name == "logsumexp":  # logsumexp needs a dim
        shape = shape or (2,)
    dim = dims(data, len(shape), none=name != "logsumexp")
    check(lambda t: getattr(t, name)(dim, keepdim=keepdim),
          lambda t: getattr(t, name)(dim, keepdim=keepdim), values(seed, shape), seed=seed)


@pytest.mark.parametrize("name", ["var", "std"])
@FAST
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4), seed=seeds,
       data=st.data(), keepdim=st.booleans(), correction=st.sampled_from([0, 1]))
def test_var_std(name, shape, seed, data, keepdim, correction):
    dim = dims(data, len(shape))
    check(lambda t: getattr(t, name)(dim, correction=correction, keepdim=keepdim),
          lambda t: getattr(t, name)(dim, correction=correction, keepdim=keepdim),
          values(seed, shape), seed=seed)


@pytest.mark.parametrize("name", ["max", "min"])
@FAST
@given(shape=nonempty_shapes, seed=seeds, data=st.data(), keepdim=st.booleans())
def test_max_min(name, shape, seed, data, keepdim):
    dim = dims(data, len(shape), tuples=False)
    if dim is None:
        check(lambda t: getattr(t, name)(), lambda t: getattr(t, name)(), values(seed, shape))
    else:
        check(lambda t: tuple(getattr(t, name)(dim, keepdim=keepdim)),
              lambda t: tuple(getattr(t, name)(dim, keepdim=keepdim)), values(seed, shape),
              seed=seed)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@FAST
@given(shape=nonempty_shapes, seed=seeds, data=st.data(), keepdim=st.booleans())
def test_argmax(name, shape, seed, data, keepdim):
    dim = dims(data, len(shape), tuples=False)
    check(lambda t: getattr(t, name)(dim, keepdim=keepdim),
          lambda t: getattr(t, name)(dim, keepdim=keepdim), values(seed, shape))


# --- matmul and einsum ----------------------------------------------------------------------------
@FAST
@given(kind=st.sampled_from(["1d@1d", "1d@nd", "nd@1d", "nd@nd"]),
       batch=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3),
       mkn=st.tuples(*[st.integers(1, 4)] * 3), seed=seeds, operator=st.booleans())
def test_matmul(kind, batch, mkn, seed, operator):
    m, k, n = mkn
    batch_a, batch_b = batch.input_shapes
    a_shape = (k,) if kind.startswith("1d") else batch_a + (m, k)
    b_shape = (k,) if kind.endswith("1d") else batch_b + (k, n)
    a, b = values(seed, a_shape, b_shape)
    if operator:
        check(lambda x, y: x @ y, lambda x, y: x @ y, a, b, seed=seed)
    else:
        check(tg.matmul, torch.matmul, a, b, seed=seed)


EINSUM = ["bhqd,bhkd->bhqk", "bhqk,bhkd->bhqd", "ij,jk->ik", "ij,jk->i", "ij,jk", "i,i->",
          "ij->j", "bij,bjk->bik", "...ij,...jk->...ik", "i,j->ij"]


@pytest.mark.parametrize("equation", EINSUM)
@FAST
@given(sizes=st.lists(st.integers(1, 3), min_size=6, max_size=6), seed=seeds)
def test_einsum(equation, sizes, seed):
    lhs = equation.split("->")[0].replace("...", "z")  # '...' stands for one batch dim here
    size = dict(zip("bhqdkz", sizes)) | dict(zip("ij", sizes))
    arrays = values(seed, *[tuple(size[c] for c in spec) for spec in lhs.split(",")])
    arrays = arrays if isinstance(arrays, list) else [arrays]
    check(lambda *t: tg.einsum(equation, *t), lambda *t: torch.einsum(equation, *t), *arrays,
          seed=seed)


# --- shapes ---------------------------------------------------------------------------------------
@FAST
@given(shape=shapes, seed=seeds, data=st.data(), view=st.booleans())
def test_reshape(shape, seed, data, view):
    size = math.prod(shape)
    target = data.draw(st.sampled_from([(-1,), (size,), (1, size), (size, -1), shape[::-1],
                                        (1,) + shape + (1,)] +
                                       [(d, -1) for d in range(1, size + 1) if size % d == 0]))
    method = "view" if view else "reshape"
    check(lambda t: getattr(t, method)(target), lambda t: getattr(t, method)(target),
          values(seed, shape), seed=seed)


@FAST
@given(shape=nonempty_shapes, seed=seeds, data=st.data())
def test_view_of_a_permuted_tensor_is_refused_exactly_where_torchs_is(shape, seed, data):
    """view after a permute: a view where torch gives one, the same RuntimeError where torch
    refuses (its strides would need a copy)."""
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    size = math.prod(shape)
    target = data.draw(st.sampled_from([(-1,), (1, size), shape, shape[::-1]] +
                                       [(d, -1) for d in range(1, size + 1) if size % d == 0]))
    array = values(seed, shape)
    ours, theirs = tg.tensor(array).permute(*perm), torch.tensor(array).permute(*perm)
    try:
        expected = theirs.view(target)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="use .reshape"):
            ours.view(target)
        return
    got = ours.view(target)
    assert got.shape == tuple(expected.shape) and got._version is ours._version
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


@FAST
@given(shape=nonempty_shapes, seed=seeds, data=st.data())
def test_permute_transpose(shape, seed, data):
    ndim = len(shape)
    perm = tuple(data.draw(st.permutations(range(ndim))))
    d0, d1 = data.draw(st.integers(-ndim, ndim - 1)), data.draw(st.integers(-ndim, ndim - 1))
    check(lambda t: (t.permute(*perm), t.transpose(d0, d1), t.T, t.movedim(d0, d1)),
          lambda t: (t.permute(*perm), t.transpose(d0, d1), t.permute(*reversed(range(ndim))),
                     t.movedim(d0, d1)), values(seed, shape), seed=seed)


@FAST
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=2), seed=seeds,
       data=st.data())
def test_expand_squeeze_unsqueeze_flatten(shape, seed, data):
    ndim = len(shape)
    lead = data.draw(st.lists(st.integers(1, 3), max_size=2))
    target = tuple(lead) + tuple(data.draw(st.integers(1, 3)) if s == 1 else -1 for s in shape)
    squeeze_dim = data.draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1))) if ndim else None
    unsqueeze_dim = data.draw(st.integers(-ndim - 1, ndim))
    start = data.draw(st.integers(0, max(ndim - 1, 0)))
    end = data.draw(st.integers(start, max(ndim - 1, 0)))

    def ops(t):
        squeezed = t.squeeze() if squeeze_dim is None else t.squeeze(squeeze_dim)
        return t.expand(target), squeezed, t.unsqueeze(unsqueeze_dim), t.flatten(start, end)
    check(ops, ops, values(seed, shape), seed=seed)


def _slice(data, size):
    start = data.draw(st.one_of(st.none(), st.integers(-size, size)))
    stop = data.draw(st.one_of(st.none(), st.integers(-size, size)))
    return slice(start, stop, data.draw(st.sampled_from([None, 1, 2, 3])))


@FAST
@given(shape=nonempty_shapes, seed=seeds, data=st.data())
def test_getitem_slices(shape, seed, data):
    index = tuple(_slice(data, s) if data.draw(st.booleans()) else
                  data.draw(st.integers(-s, s - 1)) for s in shape[:data.draw(
                      st.integers(1, len(shape)))])
    index = index + ((None,) if data.draw(st.booleans()) else ())
    check(lambda t: t[index], lambda t: t[index], values(seed, shape), seed=seed)


@FAST
@given(shape=nonempty_shapes, seed=seeds, data=st.data())
def test_getitem_int_arrays(shape, seed, data):
    rng = np.random.default_rng(seed)
    index_shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=2, max_side=4))
    rows = rng.integers(-shape[0], shape[0], index_shape)  # repeats and negatives included
    x = values(seed, shape)
    check(lambda t, i: t[i], lambda t, i: t[i], x, rows, seed=seed)
    if len(shape) > 1:
        cols = rng.integers(-shape[1], shape[1], index_shape)
        check(lambda t, j: t[:, j], lambda t, j: t[:, j], x, cols, seed=seed)
        check(lambda t, i, j: t[i, j], lambda t, i, j: t[i, j], x, rows, cols, seed=seed)


@FAST
@given(shape=nonempty_shapes, seed=seeds, data=st.data())
def test_getitem_bool_mask(shape, seed, data):
    k = data.draw(st.integers(1, len(shape)))
    mask = np.random.default_rng(seed).random(shape[:k]) > 0.4
    check(lambda t, m: t[m], lambda t, m: t[m], values(seed, shape), mask, seed=seed)


@FAST
@given(shape=nonempty_shapes, seed=seeds, data=st.data())
def test_cat_stack(shape, seed, data):
    ndim = len(shape)
    dim = data.draw(st.integers(-ndim, ndim - 1))
    sizes = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    parts = [values(seed + i, shape[:dim % ndim] + (s,) + shape[dim % ndim + 1:])
             for i, s in enumerate(sizes)]
    check(lambda *t: tg.cat(t, dim), lambda *t: torch.cat(t, dim), *parts, seed=seed)
    new = data.draw(st.integers(-ndim - 1, ndim))
    same = [values(seed + i, shape) for i in range(len(sizes))]
    check(lambda *t: tg.stack(t, new), lambda *t: torch.stack(t, new), *same, seed=seed)


@FAST
@given(shape=nonempty_shapes, seed=seeds, data=st.data())
def test_split_chunk(shape, seed, data):
    ndim = len(shape)
    dim = data.draw(st.integers(-ndim, ndim - 1))
    size = shape[dim]
    split_size = data.draw(st.integers(1, 4))
    cuts = sorted(data.draw(st.lists(st.integers(0, size), max_size=2)))
    sections = [b - a for a, b in zip([0] + cuts, cuts + [size])]
    chunks = data.draw(st.integers(1, 4))
    x = values(seed, shape)
    check(lambda t: t.split(split_size, dim), lambda t: t.split(split_size, dim), x, seed=seed)
    check(lambda t: t.split(sections, dim), lambda t: t.split(sections, dim), x, seed=seed)
    check(lambda t: t.chunk(chunks, dim), lambda t: t.chunk(chunks, dim), x, seed=seed)


@FAST
@given(shape=nonempty_shapes, seed=seeds, data=st.data(), value=st.sampled_from([0.0, -1.5]))
def test_pad(shape, seed, data, value):
    widths = tuple(data.draw(st.lists(st.integers(0, 2), min_size=1, max_size=len(shape)))
                   for _ in range(2))
    pad = tuple(w for pair in zip(*widths) for w in pair)
    check(lambda t: tg.pad(t, pad, value=value), lambda t: F.pad(t, pad, value=value),
          values(seed, shape), seed=seed)


@pytest.mark.parametrize("name", ["tril", "triu"])
@FAST
@given(shape=hnp.array_shapes(min_dims=2, max_dims=3, max_side=4), seed=seeds,
       diagonal=st.integers(-2, 2))
def test_triangles(name, shape, seed, diagonal):
    check(lambda t: getattr(t, name)(diagonal), lambda t: getattr(t, name)(diagonal),
          values(seed, shape), seed=seed)


@FAST
@given(shape=nonempty_shapes, seed=seeds, data=st.data(), value=st.sampled_from([0.0, -1e9]))
def test_masked_fill(shape, seed, data, value):
    mask = np.random.default_rng(seed).random(broadcastable_to(data, shape)) > 0.5
    check(lambda t, m: t.masked_fill(m, value), lambda t, m: t.masked_fill(m, value),
          values(seed, shape), mask, seed=seed)


# --- indexing along a dim -------------------------------------------------------------------------
@FAST
@given(shape=nonempty_shapes, seed=seeds, data=st.data())
def test_gather(shape, seed, data):
    ndim = len(shape)
    dim = data.draw(st.integers(-ndim, ndim - 1))
    index_shape = tuple(data.draw(st.integers(1, 4)) if d == dim % ndim else
                        data.draw(st.integers(1, s)) for d, s in enumerate(shape))
    index = np.random.default_rng(seed).integers(0, shape[dim], index_shape)
    check(lambda t, i: t.gather(dim, i), lambda t, i: t.gather(dim, i), values(seed, shape),
          index, seed=seed)


@FAST
@given(shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=4), seed=seeds,
       classes=st.sampled_from([-1, 5]))
def test_one_hot(shape, seed, classes):
    index = np.random.default_rng(seed).integers(0, 5, shape)
    check(lambda i: tg.one_hot(i, classes), lambda i: F.one_hot(i, classes), index)


@FAST
@given(index_shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=4), seed=seeds,
       rows=st.integers(1, 6), width=st.integers(1, 3),
       padding=st.one_of(st.none(), st.integers(-1, 0)))
def test_embedding(index_shape, seed, rows, width, padding):
    index = np.random.default_rng(seed).integers(0, rows, index_shape)
    check(lambda i, w: tg.embedding(i, w, padding_idx=padding),
          lambda i, w: F.embedding(i, w, padding_idx=padding), index, values(seed, (rows, width)),
          seed=seed)


# --- softmax, losses, norms -----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@FAST
@given(shape=nonempty_shapes, seed=seeds, data=st.data())
def test_softmax(name, shape, seed, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    check(lambda t: getattr(t, name)(dim), lambda t: getattr(t, name)(dim),
          values(seed, shape) * 3, seed=seed)


@FAST
@given(n=st.integers(1, 4), classes=st.integers(2, 5),
       extra=hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), seed=seeds,
       reduction=st.sampled_from(["mean", "sum", "none"]),
       smoothing=st.sampled_from([0.0, 0.1, 0.3]), weighted=st.booleans(),
       ignore_index=st.sampled_from([-100, 1]))
def test_cross_entropy(n, classes, extra, seed, reduction, smoothing, weighted, ignore_index):
    rng = np.random.default_rng(seed)
    target = rng.integers(0, classes, (n,) + extra)
    target = np.where(rng.random(target.shape) < 0.3, ignore_index, target)
    target.flat[0] = 0  # at least one counted target, so 'mean' is not 0 / 0
    weight = Const(rng.random(classes) + 0.5) if weighted else None

    def loss(fn):
        return lambda x, t, w=None: fn(x, t, weight=w, ignore_index=ignore_index,
                                       reduction=reduction, label_smoothing=smoothing)
    check(loss(tg.cross_entropy), loss(F.cross_entropy), values(seed, (n, classes) + extra),
          target, weight, seed=seed)


@FAST
@given(classes=st.integers(2, 5), seed=seeds, smoothing=st.sampled_from([0.0, 0.2]))
def test_cross_entropy_unbatched_and_probabilities(classes, seed, smoothing):
    rng = np.random.default_rng(seed)
    check(lambda x, t: tg.cross_entropy(x, t, label_smoothing=smoothing),
          lambda x, t: F.cross_entropy(x, t, label_smoothing=smoothing),
          values(seed, (classes,)), np.array(rng.integers(0, classes)), seed=seed)
    probs = Const(rng.dirichlet(np.ones(classes), size=3))
    check(lambda x, t: tg.cross_entropy(x, t, label_smoothing=smoothing),
          lambda x, t: F.cross_entropy(x, t, label_smoothing=smoothing),
          values(seed, (3, classes)), probs, seed=seed)


@FAST
@given(shape=nonempty_shapes, seed=seeds, data=st.data(), affine=st.booleans(),
       bias=st.booleans())
def test_layer_norm(shape, seed, data, affine, bias):
    normalized = shape[len(shape) - data.draw(st.integers(1, len(shape))):]
    x, w, b = values(seed, shape, normalized, normalized)
    args = (x, w if affine else None, b if bias else None)
    check(lambda t, w, b: tg.layer_norm(t, normalized, w, b),
          lambda t, w, b: F.layer_norm(t, normalized, w, b), *args, rtol=1e-6, seed=seed)


@FAST
@given(shape=nonempty_shapes, seed=seeds, data=st.data(), affine=st.booleans(),
       eps=st.sampled_from([None, 1e-6]))
def test_rms_norm(shape, seed, data, affine, eps):
    normalized = shape[len(shape) - data.draw(st.integers(1, len(shape))):]
    x, w = values(seed, shape, normalized)
    check(lambda t, w: tg.rms_norm(t, normalized, w, eps=eps),
          lambda t, w: F.rms_norm(t, normalized, w, eps=eps), x, w if affine else None,
          rtol=1e-6, seed=seed)
