"""Math functions and activations against PyTorch: values and gradients on random shapes
(0-d, size-1 and empty dims included) and broadcasts, the gradient at every kink, stability at
+-50 in float32, second-order gradient checks of the composites, and the in-place forms."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402
from torch_parity import FAST, check, seeds  # noqa: E402

import tensorgrad as tg  # noqa: E402
import tensorgrad.nn.functional as TF  # noqa: E402

F = torch.nn.functional

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)  # empty dims too
pairs = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0,
                                          max_side=4)


def sample(seed, shape, domain="real"):
    """Float64 values: 'real' normal, 'positive' >= 0.1, 'unit' in (-0.9, 0.9), 'above1' >= 1.1,
    'spread' normal * 4 kept 0.05 away from the integers and the half-integers (the kinks)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if domain == "positive":
        return np.abs(x) + 0.1
    if domain == "unit":
        return np.tanh(x) * 0.9
    if domain == "above1":
        return np.abs(x) + 1.1
    if domain == "spread":
        x = x * 4
        off = (x * 2) - np.round(x * 2)
        return np.where(np.abs(off) < 0.1, x + 0.1, x)
    return x


UNARY = [
    ("tan", tg.tan, torch.tan, "unit"),
    ("asin", tg.asin, torch.asin, "unit"),
    ("acos", tg.acos, torch.acos, "unit"),
    ("atan", tg.atan, torch.atan, "real"),
    ("arctan", tg.arctan, torch.arctan, "real"),
    ("sinh", tg.sinh, torch.sinh, "real"),
    ("cosh", tg.cosh, torch.cosh, "real"),
    ("asinh", tg.asinh, torch.asinh, "real"),
    ("acosh", tg.acosh, torch.acosh, "above1"),
    ("atanh", tg.atanh, torch.atanh, "unit"),
    ("log2", tg.log2, torch.log2, "positive"),
    ("log10", tg.log10, torch.log10, "positive"),
    ("log1p", tg.log1p, torch.log1p, "unit"),
    ("exp2", tg.exp2, torch.exp2, "real"),
    ("expm1", tg.expm1, torch.expm1, "real"),
    ("frac", tg.frac, torch.frac, "spread"),
    ("sinc", tg.sinc, torch.sinc, "real"),
    ("method", lambda x: x.tan() + x.sinh() + x.log1p() + x.frac(),
     lambda x: x.tan() + x.sinh() + x.log1p() + x.frac(), "unit"),
]


@pytest.mark.parametrize("name, ours, theirs, domain", UNARY, ids=[u[0] for u in UNARY])
@FAST
@given(shape=shapes, seed=seeds)
def test_unary(name, ours, theirs, domain, shape, seed):
    check(ours, theirs, sample(seed, shape, domain), seed=seed)


BINARY = [
    ("atan2", tg.atan2, torch.atan2, "real"),
    ("hypot", tg.hypot, torch.hypot, "real"),
    ("copysign", tg.copysign, torch.copysign, "real"),
    ("logaddexp", tg.logaddexp, torch.logaddexp, "real"),
    ("logaddexp2", tg.logaddexp2, torch.logaddexp2, "real"),
    ("xlogy", tg.xlogy, torch.xlogy, "positive"),
    ("lerp_tensor", lambda a, b: tg.lerp(a, b, b.detach() * 0 + 0.3),
     lambda a, b: torch.lerp(a, b, b.detach() * 0 + 0.3), "real"),
    ("lerp_scalar", lambda a, b: a.lerp(b, 0.75), lambda a, b: a.lerp(b, 0.75), "real"),
]


@pytest.mark.parametrize("name, ours, theirs, domain", BINARY, ids=[b[0] for b in BINARY])
@FAST
@given(shapes_=pairs, seed=seeds)
def test_binary_broadcast(name, ours, theirs, domain, shapes_, seed):
    a_shape, b_shape = shapes_.input_shapes
    check(ours, theirs, sample(seed, a_shape, domain), sample(seed + 1, b_shape, domain),
          seed=seed)


@FAST
@given(shapes_=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3),
       seed=seeds)
def test_lerp_with_a_weight_that_requires_grad(shapes_, seed):
    a, b, w = (sample(seed + i, s) for i, s in enumerate(shapes_.input_shapes))
    w = 1 / (1 + np.exp(-w))  # weights in (0, 1): both of lerp's branches are taken
    check(tg.lerp, torch.lerp, a, b, w, seed=seed)


