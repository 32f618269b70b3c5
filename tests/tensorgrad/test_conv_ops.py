"""Convolution (ops/conv.py) against PyTorch: values and gradients for strides, padding
(ints, 'same', 'valid'), dilation, groups, bias, odd sizes, batch 1 and unbatched inputs; the
transposed convolutions, F.unfold / F.fold; and the errors for arguments that do not fit."""
import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.nn.functional as TF

torch = pytest.importorskip("torch")
F = torch.nn.functional
from torch_parity import check  # noqa: E402  (tests/ is on sys.path under pytest)


def rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape)


CONV2D = [  # (x shape, weight shape, keyword arguments)
    ((2, 3, 7, 6), (4, 3, 3, 3), {}),
    ((1, 3, 8, 5), (2, 3, 3, 2), dict(stride=2, padding=1)),
    ((2, 4, 9, 7), (6, 2, 3, 3), dict(stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=2)),
    ((1, 4, 6, 6), (4, 1, 3, 3), dict(padding="same", groups=4)),  # depthwise
    ((2, 2, 5, 6), (3, 2, 2, 4), dict(padding="same", dilation=(1, 2))),  # even kernels
    ((2, 2, 5, 6), (3, 2, 2, 2), dict(padding="valid", stride=3)),
    ((3, 5, 5), (2, 3, 3, 3), dict(padding=1)),  # unbatched
    ((1, 1, 1, 1), (2, 1, 1, 1), {}),
]


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONV2D)
@pytest.mark.parametrize("bias", [False, True])
def test_conv2d(x_shape, w_shape, kwargs, bias):
    args = [rand(*x_shape), rand(*w_shape)] + ([rand(w_shape[0])] if bias else [])
    check(lambda *a: tg.conv2d(*a, **kwargs), lambda *a: F.conv2d(*a, **kwargs), *args)


CONV1D = [
    ((2, 3, 9), (4, 3, 3), dict(stride=2, padding=1)),
    ((1, 4, 7), (2, 2, 2), dict(dilation=3, groups=2, padding="same")),
    ((3, 6), (5, 3, 4), {}),
]


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONV1D)
def test_conv1d(x_shape, w_shape, kwargs):
    check(lambda x, w, b: tg.conv1d(x, w, b, **kwargs), lambda x, w, b: F.conv1d(x, w, b, **kwargs),
          rand(*x_shape), rand(*w_shape), rand(w_shape[0]))


def test_conv3d():
    check(lambda x, w: tg.conv3d(x, w, stride=(1, 2, 1), padding=(1, 0, 1)),
          lambda x, w: F.conv3d(x, w, stride=(1, 2, 1), padding=(1, 0, 1)),
          rand(1, 2, 4, 5, 3), rand(3, 2, 2, 2, 3))


TRANSPOSE2D = [  # (x shape, weight shape (C_in, C_out / groups, kh, kw), keyword arguments)
    ((2, 3, 4, 5), (3, 2, 3, 3), {}),
    ((1, 2, 3, 4), (2, 3, 3, 2), dict(stride=2, padding=1, output_padding=1)),
    ((2, 4, 3, 3), (4, 1, 2, 3), dict(stride=(2, 3), groups=2, dilation=(2, 1),
                                      output_padding=(1, 2))),
    ((2, 3, 3), (2, 2, 2, 2), dict(stride=2)),  # unbatched
]


@pytest.mark.parametrize("x_shape, w_shape, kwargs", TRANSPOSE2D)
def test_conv_transpose2d(x_shape, w_shape, kwargs):
    groups = kwargs.get("groups", 1)
    check(lambda x, w, b: tg.conv_transpose2d(x, w, b, **kwargs),
          lambda x, w, b: F.conv_transpose2d(x, w, b, **kwargs),
          rand(*x_shape), rand(*w_shape), rand(w_shape[1] * groups))


@pytest.mark.parametrize("kwargs", [{}, dict(stride=3, padding=1, output_padding=2),
                                    dict(dilation=2, groups=3, padding=2)])
