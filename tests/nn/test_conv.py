"""Convolution and pooling layers against PyTorch: the same state_dict gives the same outputs
and gradients; parameter names, shapes and default initialisation; Flatten / Unflatten."""
import math

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn

from module_parity import outputs_and_gradients_match

torch = pytest.importorskip("torch")


def _same(ours, theirs, *shape, atol=1e-10, **call):
    """Load torch's float64 state_dict into ours; outputs and every gradient must agree."""
    theirs = theirs.double()
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    ours.double()
    x = np.random.default_rng(0).standard_normal(shape)
    tx = torch.tensor(x, requires_grad=True)
    ox = tg.tensor(x, requires_grad=True)
    out, tout = ours(ox, **call), theirs(tx, **call)
    outputs_and_gradients_match(ours, theirs, ox, tx, out, tout, atol, seed=1)


LAYERS = [
    ("Conv1d", (3, 4, 3), dict(stride=2, padding=1), (2, 3, 9)),
    ("Conv2d", (4, 6, 3), dict(padding="same", groups=2, bias=False), (2, 4, 6, 5)),
    ("Conv2d", (3, 2, (2, 3)), dict(stride=(2, 1), dilation=2, padding_mode="reflect",
                                    padding=2), (1, 3, 7, 8)),
    ("Conv2d", (2, 3, 3), dict(padding="same", padding_mode="circular"), (2, 2, 5, 4)),
    ("Conv2d", (2, 3, 2), dict(padding=1, padding_mode="replicate"), (2, 5, 4)),
    ("Conv3d", (2, 3, 2), dict(padding=(1, 0, 1)), (1, 2, 3, 4, 3)),
    ("ConvTranspose1d", (3, 2, 3), dict(stride=2, output_padding=1), (2, 3, 5)),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, padding=1, groups=2, dilation=(1, 2)),
     (2, 4, 3, 4)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", LAYERS)
def test_layers_match_torch(name, args, kwargs, shape):
    _same(getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs), *shape)


def test_conv_transpose_output_size_picks_the_output_padding():
    _same(nn.ConvTranspose2d(2, 3, 3, stride=2), torch.nn.ConvTranspose2d(2, 3, 3, stride=2),
          1, 2, 4, 4, output_size=(10, 9))
    with pytest.raises(ValueError, match="out of reach"):
        nn.ConvTranspose2d(2, 3, 3, stride=2)(tg.randn(1, 2, 4, 4), output_size=(12, 9))


def test_parameter_names_shapes_and_default_init():
    conv = nn.Conv2d(4, 8, (3, 5), groups=2)
    assert dict((k, v.shape) for k, v in conv.state_dict().items()) == {
        "weight": (8, 2, 3, 5), "bias": (8,)}
    assert nn.ConvTranspose2d(4, 6, 3, groups=2).weight.shape == (4, 3, 3, 3)
    big = nn.Conv2d(16, 256, 3)
    bound = 1 / math.sqrt(16 * 9)  # U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias
    w, b = big.weight.detach().numpy(), big.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound
    assert np.abs(b).max() <= bound and big.weight.dtype == tg.float32
    assert nn.Conv1d(2, 3, 2, bias=False).bias is None
    assert "padding_mode=reflect" in repr(nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"))


@pytest.mark.parametrize("make, message", [
    (lambda: nn.Conv2d(3, 4, 3, groups=2), "divisible by groups"),
    (lambda: nn.Conv2d(4, 4, 3, padding_mode="mirror"), "padding_mode"),
    (lambda: nn.Conv2d(4, 4, 3, stride=2, padding="same"), "stride 1"),
    (lambda: nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect"), "zeros"),
])
def test_constructor_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


POOLS = [
    ("MaxPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True), (2, 3, 7, 8)),
    ("MaxPool1d", (2,), {}, (2, 3, 7)),
    ("AvgPool2d", ((2, 3),), dict(padding=1, count_include_pad=False), (2, 3, 7, 8)),
    ("AvgPool2d", (2,), dict(divisor_override=3), (2, 3, 6, 6)),
    ("AvgPool1d", (3,), dict(stride=2, ceil_mode=True), (2, 3, 8)),
    ("AdaptiveAvgPool2d", ((2, 3),), {}, (2, 3, 7, 8)),
    ("AdaptiveAvgPool2d", (1,), {}, (2, 3, 7, 8)),
    ("AdaptiveMaxPool2d", ((3, 2),), {}, (2, 3, 7, 8)),
    ("Upsample", (), dict(scale_factor=2, mode="bilinear"), (2, 3, 4, 5)),
    ("Flatten", (), {}, (2, 3, 4, 5)),
    ("Flatten", (0, 2), {}, (2, 3, 4, 5)),
    ("Unflatten", (1, (2, -1)), {}, (2, 6, 5)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", POOLS)
def test_pooling_and_reshaping_layers_match_torch(name, args, kwargs, shape):
    _same(getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs), *shape)


def test_max_pool_layer_returns_indices():
    out, index = nn.MaxPool2d(2, return_indices=True)(tg.randn(1, 2, 4, 4))
    assert out.shape == index.shape == (1, 2, 2, 2) and index.dtype == tg.int64


@pytest.mark.parametrize("spatial, shape, kwargs", [
    (1, (2, 3, 9), dict(kernel_size=3, stride=2, padding=1)),
    (2, (2, 3, 6, 8), dict(kernel_size=2)),
    (2, (1, 2, 5, 6), dict(kernel_size=(3, 2), stride=(2, 2), padding=(1, 0))),
    (3, (1, 2, 4, 4, 6), dict(kernel_size=2, stride=2)),
])
def test_max_unpool_layers_match_torch(spatial, shape, kwargs):
    pool, unpool = f"MaxPool{spatial}d", f"MaxUnpool{spatial}d"
    x = np.random.default_rng(2).standard_normal(shape)
    tx, ox = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
    tpooled, tindex = getattr(torch.nn, pool)(**kwargs, return_indices=True)(tx)
    opooled, oindex = getattr(nn, pool)(**kwargs, return_indices=True)(ox)
    theirs, ours = getattr(torch.nn, unpool)(**kwargs), getattr(nn, unpool)(**kwargs)
    outputs_and_gradients_match(ours, theirs, ox, tx, ours(opooled, oindex),
                                theirs(tpooled, tindex))
    assert repr(ours) == repr(theirs)
    size = tuple(shape[:-1]) + (shape[-1] + 1,)  # a size the pooling also gives
    np.testing.assert_array_equal(ours(opooled, oindex, output_size=size).detach().numpy(),
                                  theirs(tpooled, tindex, output_size=size).detach().numpy())


def test_unflatten_errors():
    with pytest.raises(ValueError, match="cannot split dim 1"):
        nn.Unflatten(1, (4, 2))(tg.randn(2, 6))
