"""Division: true division, quotients rounded toward zero or down, remainder and fmod.

True division's gradient is the quotient rule. A rounded quotient is piecewise constant, so its
gradient is zero, as in PyTorch. remainder and fmod are `a - b * q` with q the floor or the
truncated quotient: gradient 1 with respect to a and -q with respect to b. Integer division by
zero is PyTorch's error; float division by zero gives inf or nan.
"""
from ..autograd import primitive
from ..backend import get_default_dtype
from ..creation import zeros_like
from ..errors import OpError
from ..tensor import Tensor, tensor_method, tensor_operator, tensor_reflected
from .operands import binary_operands
from .unary import reciprocal

_ROUNDING_MODES = (None, "trunc", "floor")


def _check_divisor(name, b):
    if b.dtype.kind in "iu" and bool((b == 0).any()):
        raise RuntimeError(f"{name}: ZeroDivisionError (an integer tensor divided by zero)")


@primitive("div", saves=(0, 1), saves_when={0: (1,)})
def _div(xp, a, b):
    return a / b


@_div.defvjp
def _div_vjp(ctx, g):
    a, b = ctx.inputs
    ga = g / b if ctx.needs_grad[0] else None
    gb = -g * a / (b * b) if ctx.needs_grad[1] else None
    return ga, gb


# Saves what true division saves, though its gradient is zero: PyTorch does, so an in-place
# write raises where its does.
@primitive("div_rounded", saves=(0, 1), saves_when={0: (1,)})
def _div_rounded(xp, a, b, rounding_mode):
    _check_divisor("div", b)
    if rounding_mode == "floor":
        return xp.floor_divide(a, b)  # the fmod-based quotient PyTorch and Python use for floats
    if a.dtype.kind == "f":
        return xp.trunc(a / b)
    # Integers: the floor quotient, one up where the exact quotient is negative and not whole.
    q = xp.floor_divide(a, b)
    return q + ((xp.remainder(a, b) != 0) & ((a < 0) != (b < 0))).astype(q.dtype)


@_div_rounded.defvjp
def _div_rounded_vjp(ctx, g):
    ctx.inputs  # noqa: B018 (read for its version check alone)
    zero = zeros_like(g)
    return (zero if ctx.needs_grad[0] else None), (zero if ctx.needs_grad[1] else None)


@primitive("remainder", saves=(0, 1), saves_when={0: (1,), 1: (1,)})
def _remainder(xp, a, b):
    _check_divisor("remainder", b)
    return xp.remainder(a, b)


@_remainder.defvjp
def _remainder_vjp(ctx, g):
    a, b = ctx.inputs
    gb = -g * div(a, b, rounding_mode="floor") if ctx.needs_grad[1] else None
    return g, gb


@primitive("fmod", saves=(0, 1), saves_when={0: (1,), 1: (1,)})
def _fmod(xp, a, b):
    _check_divisor("fmod", b)
    return xp.fmod(a, b)


@_fmod.defvjp
def _fmod_vjp(ctx, g):
    a, b = ctx.inputs
    gb = -g * div(a, b, rounding_mode="trunc") if ctx.needs_grad[1] else None
    return g, gb


def _numeric_operands(name, a, b):
    a, b = binary_operands(a, b)
    if a.dtype.kind == "b":
        raise TypeError(f"{name}: not implemented for bool tensors (got {a.dtype} and {b.dtype}); "
                        "convert them with .long() or .float() first")
    return a, b


@tensor_method
def div(input, other, rounding_mode=None):
    """input / other, broadcasting. rounding_mode None: true division (integers give floats);
    "trunc": the quotient rounded toward zero; "floor": rounded down (Python's //). Rounded
    quotients keep integer dtypes and have zero gradient."""
    if rounding_mode not in _ROUNDING_MODES:
        raise OpError(f"div: rounding_mode must be None, 'trunc' or 'floor', got "
                         f"{rounding_mode!r}")
    if rounding_mode is not None:
        return _div_rounded(*_numeric_operands("div", input, other), rounding_mode=rounding_mode)
    a, b = binary_operands(input, other)
    if a.dtype.kind not in "fc":  # true division of integers gives floats, as in PyTorch
        a, b = a.to(get_default_dtype()), b.to(get_default_dtype())
    if not isinstance(input, Tensor) and b.requires_grad:
        return reciprocal(b) * a  # PyTorch's form: it saves 1/b, not b
    return _div(a, b)


divide = tensor_method(div, "divide")
tensor_method(div, "__truediv__")
tensor_reflected(div, "truediv")


@tensor_method
def true_divide(input, other):
    """input / other, always true division (integers give floats)."""
    return div(input, other)


@tensor_method
def floor_divide(input, other):
    """The quotient rounded down, `input // other` (Python's and PyTorch's //). Its gradient is
    zero, as div(rounding_mode="floor")'s is; PyTorch's floor_divide has no backward at all."""
    return div(input, other, rounding_mode="floor")


@tensor_method
def remainder(input, other):
    """input - other * floor(input / other): the sign of the divisor, Python's `%`."""
    return _remainder(*_numeric_operands("remainder", input, other))


@tensor_method
def fmod(input, other):
    """input - other * trunc(input / other): the sign of the dividend, C's fmod."""
    return _fmod(*_numeric_operands("fmod", input, other))


tensor_operator(floor_divide, "floordiv")
tensor_operator(remainder, "mod")


@tensor_method
def fmod_(self, other):
    """In-place `fmod`."""
    return self._update("fmod_", fmod, other)
