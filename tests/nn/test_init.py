"""nn.init: gains and fans against PyTorch, distributions by their moments and bounds."""
import math

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import init


@pytest.mark.parametrize("nonlinearity,param", [
    ("linear", None), ("sigmoid", None), ("tanh", None), ("relu", None), ("leaky_relu", None),
    ("leaky_relu", 0.2), ("leaky_relu", math.sqrt(5)), ("selu", None), ("conv2d", None)])
def test_calculate_gain_matches_torch(nonlinearity, param):
    torch = pytest.importorskip("torch")
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(
        torch.nn.init.calculate_gain(nonlinearity, param))


def test_calculate_gain_rejects_unknown():
    with pytest.raises(ValueError, match="unsupported nonlinearity 'swish'"):
        init.calculate_gain("swish")


def _param(*shape):
    return nn.Parameter(tg.empty(*shape))  # requires grad: init must work under no_grad itself


def _values(t):
    return t.detach().numpy()


def test_constant_fills():
    assert _values(init.zeros_(_param(3))).tolist() == [0.0] * 3
    assert _values(init.ones_(_param(3))).tolist() == [1.0] * 3
    assert _values(init.constant_(_param(2), 0.5)).tolist() == [0.5, 0.5]


def test_uniform_and_normal():
    u = _values(init.uniform_(_param(200, 100), -2.0, 3.0))
    assert u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.05
    n = _values(init.normal_(_param(200, 100), 1.0, 2.0))
    assert abs(n.mean() - 1.0) < 0.05 and abs(n.std() - 2.0) < 0.05


def test_xavier_matches_its_formula():
    fan_in, fan_out = 300, 200
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    u = _values(init.xavier_uniform_(_param(fan_out, fan_in), gain=2.0))
    assert np.abs(u).max() <= 2.0 * bound and abs(u.std() - 2.0 * bound / math.sqrt(3)) < 0.01
    n = _values(init.xavier_normal_(_param(fan_out, fan_in)))
    assert abs(n.std() - math.sqrt(2.0 / (fan_in + fan_out))) < 0.002


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
def test_kaiming_matches_its_formula(mode):
    t = _param(200, 100, 3)  # fan_in = 300, fan_out = 600
    fan = 300 if mode == "fan_in" else 600
    std = math.sqrt(2.0) / math.sqrt(fan)
    u = _values(init.kaiming_uniform_(t, mode=mode, nonlinearity="relu"))
    assert np.abs(u).max() <= math.sqrt(3.0) * std and abs(u.std() - std) < 0.02 * std
    n = _values(init.kaiming_normal_(t, mode=mode, nonlinearity="relu"))
    assert abs(n.std() - std) < 0.02 * std


def test_trunc_normal_stays_in_bounds_with_the_truncated_moments():
    t = _values(init.trunc_normal_(_param(300, 100), mean=0.5, std=1.0, a=0.0, b=1.5))
    assert t.min() >= 0.0 and t.max() <= 1.5
    # moments of N(0.5, 1) truncated to [-0.5, +1.0] around its mean (scipy-free formulas)
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    alpha, beta = -0.5, 1.0
    mass = cdf(beta) - cdf(alpha)
    shift = (pdf(alpha) - pdf(beta)) / mass
    mean = 0.5 + shift
    var = 1 + (alpha * pdf(alpha) - beta * pdf(beta)) / mass - shift ** 2
    assert abs(t.mean() - mean) < 0.01 and abs(t.std() - math.sqrt(var)) < 0.01
    g = _values(init.trunc_normal_(_param(1000), std=0.02))  # the ViT/BERT use: bounds far out
    assert abs(g.std() - 0.02) < 0.002


def test_trunc_normal_rejects_hopeless_ranges():
    with pytest.raises(ValueError, match="less than 1e-4"):
        init.trunc_normal_(_param(3), a=10.0, b=11.0)


def test_fans_need_two_dims():
    with pytest.raises(ValueError, match="at least 2 dimensions, got shape \\(5,\\)"):
        init.xavier_uniform_(_param(5))


def test_init_keeps_dtype():
    for fn in (init.xavier_uniform_, init.kaiming_normal_, init.trunc_normal_, init.normal_):
        assert fn(nn.Parameter(tg.empty(4, 4))).dtype == tg.float32
        assert fn(nn.Parameter(tg.empty(4, 4, dtype=tg.float64))).dtype == tg.float64


@pytest.mark.parametrize("shape, gain", [((5, 3), 1.0), ((3, 5), 2.0), ((4, 2, 3), 0.5),
                                         ((6, 6), 1.0)])
def test_orthogonal_gives_orthonormal_rows_or_columns_as_torch(shape, gain):
    torch = pytest.importorskip("torch")
    w = tg.empty(*shape)
    assert init.orthogonal_(w, gain=gain) is w
    t = torch.nn.init.orthogonal_(torch.empty(*shape), gain=gain)
    for m in (w.numpy(), t.numpy()):
        m = m.reshape(shape[0], -1)
        small = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
        np.testing.assert_allclose(small, gain ** 2 * np.eye(min(m.shape)), atol=1e-5)
    assert w.dtype == tg.float32
    a, b = tg.empty(4, 4), tg.empty(4, 4)
    init.orthogonal_(a), init.orthogonal_(b)
    assert not np.allclose(a.numpy(), b.numpy())  # drawn, not fixed
    with pytest.raises(ValueError, match="2 or more dimensions"):
        init.orthogonal_(tg.empty(3))