def test_special_values_match_torch():
    x = np.array([0.0, -0.0, 1.0, -1.0, 8.0, 1000.0, 1e-12, -1e-12, 2.5, -2.5])
    t = torch.tensor(x)
    for name in ("log2", "log10", "log1p", "expm1", "exp2", "sinh", "cosh", "asinh", "atan",
                 "frac", "sinc"):
        with np.errstate(all="ignore"):
            ours = getattr(tg, name)(tg.tensor(x)).numpy()
        np.testing.assert_allclose(ours, getattr(torch, name)(t).numpy(), rtol=1e-15,
                                   err_msg=name)
    exact = tg.tensor([8.0, 1000.0], dtype=tg.float64)
    assert tg.log2(exact)[0].item() == 3.0 and tg.log10(exact)[1].item() == 3.0
    signs = tg.copysign(tg.tensor([1.0, 1.0, -2.0]), tg.tensor([-0.0, 0.0, 3.0])).tolist()
    assert signs == [-1.0, 1.0, 2.0]
    a, b = tg.tensor([1.0, -3.0]), tg.tensor([5.0, 7.0])
    assert tg.lerp(a, b, 1.0).tolist() == b.tolist() and tg.lerp(a, b, 0.0).tolist() == a.tolist()
    assert tg.xlogy(tg.tensor([0.0, 0.0]), tg.tensor([0.0, -1.0])).tolist() == [0.0, 0.0]
    big = tg.tensor([1e200], dtype=tg.float64)
    assert tg.hypot(big, big).item() == pytest.approx(1e200 * 2 ** 0.5)
    assert tg.logaddexp(tg.tensor(1000.0), tg.tensor(1000.0)).item() == pytest.approx(1000.6931)


def test_gradients_at_the_edges_follow_torch():
    # copysign at input 0, xlogy at input 0, hypot at the origin (NaN in both)
    cases = [(tg.copysign, torch.copysign, [0.0, 2.0, -1.0], [-1.0, -0.0, 3.0]),
             (tg.xlogy, torch.xlogy, [0.0, 0.0, 2.0], [0.0, 3.0, 0.5]),
             (tg.hypot, torch.hypot, [0.0, 3.0], [0.0, 4.0]),
             (tg.atan2, torch.atan2, [1.0, -1.0, 0.5], [0.0, -2.0, -0.5])]
    for ours, theirs, a, b in cases:
        x, y = tg.tensor(a, requires_grad=True), tg.tensor(b, requires_grad=True)
        tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            ours(x, y).sum().backward()
        theirs(tx, ty).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), err_msg=ours.__name__)
        if ours is not tg.xlogy:  # torch gives NaN for d/dy at (0, 0); we give 0
            np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), err_msg=ours.__name__)


COMPOSITES = [
    ("frac", tg.frac, "spread"), ("sinc", tg.sinc, "real"),
    ("logaddexp2", lambda a: tg.logaddexp2(a, a * 0.5 + 1.0), "real"),
    ("lerp", lambda a: tg.lerp(a, a * a, a.sigmoid()), "real"),
    ("xlogy", lambda a: tg.xlogy(a, a * a + 1.0), "real"),
]


@pytest.mark.parametrize("name, fn, domain", COMPOSITES, ids=[c[0] for c in COMPOSITES])
def test_composites_second_order(name, fn, domain):
    x = tg.tensor(sample(3, (2, 3), domain), dtype=tg.float64, requires_grad=True)
    assert tg.gradcheck(fn, (x,)) and tg.gradgradcheck(fn, (x,))


def test_float_promotion_and_errors():
    assert tg.atan2(tg.tensor([1, 2]), tg.tensor([3, 4])).dtype == tg.float32
    assert tg.hypot(tg.tensor([1.0]), 2).dtype == tg.float32
    with pytest.raises(TypeError, match="tan: expected a floating point tensor, got int64"):
        tg.tensor([1, 2]).tan()
    with pytest.raises(TypeError, match="lerp: input and end must be floating point"):
        tg.lerp(tg.tensor([1.0]), tg.tensor([1.0], dtype=tg.float64), 0.5)


