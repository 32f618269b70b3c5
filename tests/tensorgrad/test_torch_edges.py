"""What PyTorch code catches and the edge cases it relies on, against PyTorch: the exception
types (`except RuntimeError` catches ours where it catches PyTorch's), NumPy's `axis=` and
`keepdims=` names, einsum's repeated letters, max_unpool, conv_transpose3d, pad's negative widths,
uint8 images through interpolate, normalize's p, tuple and list indices, pow at exponent 0.
Each case is written once against the PyTorch API and run with `T` = tensorgrad and `T` = torch.
"""
import math

import numpy as np
import pytest

import tensorgrad as tg

torch = pytest.importorskip("torch")


def values(seed, *shape, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape)


def run(T, fn, arrays, grad=True):
    """fn's output and the gradient of its weighted sum with respect to each float input."""
    xs = [T.tensor(a, dtype=T.float64, requires_grad=grad) if a.dtype.kind == "f"
          else T.tensor(a) for a in arrays]
    out = fn(T, *xs)
    grads = []
    if out.requires_grad:
        weight = T.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
        grads = T.autograd.grad((out * weight).sum(), [x for x in xs if x.requires_grad])
    return out.detach().numpy(), [g.detach().numpy() for g in grads]


def check(fn, *arrays, grad=True):
    (ours, our_grads), (theirs, their_grads) = run(tg, fn, arrays, grad), \
        run(torch, fn, arrays, grad)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    for a, b in zip(our_grads, their_grads, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


# --- exceptions: PyTorch's type catches ours --------------------------------------------------
def x34(T):
    return T.arange(12.0).reshape(3, 4)


RAISES = {
    "einsum shapes": lambda T: T.einsum("ij,jk", T.ones(3, 4), T.ones(5, 2)),
    "einsum two ellipses": lambda T: T.einsum("...ik...,...jk->", T.ones(2, 3, 4), T.ones(2, 3, 4)),
    "einsum diagonal sizes": lambda T: T.einsum("ii->i", T.ones(2, 3)),
    "clamp without bounds": lambda T: T.clamp(x34(T)),
    "conv too small": lambda T: T.nn.functional.conv2d(T.ones(1, 1, 2, 2), T.ones(1, 1, 3, 3)),
    "pool too small": lambda T: T.nn.functional.max_pool2d(T.ones(1, 1, 2, 2), 3),
    "div rounding_mode": lambda T: T.div(x34(T), 2, rounding_mode="typo"),
    "flip repeated dim": lambda T: x34(T).flip((0, 0)),
    "pad mode": lambda T: T.nn.functional.pad(x34(T), (1, 1), mode="typo"),
    "pad reflect too wide": lambda T: T.nn.functional.pad(T.ones(1, 5, 5), (5, 0),
                                                          mode="reflect"),
    "scatter_reduce reduce": lambda T: x34(T).scatter_reduce(1, T.zeros(3, 1, dtype=T.int64),
                                                             T.ones(3, 1), "typo"),
    "roll shifts without dims": lambda T: x34(T).roll((1, 2)),
    "int to a negative int power": lambda T: T.tensor([2, 3]) ** -1,
    "scatter out of bounds": lambda T: T.zeros(3, 4).scatter(1, T.tensor([[0, 5]]),
                                                             T.ones(1, 2)),
    "scatter negative index": lambda T: T.zeros(3, 4).scatter(1, T.tensor([[0, -1]]),
                                                              T.ones(1, 2)),
    "gather out of bounds": lambda T: T.zeros(3, 4).gather(1, T.tensor([[0, 4]])),
    "index_add negative index": lambda T: T.zeros(3, 2).index_add(0, T.tensor([-1]),
                                                                  T.ones(1, 2)),
    "index_select out of bounds": lambda T: T.zeros(3).index_select(0, T.tensor([3])),
    "one_hot class too large": lambda T: T.nn.functional.one_hot(T.tensor([0, 3]), 3),
    "cross_entropy target shape": lambda T: T.nn.functional.cross_entropy(T.ones(4, 3),
                                                                          T.ones(4, 1)),
    "linspace negative steps": lambda T: T.linspace(0, 1, -1),
    "linspace bool": lambda T: T.linspace(0, 1, 3, dtype=T.bool),
    "getitem out of range": lambda T: x34(T)[5],
}


@pytest.mark.parametrize("name", sorted(RAISES))
def test_where_pytorch_raises_we_raise_what_its_callers_catch(name):
    with pytest.raises(Exception) as theirs:
        RAISES[name](torch)
    kind = type(theirs.value)
    assert kind in (RuntimeError, IndexError, NotImplementedError, TypeError), kind
    with pytest.raises(kind):
        RAISES[name](tg)


def test_op_errors_stay_value_errors_with_our_message():
    with pytest.raises(ValueError, match="clamp: at least one of min and max must be given"):
        tg.clamp(tg.ones(2))
    with pytest.raises(IndexError, match=r"gather: index values must lie in \[0, 4\)"):
        tg.zeros(3, 4).gather(1, tg.tensor([[0, 4]]))


# --- axis= and keepdims=, PyTorch's NumPy names ------------------------------------------------
AXIS = {
    "sum": lambda T, x: x.sum(axis=1, keepdims=True),
    "mean": lambda T, x: T.mean(x, axis=0),
    "max": lambda T, x: x.max(axis=1)[0],
    "min": lambda T, x: T.min(x, axis=1, keepdims=True)[0],
    "amax": lambda T, x: x.amax(axis=0),
    "std": lambda T, x: x.std(axis=1),
    "var": lambda T, x: T.var(x, axis=0, keepdims=True),
    "std_mean": lambda T, x: T.std_mean(x, axis=1)[0],
    "var_mean": lambda T, x: T.var_mean(x, axis=1)[1],
    "prod": lambda T, x: x.prod(axis=1),
    "cumsum": lambda T, x: x.cumsum(axis=1),
    "logsumexp": lambda T, x: T.logsumexp(x, axis=1),
    "softmax": lambda T, x: x.softmax(axis=0),
    "cat": lambda T, x: T.cat([x, x], axis=1),
    "stack": lambda T, x: T.stack([x, x], axis=1),
    "argmax": lambda T, x: x.argmax(axis=1).double(),
    "all": lambda T, x: (x > -1).all(axis=1).double(),
    "any": lambda T, x: T.any(x > 1, axis=0).double(),
}


@pytest.mark.parametrize("name", sorted(AXIS))
def test_axis_and_keepdims_name_dim_and_keepdim(name):
    check(AXIS[name], values(0, 3, 4))


def test_a_dim_and_its_alias_together_are_refused():
    with pytest.raises(TypeError, match="both dim= and its alias axis="):
        tg.ones(2, 3).sum(dim=0, axis=1)


# --- einsum: a letter repeated within one operand reads a diagonal -----------------------------
@pytest.mark.parametrize("equation, shapes", [
    ("ii", [(4, 4)]), ("ii->i", [(4, 4)]), ("ii->", [(4, 4)]), ("...ii->...i", [(3, 5, 5)]),
    ("...ii->...", [(3, 5, 5)]), ("iij->j", [(3, 3, 2)]), ("ijij->ij", [(2, 3, 2, 3)]),
    ("iii->i", [(3, 3, 3)]), ("ii,ij->j", [(3, 3), (3, 2)]), ("i,i", [(5,), (5,)]),
])
def test_einsum_repeated_letters(equation, shapes):
    check(lambda T, *xs: T.einsum(equation, *xs), *(values(i, *s) for i, s in enumerate(shapes)))


def test_einsum_diagonals_second_order():
    a = tg.tensor(values(3, 3, 3, 2), requires_grad=True)
    b = tg.tensor(values(4, 3, 2), requires_grad=True)
    assert tg.gradgradcheck(lambda a, b: tg.einsum("iij,ij->j", a, b), [a, b])


# --- max_unpool and conv_transpose3d ------------------------------------------------------------
@pytest.mark.parametrize("spatial, shape, kwargs", [
    (1, (2, 3, 9), dict(kernel_size=2)),
    (2, (2, 3, 9, 10), dict(kernel_size=3, stride=(2, 3), padding=1)),
    (2, (1, 2, 7, 6), dict(kernel_size=2, output_size=(99, 99, 7, 6))),
    (2, (3, 8, 8), dict(kernel_size=(2, 4))),
    (3, (1, 2, 4, 4, 6), dict(kernel_size=2)),
])
def test_max_unpool_puts_the_maxima_back(spatial, shape, kwargs):
    pool_args = {k: v for k, v in kwargs.items() if k != "output_size"}

    def fn(T, x):
        F = T.nn.functional
        pooled, indices = getattr(F, f"max_pool{spatial}d")(x, return_indices=True, **pool_args)
        return getattr(F, f"max_unpool{spatial}d")(pooled * 2.0, indices, **kwargs)
    check(fn, values(5, *shape))


def test_max_unpool_checks_its_output_size_and_second_order():
    x = tg.tensor(values(6, 1, 1, 4, 4), requires_grad=True)
    pooled, indices = tg.nn.functional.max_pool2d(x, 2, return_indices=True)
    with pytest.raises(RuntimeError, match="max_unpool2d: output_size"):
        tg.nn.functional.max_unpool2d(pooled, indices, 2, output_size=(9, 9))
    unpool = tg.nn.functional.max_unpool2d
    assert tg.gradgradcheck(lambda p: unpool(p * p, indices, 2), [pooled.detach().requires_grad_()])


def test_conv_transpose3d_and_its_module():
    kwargs = dict(stride=(2, 1, 2), padding=1, output_padding=(1, 0, 0), dilation=(1, 2, 1))
    check(lambda T, x, w, b: T.nn.functional.conv_transpose3d(x, w, b, **kwargs),
          values(7, 2, 4, 3, 4, 3), values(8, 4, 3, 2, 3, 2), values(9, 3))
    check(lambda T, x, w: T.nn.functional.conv_transpose3d(x, w, groups=2, stride=2),
          values(7, 1, 4, 2, 3, 2), values(8, 4, 1, 2, 2, 2))
    x = tg.tensor(values(1, 1, 2, 2, 2, 2), requires_grad=True)
    w = tg.tensor(values(2, 2, 1, 2, 2, 2), requires_grad=True)
    assert tg.gradgradcheck(lambda x, w: tg.nn.functional.conv_transpose3d(x, w, stride=2), [x, w])
    module = tg.nn.ConvTranspose3d(4, 6, 3, stride=2)
    assert module(tg.randn(2, 4, 3, 4, 5)).shape == \
        tuple(torch.nn.ConvTranspose3d(4, 6, 3, stride=2)(torch.randn(2, 4, 3, 4, 5)).shape)


# --- pad: negative widths, empty dims, the widths PyTorch allows -------------------------------
@pytest.mark.parametrize("pad, mode", [
    ((3, -5, 1, -5), "replicate"), ((3, -5, 1, -5), "reflect"), ((0, 0, 0, -5), "reflect"),
    ((-1, 2, 2, -1), "reflect"), ((-1, 2, 2, -1), "replicate"), ((1, -2, 2, -1), "circular"),
    ((3, 11, 0, 30), "replicate"), ((4, 4, 0, 4), "reflect"), ((-2, -1, 0, 0), "constant"),
])
def test_pad_widths_as_pytorch(pad, mode):
    check(lambda T, x: T.nn.functional.pad(x, pad, mode=mode), values(10, 1, 1, 5, 5))


def test_pad_reflect_with_a_negative_width_second_order():
    x = tg.tensor(values(11, 2, 5), requires_grad=True)
    assert tg.gradgradcheck(lambda x: tg.nn.functional.pad(x, (-1, 3), mode="reflect") ** 2,
                            [x])


# --- normalize's p, pow at exponent 0, uint8 images, indices -----------------------------------
@pytest.mark.parametrize("p", [0, -1, 0.5, 1, 3, math.inf])
def test_normalize_any_p_and_an_all_zero_row(p):
    rows = values(12, 3, 4)
    rows[0] = 0.0
    check(lambda T, x: T.nn.functional.normalize(x, p=p), rows)


def test_pow_with_a_zero_exponent_has_a_zero_base_gradient():
    base = np.array([-math.inf, math.inf, 0.0, 2.0])
    with np.errstate(all="ignore"):
        (ours, [ga, gb]), (theirs, [ta, tb]) = [
            run(T, lambda T, a, b: a ** b, [base, np.zeros(4)]) for T in (tg, torch)]
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(ga, ta)
    np.testing.assert_array_equal(ga, np.zeros(4))
    np.testing.assert_array_equal(gb, tb)  # nan, inf, 0, log 2 in both


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("shape, size", [((2, 3, 64, 64), (10, 10)), ((1, 2, 7, 9), (13, 5))])
def test_interpolate_uint8_images(mode, shape, size):
    image = np.random.default_rng(13).integers(0, 256, shape).astype(np.uint8)
    theirs = torch.nn.functional.interpolate(torch.tensor(image), size=size, mode=mode).numpy()
    ours = tg.nn.functional.interpolate(tg.tensor(image), size=size, mode=mode)
    assert ours.dtype == tg.uint8
    # rounded after each pass as PyTorch's integer kernel, whose fixed-point weights may differ
    assert np.abs(ours.numpy().astype(int) - theirs.astype(int)).max() <= 1


INDICES = {
    "tuple items": lambda x: x[0, (0, 1)],
    "tuple items with an ellipsis": lambda x: x[0, ..., (1, 2)],
    "tuple items after None": lambda x: x[None, 0, (0, 1)],
    "a list of lists is a tuple": lambda x: x[[[0, 1], [1, 2]]],
    "a list of tuples is a tuple": lambda x: x[[(0, 1), (1, 2)]],
    "a list with a slice is a tuple": lambda x: x[[slice(0, 1), 1]],
    "a tuple of tuples": lambda x: x[((0, 1), (1, 2))],
}


@pytest.mark.parametrize("name", sorted(INDICES))
def test_indexing_with_tuples_and_lists_of_lists(name):
    check(lambda T, x: INDICES[name](x), values(14, 2, 3, 4))
