"""Unary math primitives (exp, log, sqrt, abs, sin, cos, tanh, erf) and the rounding functions.

Each primitive is its forward on arrays followed by its VJP in tensorgrad ops.
"""
import math

from ..autograd import primitive
from ..tensor import Tensor, tensor_method
from .operands import require_float


# --- unary math -----------------------------------------------------------------------------------
@primitive("exp", saves_out=True)
def _exp(xp, x):
    return xp.exp(x)


@_exp.defvjp
def _exp_vjp(ctx, g):
    return g * ctx.out


@primitive("log", saves=(0,))
def _log(xp, x):
    return xp.log(x)


@_log.defvjp
def _log_vjp(ctx, g):
    x, = ctx.inputs
    return g / x


@primitive("sqrt", saves_out=True)
def _sqrt(xp, x):
    return xp.sqrt(x)


@_sqrt.defvjp
def _sqrt_vjp(ctx, g):
    return g / (2.0 * ctx.out)


@primitive("abs", saves=(0,))
def _abs(xp, x):
    return xp.abs(x)


@_abs.defvjp
def _abs_vjp(ctx, g):
    x, = ctx.inputs
    return g * sign(x)


@primitive("sin", saves=(0,))
def _sin(xp, x):
    return xp.sin(x)


@_sin.defvjp
def _sin_vjp(ctx, g):
    x, = ctx.inputs
    return g * cos(x)


@primitive("cos", saves=(0,))
def _cos(xp, x):
    return xp.cos(x)


@_cos.defvjp
def _cos_vjp(ctx, g):
    x, = ctx.inputs
    return -g * sin(x)


@primitive("tanh", saves_out=True)
def _tanh(xp, x):
    return xp.tanh(x)


@_tanh.defvjp
def _tanh_vjp(ctx, g):
    y = ctx.out
    return g * (1.0 - y * y)


@primitive("erf", saves=(0,))
def _erf(xp, x):
    return xp.erf(x)


@_erf.defvjp
def _erf_vjp(ctx, g):
    x, = ctx.inputs
    return g * (2.0 / math.sqrt(math.pi)) * exp(-(x * x))


def _unary(prim, name):
    def op(x):
        require_float(x, name)
        return prim(x)
    op.__name__ = name
    return op


exp = tensor_method(_unary(_exp, "exp"))
log = tensor_method(_unary(_log, "log"))
sqrt = tensor_method(_unary(_sqrt, "sqrt"))
sin = tensor_method(_unary(_sin, "sin"))
cos = tensor_method(_unary(_cos, "cos"))
tanh = tensor_method(_unary(_tanh, "tanh"))
erf = tensor_method(_unary(_erf, "erf"))


# --- rounding: piecewise constant, so the gradient is zero (as in PyTorch, rather than an error)
def _zero_vjp(ctx, g):
    return Tensor._constant(ctx.backend.zeros_like(g.data), ctx.backend)


def _rounding(name, forward):
    prim = primitive(name)(forward)
    prim.defvjp(_zero_vjp)
    return prim


_sign = _rounding("sign", lambda xp, x: xp.sign(x))
_floor = _rounding("floor", lambda xp, x: xp.floor(x))
_ceil = _rounding("ceil", lambda xp, x: xp.ceil(x))
_trunc = _rounding("trunc", lambda xp, x: xp.trunc(x))
_round = _rounding("round", lambda xp, x, decimals: xp.round(x, decimals))


@tensor_method
def sign(x):
    return _sign(x)


@tensor_method
def floor(x):
    return _floor(x)


@tensor_method
def ceil(x):
    return _ceil(x)


@tensor_method
def trunc(x):
    return _trunc(x)


@tensor_method
def round(x, decimals=0):
    """Round half to even (as PyTorch and NumPy do), to `decimals` places."""
    return _round(x, decimals=decimals)


@tensor_method
def abs(x):
    return _abs(x)


@tensor_method
def rsqrt(x):
    return sqrt(x).reciprocal()

