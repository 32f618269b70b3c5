"""Two-argument math: atan2, hypot, copysign, logaddexp (primitives), and logaddexp2, lerp, xlogy
(composites), with their in-place `_` forms. Arguments broadcast; Python scalars follow the
tensor's dtype, and integer tensors become the default dtype (float32), as in PyTorch.

atan2 and hypot are primitives because their composites are wrong (atan(y / x) loses the
quadrant) or overflow (sqrt(x^2 + y^2) is inf for |x| > 1e154); logaddexp because its gradient
is sigmoid(a - b) everywhere, where max + log1p(exp(-|a - b|)) has a kink at a = b for the
second derivative; copysign because its sign test must see -0.0.
"""
import math

from ..autograd import primitive
from ..backend import get_default_dtype
from ..tensor import Tensor, tensor_method
from .activation import sigmoid
from .arithmetic import neg, reciprocal, square
from .operands import binary_operands
from .select import where
from .unary import inplace_form, log


def _float_operands(a, b, op):
    """Both operands as Tensors of one floating dtype (integers promote to the default dtype)."""
    a, b = binary_operands(a, b)
    if a.dtype.kind not in "fc":
        a, b = a.to(get_default_dtype()), b.to(get_default_dtype())
    if a._backend is not b._backend:
        raise RuntimeError(f"{op}: the operands are on {a.device} and {b.device}")
    return a, b


@primitive("atan2", saves=(0, 1))
def _atan2(xp, y, x):
    return xp.arctan2(y, x)


@_atan2.defvjp
def _atan2_vjp(ctx, g):
    y, x = ctx.inputs
    scale = g / (x * x + y * y)
    return (scale * x if ctx.needs_grad[0] else None), (-scale * y if ctx.needs_grad[1] else None)


@primitive("hypot", saves=(0, 1), saves_out=True)
def _hypot(xp, a, b):
    return xp.hypot(a, b)


@_hypot.defvjp
def _hypot_vjp(ctx, g):
    a, b = ctx.inputs
    scale = g / ctx.out  # 0 / 0 at the origin gives NaN, as in PyTorch
    return (scale * a if ctx.needs_grad[0] else None), (scale * b if ctx.needs_grad[1] else None)


@primitive("copysign", saves=(0,), saves_out=True)
def _copysign(xp, a, b):
    return xp.copysign(a, b)


@_copysign.defvjp
def _copysign_vjp(ctx, g):
    # d/da |a| sign(b) = out / a; PyTorch takes 0 at a = 0. The sign of b is piecewise constant:
    # its gradient is zero.
    a, = ctx.inputs
    ga = g * where(a == 0, 0.0, ctx.out / where(a == 0, 1.0, a)) if ctx.needs_grad[0] else None
    return ga, (g * 0.0 if ctx.needs_grad[1] else None)


@primitive("logaddexp", saves=(0, 1))
def _logaddexp(xp, a, b):
    return xp.logaddexp(a, b)


@_logaddexp.defvjp
def _logaddexp_vjp(ctx, g):
    a, b = ctx.inputs
    return (g * sigmoid(a - b) if ctx.needs_grad[0] else None), (g * sigmoid(b - a)
                                                                 if ctx.needs_grad[1] else None)


@tensor_method
def atan2(input, other):
    """The angle of the point (other, input), in (-pi, pi]: torch.atan2(y, x)."""
    return _atan2(*_float_operands(input, other, "atan2"))


@tensor_method
def hypot(input, other):
    """sqrt(input^2 + other^2) without overflow or underflow in the squares."""
    return _hypot(*_float_operands(input, other, "hypot"))


@tensor_method
def copysign(input, other):
    """|input| with the sign of other (-0.0 counts as negative)."""
    return _copysign(*_float_operands(input, other, "copysign"))


@tensor_method
def logaddexp(input, other):
    """log(exp(input) + exp(other)) without overflow."""
    return _logaddexp(*_float_operands(input, other, "logaddexp"))


_LN2 = math.log(2.0)


@tensor_method
def logaddexp2(input, other):
    """log2(2^input + 2^other) without overflow."""
    a, b = _float_operands(input, other, "logaddexp2")
    return logaddexp(a * _LN2, b * _LN2) * (1.0 / _LN2)


@tensor_method
def lerp(input, end, weight):
    """input + weight * (end - input); weight is a number or a tensor (all three broadcast).

    For weight >= 0.5 it is computed from the end, end - (1 - weight) * (end - input), as PyTorch
    does, so lerp(a, b, 1) is exactly b.
    """
    if not isinstance(input, Tensor) or not isinstance(end, Tensor):
        raise TypeError(f"lerp: input and end must be Tensors, got {type(input).__name__} and "
                        f"{type(end).__name__}")
    if input.dtype != end.dtype or input.dtype.kind != "f":
        raise TypeError(f"lerp: input and end must be floating point of one dtype, got "
                        f"{input.dtype} and {end.dtype}")
    diff = end - input
    if not isinstance(weight, Tensor):
        return input + weight * diff if weight < 0.5 else end - (1.0 - weight) * diff
    if weight.dtype != input.dtype:
        raise TypeError(f"lerp: weight must have the dtype of input ({input.dtype}), got "
                        f"{weight.dtype}")
    return where(weight < 0.5, input + weight * diff, end - (1.0 - weight) * diff)


@tensor_method
def xlogy(input, other):
    """input * log(other), and 0 where input is 0 (unless other is NaN).

    The gradient with respect to input is log(other), taken as 0 where input is 0 and
    other <= 0 (PyTorch's convention); the one with respect to other is input / other.
    """
    x, y = _float_operands(input, other, "xlogy")
    # log(1) = 0 stands in where the product is defined to be 0, so no log(0) or log(-1)
    # (and no NaN from their gradients) reaches the result.
    masked = (x == 0) & (y <= 0)
    return x * log(where(masked, 1.0, y))


for _op in (atan2, hypot, copysign, lerp, xlogy):
    inplace_form(_op, _op.__name__ + "_")
# arithmetic's unary members, whose in-place forms torch also has
for _op in (neg, reciprocal, square):  # pow_ is Tensor's own (inplace.py)
    inplace_form(_op, _op.__name__ + "_")