# --- in-place forms -------------------------------------------------------------------------------
INPLACE = ["exp", "log", "sqrt", "sin", "cos", "tanh", "tan", "asin", "atan", "sinh", "log1p",
           "expm1", "log2", "exp2", "abs", "floor", "round", "trunc", "frac", "sigmoid", "relu",
           "neg", "reciprocal", "square"]


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_forms_match_torch(name):
    x = sample(1, (3, 4), "unit") * 0.5 + 0.5  # in (0.05, 0.95): every function's domain
    ours, theirs = tg.tensor(x), torch.tensor(x)
    result = getattr(ours, name + "_")()
    getattr(theirs, name + "_")()
    assert result is ours
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_binary_inplace_forms_and_their_checks():
    a, b = sample(1, (2, 3)), sample(2, (3,))
    for name, args in (("atan2", (b,)), ("hypot", (b,)), ("copysign", (b,)), ("lerp", (b, 0.3)),
                       ("pow", (2.0,)), ("xlogy", (np.abs(b) + 0.1,))):
        ours, theirs = tg.tensor(a), torch.tensor(a)
        getattr(ours, name + "_")(*(tg.tensor(v) if isinstance(v, np.ndarray) else v
                                    for v in args))
        getattr(theirs, name + "_")(*(torch.tensor(v) if isinstance(v, np.ndarray) else v
                                      for v in args))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, err_msg=name)
    with pytest.raises(RuntimeError, match=r"atan2_: output with shape \[3\] doesn't match "
                                           r"the broadcast shape \[2, 3\]"):
        tg.tensor(b).atan2_(tg.tensor(a))
    leaf = tg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="exp_: a leaf Variable that requires grad"):
        leaf.exp_()
    with tg.no_grad():
        leaf.exp_()
    np.testing.assert_allclose(leaf.detach().numpy(), np.e, rtol=1e-6)


def test_inplace_bumps_the_version_so_saved_tensors_are_checked():
    x = tg.rand(3, requires_grad=True)
    y = x * 1.0
    z = y.detach()
    before = z._version[0]
    z.sin_()
    assert z._version[0] == before + 1
    y.sigmoid_()  # inside the graph: y takes sigmoid(y) and its gradient, as in PyTorch
    y.sum().backward()
    s = 1.0 / (1.0 + np.exp(-np.sin(x.detach().numpy())))  # z.sin_() wrote y's memory too
    np.testing.assert_allclose(np.asarray(x.grad), s * (1.0 - s), rtol=1e-6)


# --- activations ----------------------------------------------------------------------------------
ACTIVATIONS = [
    ("leaky_relu", lambda x: TF.leaky_relu(x, 0.1), lambda x: F.leaky_relu(x, 0.1)),
    ("elu", lambda x: TF.elu(x, 0.7), lambda x: F.elu(x, 0.7)),
    ("celu", lambda x: TF.celu(x, 1.5), lambda x: F.celu(x, 1.5)),
    ("selu", TF.selu, F.selu),
    ("relu6", TF.relu6, F.relu6),
    ("hardtanh", lambda x: TF.hardtanh(x, -0.5, 1.5), lambda x: F.hardtanh(x, -0.5, 1.5)),
    ("hardsigmoid", TF.hardsigmoid, F.hardsigmoid),
    ("hardswish", TF.hardswish, F.hardswish),
    ("softplus", TF.softplus, F.softplus),
    ("softplus_beta", lambda x: TF.softplus(x, 2.0, 3.0), lambda x: F.softplus(x, 2.0, 3.0)),
    ("softsign", TF.softsign, F.softsign),
    ("logsigmoid", TF.logsigmoid, F.logsigmoid),
    ("mish", TF.mish, F.mish),
    ("silu", TF.silu, F.silu),
    ("tanhshrink", TF.tanhshrink, F.tanhshrink),
    ("softshrink", lambda x: TF.softshrink(x, 0.5), lambda x: F.softshrink(x, 0.5)),
    ("hardshrink", lambda x: x.hardshrink(0.5), lambda x: x.hardshrink(0.5)),
    ("threshold", lambda x: TF.threshold(x, 0.5, -2.0), lambda x: F.threshold(x, 0.5, -2.0)),
    ("relu", TF.relu, F.relu),
    ("prelu", lambda x: TF.prelu(x, tg.full((1,), 0.25, dtype=x.dtype)),
     lambda x: F.prelu(x, torch.full((1,), 0.25, dtype=x.dtype))),
]
ACTIVATION_IDS = [a[0] for a in ACTIVATIONS]


@pytest.mark.parametrize("name, ours, theirs", ACTIVATIONS, ids=ACTIVATION_IDS)
@FAST
@given(shape=shapes, seed=seeds)
def test_activation(name, ours, theirs, shape, seed):
    check(ours, theirs, sample(seed, shape, "spread"), seed=seed)


KINKS = [-6.0, -3.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 3.0, 6.0]


