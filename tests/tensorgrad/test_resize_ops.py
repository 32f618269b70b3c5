"""F.pad's modes (constant, reflect, replicate, circular; negative widths crop) and
F.interpolate's modes against PyTorch, values and gradients, plus their errors."""
import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.nn.functional as TF

torch = pytest.importorskip("torch")
F = torch.nn.functional
from torch_parity import check  # noqa: E402  (tests/ is on sys.path under pytest)


def rand(*shape):
    return np.random.default_rng(sum(shape)).standard_normal(shape)


PADS = [(2, 1), (1, 3, 2, 0), (-1, 2, 1, -2), (0, 0, 1, 1), (3, 3, 4, 4), (1, 0, 0, 2, 1, 1)]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("widths", PADS)
def test_pad_modes(mode, widths):
    # PyTorch takes 2k widths for the non-constant modes on (k + 1)- or (k + 2)-D inputs only
    shape = {2: (2, 3, 6), 4: (2, 3, 5, 4), 6: (1, 2, 3, 5, 4)}[len(widths)]
    check(lambda x: TF.pad(x, widths, mode=mode), lambda x: F.pad(x, widths, mode=mode),
          rand(*shape))


def test_pad_constant_value_and_any_rank():
    check(lambda x: TF.pad(x, (1, -1, 0, 2, 1, 0), value=2.5),
          lambda x: F.pad(x, (1, -1, 0, 2, 1, 0), value=2.5), rand(3, 4, 5))
    x = tg.tensor(rand(3, 4), requires_grad=True)
    assert tg.gradgradcheck(lambda t: TF.pad(t, (2, 1, 1, 2), mode="reflect") ** 2, [x])


@pytest.mark.parametrize("call, message", [
    (lambda: TF.pad(tg.randn(1, 3), (3, 0), mode="reflect"), "at most 2"),
    (lambda: TF.pad(tg.randn(1, 3), (0, 4), mode="circular"), "at most 3"),
    (lambda: TF.pad(tg.randn(1, 3), (1, 1), mode="reflect", value=1.0), "constant"),
    (lambda: TF.pad(tg.randn(1, 3), (1, 1, 1)), "even number"),
    (lambda: TF.pad(tg.randn(1, 3), (-2, -2)), "below size 0"),
])
def test_pad_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_an_unknown_pad_mode_is_not_implemented_as_in_pytorch():
    with pytest.raises(NotImplementedError):
        F.pad(torch.randn(1, 3), (1, 1), mode="wrap")
    with pytest.raises(NotImplementedError, match="pad: mode must be"):
        TF.pad(tg.randn(1, 3), (1, 1), mode="wrap")


RESIZE = [dict(size=(9, 4)), dict(scale_factor=2), dict(scale_factor=(0.6, 1.7)),
          dict(size=(1, 3)), dict(scale_factor=1.7, recompute_scale_factor=True)]


@pytest.mark.parametrize("kwargs", RESIZE)
@pytest.mark.parametrize("mode, align_corners", [
    ("nearest", None), ("nearest-exact", None), ("area", None), ("bilinear", False),
    ("bilinear", True), ("bicubic", False), ("bicubic", True)])
def test_interpolate_2d(kwargs, mode, align_corners):
    extra = {} if align_corners is None else {"align_corners": align_corners}
    check(lambda x: TF.interpolate(x, mode=mode, **extra, **kwargs),
          lambda x: F.interpolate(x, mode=mode, **extra, **kwargs), rand(2, 3, 5, 7))


@pytest.mark.parametrize("mode, shape, kwargs", [
    ("linear", (2, 3, 6), dict(scale_factor=1.5)),
    ("linear", (1, 2, 7), dict(size=3, align_corners=True)),
    ("nearest", (2, 3, 6), dict(size=13)),
    ("trilinear", (1, 2, 3, 4, 5), dict(size=(4, 5, 2))),
    ("nearest", (1, 2, 3, 4, 5), dict(scale_factor=(2, 1, 0.5))),
])
def test_interpolate_1d_and_3d(mode, shape, kwargs):
    check(lambda x: TF.interpolate(x, mode=mode, **kwargs),
          lambda x: F.interpolate(x, mode=mode, **kwargs), rand(*shape))


def test_interpolate_second_order():
    x = tg.tensor(rand(1, 1, 3, 4), requires_grad=True)
    assert tg.gradgradcheck(lambda t: TF.interpolate(t, scale_factor=2, mode="bicubic") ** 2, [x])


@pytest.mark.parametrize("call, message", [
    (lambda: TF.interpolate(tg.randn(1, 2, 4), size=3, mode="bilinear"), "4-D"),
    (lambda: TF.interpolate(tg.randn(1, 2, 4), size=3, scale_factor=2), "exactly one"),
    (lambda: TF.interpolate(tg.randn(1, 2, 4), size=3, align_corners=True), "align_corners"),
    (lambda: TF.interpolate(tg.randn(1, 2, 4, 4), size=(3, 3, 3)), "2 ints"),
    (lambda: TF.interpolate(tg.randn(1, 2, 4), size=2, mode="cubic"), "mode must be"),
])
def test_interpolate_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()
