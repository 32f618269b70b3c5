"""gradcheck and gradgradcheck must catch wrong rules, or the registry-driven op tests prove
nothing."""
import pytest

import tensorgrad as tg
from tensorgrad.autograd import Primitive
from tensorgrad.tensor import from_array


def _square(vjp):
    """An unregistered x * x primitive with the given VJP (the registry stays untouched)."""
    prim = Primitive("square_under_test", lambda xp, x: x * x, saves=(0,))
    prim.defvjp(vjp)
    return prim


def test_gradcheck_passes_a_correct_rule(device):
    square = _square(lambda ctx, g: 2.0 * g * ctx.inputs[0])
    x = tg.randn(3, dtype=tg.float64, device=device, requires_grad=True)
    assert tg.gradcheck(square, [x]) and tg.gradgradcheck(square, [x])


def test_gradcheck_catches_a_wrong_rule(device):
    square = _square(lambda ctx, g: g * ctx.inputs[0])  # the factor 2 is missing
    x = tg.randn(3, dtype=tg.float64, device=device, requires_grad=True)
    with pytest.raises(tg.GradcheckError, match=r"gradient of input 0 \(shape \(3,\)\) is wrong "
                                                r"at \(\d,\): analytical .*, numerical"):
        tg.gradcheck(square, [x])
    assert tg.gradcheck(square, [x], raise_exception=False) is False


def test_gradgradcheck_catches_a_rule_written_on_raw_arrays(device):
    # Right first derivative, but computed outside tensorgrad ops, so it has no derivative.
    square = _square(lambda ctx, g: from_array(2.0 * g.data * ctx.inputs[0].data, g._backend))
    x = tg.randn(3, dtype=tg.float64, device=device, requires_grad=True)
    assert tg.gradcheck(square, [x])
    with pytest.raises(tg.GradcheckError):
        tg.gradgradcheck(square, [x])


def test_gradgradcheck_with_an_output_that_needs_no_grad(device):
    x = tg.randn(4, dtype=tg.float64, device=device, requires_grad=True)
    assert tg.gradgradcheck(lambda t: (t.argmax(), (t * t * t).sum()), [x])


def test_gradcheck_needs_float64():
    x = tg.randn(3, requires_grad=True)
    with pytest.raises(tg.GradcheckError, match="input 0 is float32; finite differences need "
                                                "float64"):
        tg.gradcheck(lambda t: t * 2, [x])