@pytest.mark.parametrize("name, ours, theirs", ACTIVATIONS, ids=ACTIVATION_IDS)
def test_activation_gradient_at_the_kinks(name, ours, theirs):
    x, tx = tg.tensor(KINKS, requires_grad=True), torch.tensor(KINKS, requires_grad=True)
    ours(x).sum().backward()
    theirs(tx).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name, ours, theirs", ACTIVATIONS, ids=ACTIVATION_IDS)
def test_activation_is_stable_at_50_in_float32(name, ours, theirs):
    # Against torch in float64, the exact reference: float32 torch itself loses digits in places
    # (softsign's gradient at 1000 by 1e-4; ours by 3e-5, the cancellation in 1/(1+|x|) -
    # |x|/(1+|x|)^2). Tails such as exp(-50) must survive, not become 0.
    values = [-1000.0, -50.0, -20.5, 20.5, 50.0, 1000.0]
    x = tg.tensor(values, requires_grad=True)
    tx = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    y, ty = ours(x), theirs(tx)
    assert y.dtype == tg.float32
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-6, atol=1e-30)
    y.sum().backward()
    ty.sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=5e-5, atol=1e-30)


@pytest.mark.parametrize("name, ours, theirs", ACTIVATIONS, ids=ACTIVATION_IDS)
def test_activation_second_order(name, ours, theirs):
    x = tg.tensor(sample(5, (2, 4), "spread"), dtype=tg.float64, requires_grad=True)
    assert tg.gradgradcheck(ours, (x,))


@FAST
@given(shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=3), seed=seeds,
       per_channel=st.booleans())
def test_prelu(shape, seed, per_channel):
    channels = shape[1] if per_channel and len(shape) >= 2 else 1
    weight = np.random.default_rng(seed).uniform(-0.5, 0.5, channels)
    check(TF.prelu, F.prelu, sample(seed, shape, "spread"), weight, seed=seed)


@FAST
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3), seed=seeds,
       data=st.data())
def test_glu(shape, seed, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    shape = tuple(s * 2 if i == dim % len(shape) else s for i, s in enumerate(shape))
    check(lambda x: TF.glu(x, dim), lambda x: F.glu(x, dim), sample(seed, shape), seed=seed)


@FAST
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3), seed=seeds)
def test_softmin_default_dim(shape, seed):
    check(TF.softmin, lambda x: F.softmin(x, dim=0 if x.ndim in (0, 1, 3) else 1),
          sample(seed, shape), seed=seed)


def test_inplace_flag_writes_into_the_input():
    for name, args in (("relu", ()), ("leaky_relu", (0.2,)), ("elu", (0.5,)), ("celu", (2.0,)),
                       ("selu", ()), ("relu6", ()), ("hardtanh", (-0.3, 0.3)), ("silu", ()),
                       ("hardsigmoid", ()), ("hardswish", ()), ("mish", ()),
                       ("threshold", (0.1, 5.0))):
        x = sample(4, (3, 4), "spread")
        ours, theirs = tg.tensor(x), torch.tensor(x)
        assert getattr(TF, name)(ours, *args, inplace=True) is ours
        getattr(F, name)(theirs, *args, inplace=True)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, err_msg=name)
        assert getattr(TF, name)(ours, *args).shape == ours.shape  # inplace=False by default
    for name, args in (("relu_", ()), ("elu_", (0.5,)), ("leaky_relu_", (0.2,)),
                       ("hardtanh_", (-0.3, 0.3)), ("threshold_", (0.1, 5.0))):
        x = sample(5, (3, 4), "spread")
        ours, theirs = tg.tensor(x), torch.tensor(x)
        assert getattr(TF, name)(ours, *args) is ours
        getattr(F, name)(theirs, *args)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, err_msg=name)
    with pytest.raises(RuntimeError, match="leaky_relu: a leaf Variable that requires grad"):
        TF.leaky_relu(tg.ones(2, requires_grad=True), inplace=True)


def test_activation_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"glu: dimension 1 of the input of shape \(2, 3\)"):
        TF.glu(tg.ones(2, 3))
    with pytest.raises(ValueError, match=r"prelu: weight of shape \(2,\) needs 1 or C = 3"):
        TF.prelu(tg.ones(4, 3), tg.ones(2))
    with pytest.raises(ValueError, match="hardtanh: max_val"):
        TF.hardtanh(tg.ones(2), 1.0, -1.0)
    with pytest.raises(ValueError, match="softshrink: lambd must be >= 0"):
        TF.softshrink(tg.ones(2), -1.0)
    with pytest.raises(TypeError, match="elu: expected a floating point tensor"):
        TF.elu(tg.tensor([1, 2]))