def test_conv_transpose1d(kwargs):
    check(lambda x, w: tg.conv_transpose1d(x, w, **kwargs),
          lambda x, w: F.conv_transpose1d(x, w, **kwargs), rand(2, 3, 5), rand(3, 2, 3))


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=2),
                                    dict(kernel_size=3, padding=1, dilation=(1, 2))])
def test_unfold_and_fold(kwargs):
    x = rand(2, 3, 6, 7)
    check(lambda t: TF.unfold(t, **kwargs), lambda t: F.unfold(t, **kwargs), x)
    cols = F.unfold(torch.tensor(x), **kwargs).numpy()
    check(lambda c: TF.fold(c, (6, 7), **kwargs), lambda c: F.fold(c, (6, 7), **kwargs), cols)
    check(lambda c: TF.fold(c, (6, 7), **kwargs), lambda c: F.fold(c, (6, 7), **kwargs), cols[0])


def test_second_order_through_a_strided_grouped_conv():
    x = tg.randn(1, 4, 5, 4, dtype=tg.float64, requires_grad=True)
    w = tg.randn(2, 2, 2, 3, dtype=tg.float64, requires_grad=True)
    assert tg.gradgradcheck(lambda x, w: tg.conv2d(x, w, stride=2, padding=(1, 0), groups=2),
                            [x, w])


def test_float32_stays_float32_and_weights_promote():
    x = tg.randn(1, 2, 4, 4)
    out = tg.conv2d(x, tg.randn(3, 2, 3, 3), tg.zeros(3))
    assert out.dtype == tg.float32 and out.shape == (1, 3, 2, 2)
    assert tg.conv2d(x, tg.randn(3, 2, 3, 3, dtype=tg.float64)).dtype == tg.float64


@pytest.mark.parametrize("call, message", [
    (lambda: tg.conv2d(tg.randn(1, 3, 5, 5), tg.randn(4, 2, 3, 3)), "groups=1"),
    (lambda: tg.conv2d(tg.randn(1, 4, 5, 5), tg.randn(3, 2, 3, 3), groups=2), "groups=2"),
    (lambda: tg.conv2d(tg.randn(3, 5), tg.randn(4, 3, 3, 3)), "unbatched"),
    (lambda: tg.conv2d(tg.randn(1, 3, 5, 5), tg.randn(4, 3, 3, 3), stride=2, padding="same"),
     "needs stride 1"),
    (lambda: tg.conv2d(tg.randn(1, 3, 2, 2), tg.randn(4, 3, 3, 3)), "does not fit"),
    (lambda: tg.conv2d(tg.randn(1, 3, 5, 5), tg.randn(4, 3, 3, 3), padding="full"), "'valid'"),
    (lambda: tg.conv2d(tg.randn(1, 3, 5, 5), tg.randn(4, 3, 3, 3), stride=(1, 2, 3)), "2 ints"),
    (lambda: tg.conv2d(tg.randn(1, 3, 5, 5), tg.randn(4, 3, 3, 3), tg.randn(3)), "bias"),
    (lambda: tg.conv_transpose2d(tg.randn(1, 3, 4, 4), tg.randn(3, 2, 3, 3), stride=2,
                                 output_padding=2), "output_padding"),
    (lambda: TF.fold(tg.randn(1, 8, 5), (4, 4), 2), "do not fit"),
])
def test_errors_name_the_op_and_what_was_expected(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_integer_input_is_refused():
    with pytest.raises(TypeError, match="conv2d: expected a floating point"):
        tg.conv2d(tg.ones(1, 1, 3, 3, dtype=tg.int64), tg.randn(1, 1, 2, 2))


def test_an_empty_batch_gives_empty_outputs_and_gradients():
    check(lambda x, w, b: tg.conv2d(x, w, b, padding=1, groups=2),
          lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=2),
          rand(0, 4, 5, 5), rand(6, 2, 3, 3), rand(6))
    check(lambda x, w: tg.conv_transpose2d(x, w, stride=2), lambda x, w: F.conv_transpose2d(
        x, w, stride=2), rand(0, 2, 3, 3), rand(2, 3, 2, 2))
