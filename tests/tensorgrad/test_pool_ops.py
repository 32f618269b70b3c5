"""Pooling (ops/pool.py) against PyTorch: max pools (stride, padding, dilation, ceil_mode,
return_indices), average pools (count_include_pad, ceil_mode, divisor_override), adaptive
average and max pools, values and gradients; second order through gather."""
import numpy as np
import pytest

import tensorgrad as tg

torch = pytest.importorskip("torch")
F = torch.nn.functional
from torch_parity import check  # noqa: E402  (tests/ is on sys.path under pytest)


def distinct(*shape, seed=0):
    """Values without ties (a tie's gradient depends on which copy wins)."""
    rng = np.random.default_rng(seed)
    return rng.permutation(np.prod(shape)).reshape(shape) / 7.0 - 3.0


MAX2D = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1)),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=2, stride=3, padding=1, ceil_mode=True),
]


@pytest.mark.parametrize("kwargs", MAX2D)
@pytest.mark.parametrize("shape", [(2, 3, 7, 8), (1, 1, 5, 5), (3, 6, 7)])
def test_max_pool2d(kwargs, shape):
    check(lambda x: tg.max_pool2d(x, **kwargs, return_indices=True),
          lambda x: F.max_pool2d(x, **kwargs, return_indices=True), distinct(*shape))


@pytest.mark.parametrize("kwargs", [dict(kernel_size=3), dict(kernel_size=2, stride=1, padding=1),
                                    dict(kernel_size=3, dilation=2, ceil_mode=True, stride=2)])
def test_max_pool1d(kwargs):
    check(lambda x: tg.max_pool1d(x, **kwargs), lambda x: F.max_pool1d(x, **kwargs),
          distinct(2, 3, 10))


def test_max_pool_ties_and_nan_follow_torch():
    x = np.array([[[[1.0, 1.0, 0.0], [1.0, np.nan, 2.0], [2.0, 2.0, 2.0]]]])
    check(lambda t: tg.max_pool2d(t, 2, 1, return_indices=True),
          lambda t: F.max_pool2d(t, 2, 1, return_indices=True), x)


AVG2D = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(2, 3), stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=2, padding=1, divisor_override=3),
]


@pytest.mark.parametrize("kwargs", AVG2D)
@pytest.mark.parametrize("shape", [(2, 3, 7, 8), (1, 1, 4, 4), (2, 5, 6)])
def test_avg_pool2d(kwargs, shape):
    check(lambda x: tg.avg_pool2d(x, **kwargs), lambda x: F.avg_pool2d(x, **kwargs),
          distinct(*shape))


@pytest.mark.parametrize("kwargs", [dict(kernel_size=3), dict(kernel_size=4, stride=3, padding=2,
                                                                ceil_mode=True,
                                                                count_include_pad=False)])
def test_avg_pool1d(kwargs):
    check(lambda x: tg.avg_pool1d(x, **kwargs), lambda x: F.avg_pool1d(x, **kwargs),
          distinct(2, 3, 11))


@pytest.mark.parametrize("size", [1, (3, 2), (5, 7), (None, 2), 6])
def test_adaptive_avg_pool2d(size):
    check(lambda x: tg.adaptive_avg_pool2d(x, size), lambda x: F.adaptive_avg_pool2d(x, size),
          distinct(2, 3, 5, 7))


@pytest.mark.parametrize("size", [(3, 2), (2, 5), 1])
def test_adaptive_max_pool2d(size):
    check(lambda x: tg.adaptive_max_pool2d(x, size, return_indices=True),
          lambda x: F.adaptive_max_pool2d(x, size, return_indices=True), distinct(2, 3, 5, 7))


def test_adaptive_pools_1d_and_unbatched():
    check(lambda x: tg.adaptive_avg_pool1d(x, 4), lambda x: F.adaptive_avg_pool1d(x, 4),
          distinct(3, 10))
    check(lambda x: tg.adaptive_max_pool1d(x, 3), lambda x: F.adaptive_max_pool1d(x, 3),
          distinct(2, 3, 10))


def test_second_order():
    x = tg.tensor(distinct(1, 2, 5, 5), requires_grad=True)
    assert tg.gradgradcheck(lambda t: tg.max_pool2d(t, 3, 2, padding=1), [x])
    assert tg.gradgradcheck(lambda t: tg.avg_pool2d(t, 2, ceil_mode=True, padding=1), [x])
    assert tg.gradgradcheck(lambda t: tg.adaptive_avg_pool2d(t, (2, 3)), [x])


def test_3d_pools():
    x = distinct(1, 2, 4, 5, 6)
    check(lambda t: tg.max_pool3d(t, 2, padding=1), lambda t: F.max_pool3d(t, 2, padding=1), x)
    check(lambda t: tg.avg_pool3d(t, (2, 3, 2)), lambda t: F.avg_pool3d(t, (2, 3, 2)), x)


@pytest.mark.parametrize("call, message", [
    (lambda: tg.max_pool2d(tg.randn(1, 1, 4, 4), 2, padding=2), "at most half"),
    (lambda: tg.max_pool2d(tg.randn(4, 4), 2), "4-D"),
    (lambda: tg.avg_pool2d(tg.randn(1, 1, 2, 2), 3), "does not fit"),
    (lambda: tg.adaptive_avg_pool2d(tg.randn(1, 1, 4, 4), (1, 2, 3)), "output_size"),
    (lambda: tg.avg_pool2d(tg.randn(1, 1, 4, 4), 2, divisor_override=0), "divisor_override"),
])
def test_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_an_empty_batch_pools_to_an_empty_output():
    x = distinct(0, 3, 6, 6)
    check(lambda t: tg.max_pool2d(t, 2, return_indices=True),
          lambda t: F.max_pool2d(t, 2, return_indices=True), x)
    check(lambda t: tg.avg_pool2d(t, 3, padding=1), lambda t: F.avg_pool2d(t, 3, padding=1), x)
