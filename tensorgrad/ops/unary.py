"""Unary math primitives (exp, log, sqrt, abs, trigonometric and hyperbolic functions and their
inverses, log1p/expm1, log2/log10/exp2, erf, erfinv), the rounding functions, and the in-place
`_` forms.

Each primitive is its forward on arrays followed by its VJP in tensorgrad ops. The inverse and
hyperbolic functions, log1p/expm1 and the base-2/10 forms are primitives rather than composites
for accuracy: sinh(1e-10) as (e^x - e^-x) / 2 keeps 7 digits, log1p(1e-12) as log(1 + x) none,
log(1000) / log(10) is 2.9999999999999996; the backend's own functions are exact to rounding.
"""
import math

from ..autograd import primitive
from ..tensor import from_array, tensor_method
from .operands import require_float
from .select import where


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


# erfinv: Giles' single-precision polynomial ("Approximating the erfinv function", 2010) as a
# start, then Newton steps to float64 accuracy, with only log/sqrt/exp/erf from the backend (no
# SciPy). Near +-1 erf(y) has no digits left to compare with x, so there the steps solve
# log(erfc(y)) = log(1 - |x|) instead, erfc from its continued fraction (exact enough for y > 2).
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
               -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _polynomial(coefficients, w):
    p = coefficients[0]
    for c in coefficients[1:]:
        p = c + p * w
    return p


def _erfc_fraction(xp, y, terms=60):
    """K with erfc(y) = exp(-y^2) / (sqrt(pi) K): K = y + (1/2) / (y + 1 / (y + (3/2) / ...))."""
    k = y
    for n in range(terms, 0, -1):
        k = y + (n / 2.0) / k
    return k


@primitive("erfinv", saves=(0,))  # its input, as PyTorch saves
def _erfinv(xp, x):
    t = x.astype("float64")
    inside = xp.abs(t) < 1
    u = xp.where(inside, t, 0.0)  # |x| >= 1 is filled in below
    w = -xp.log((1.0 - u) * (1.0 + u))
    central = _polynomial(_GILES_CENTRAL, w - 2.5)
    tail = _polynomial(_GILES_TAIL, xp.sqrt(w) - 3.0)
    y = xp.abs(xp.where(w < 5.0, central, tail) * u)  # solve for |x|, sign restored at the end
    a = xp.abs(u)
    near = a > 0.999  # erf's absolute rounding would dominate: work with erfc
    log_q = xp.log(xp.where(near, 1.0 - a, 1.0))  # 1 - |x| is exact for |x| >= 1/2
    for _ in range(4):
        k = _erfc_fraction(xp, xp.where(near, y, 3.0))
        h = -y * y - 0.5 * math.log(math.pi) - xp.log(k) - log_q  # log erfc(y) - log(1 - |x|)
        by_erfc = y + h / (2.0 * k)  # h'(y) = -2 K
        by_erf = y - (xp.erf(y) - a) / (2.0 / math.sqrt(math.pi) * xp.exp(-y * y))
        y = xp.where(near, by_erfc, by_erf)
    edge = xp.where(xp.abs(t) == 1, xp.inf, xp.nan)  # +-1 -> +-inf, |x| > 1 and NaN -> NaN
    return xp.copysign(xp.where(inside, y, edge), t).astype(x.dtype, copy=False)


@_erfinv.defvjp
def _erfinv_vjp(ctx, g):
    y = erfinv(ctx.inputs[0])
    return g * (math.sqrt(math.pi) / 2.0) * exp(y * y)


@primitive("tan", saves_out=True)
def _tan(xp, x):
    return xp.tan(x)


@_tan.defvjp
def _tan_vjp(ctx, g):
    return g * (1.0 + ctx.out * ctx.out)


@primitive("asin", saves=(0,))
def _asin(xp, x):
    return xp.arcsin(x)


@_asin.defvjp
def _asin_vjp(ctx, g):
    x, = ctx.inputs
    return g / sqrt(1.0 - x * x)


@primitive("acos", saves=(0,))
def _acos(xp, x):
    return xp.arccos(x)


@_acos.defvjp
def _acos_vjp(ctx, g):
    x, = ctx.inputs
    return -g / sqrt(1.0 - x * x)


@primitive("atan", saves=(0,))
def _atan(xp, x):
    return xp.arctan(x)


@_atan.defvjp
def _atan_vjp(ctx, g):
    x, = ctx.inputs
    return g / (1.0 + x * x)


@primitive("sinh", saves=(0,))
def _sinh(xp, x):
    return xp.sinh(x)


@_sinh.defvjp
def _sinh_vjp(ctx, g):
    x, = ctx.inputs
    return g * cosh(x)


@primitive("cosh", saves=(0,))
def _cosh(xp, x):
    return xp.cosh(x)


@_cosh.defvjp
def _cosh_vjp(ctx, g):
    x, = ctx.inputs
    return g * sinh(x)


@primitive("asinh", saves=(0,))
def _asinh(xp, x):
    return xp.arcsinh(x)


@_asinh.defvjp
def _asinh_vjp(ctx, g):
    x, = ctx.inputs
    return g / sqrt(x * x + 1.0)


@primitive("acosh", saves=(0,))
def _acosh(xp, x):
    return xp.arccosh(x)


@_acosh.defvjp
def _acosh_vjp(ctx, g):
    x, = ctx.inputs
    return g / sqrt((x - 1.0) * (x + 1.0))  # factored: x * x - 1 cancels near x = 1


@primitive("atanh", saves=(0,))
def _atanh(xp, x):
    return xp.arctanh(x)


@_atanh.defvjp
def _atanh_vjp(ctx, g):
    x, = ctx.inputs
    return g / (1.0 - x * x)


@primitive("log1p", saves=(0,))
def _log1p(xp, x):
    return xp.log1p(x)


@_log1p.defvjp
def _log1p_vjp(ctx, g):
    x, = ctx.inputs
    return g / (1.0 + x)


@primitive("expm1", saves=(0,))
def _expm1(xp, x):
    return xp.expm1(x)


@_expm1.defvjp
def _expm1_vjp(ctx, g):
    x, = ctx.inputs
    return g * exp(x)  # not out + 1: for x < -17 that is 0 in float32, exp(x) is not


# Its own primitive, saving its output as PyTorch's does: `2 / x` is reciprocal(x) * 2 there too,
# so a write into x afterwards is harmless.
@primitive("reciprocal", saves_out=True)
def _reciprocal(xp, x):
    return 1.0 / x


@_reciprocal.defvjp
def _reciprocal_vjp(ctx, g):
    y = ctx.out
    return -g * y * y


@primitive("log2", saves=(0,))
def _log2(xp, x):
    return xp.log2(x)


@_log2.defvjp
def _log2_vjp(ctx, g):
    x, = ctx.inputs
    return g / (x * math.log(2.0))


@primitive("log10", saves=(0,))
def _log10(xp, x):
    return xp.log10(x)


@_log10.defvjp
def _log10_vjp(ctx, g):
    x, = ctx.inputs
    return g / (x * math.log(10.0))


@primitive("exp2", saves_out=True)
def _exp2(xp, x):
    return xp.exp2(x)


@_exp2.defvjp
def _exp2_vjp(ctx, g):
    return g * ctx.out * math.log(2.0)


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
erfinv = tensor_method(_unary(_erfinv, "erfinv"))
tan = tensor_method(_unary(_tan, "tan"))
asin = tensor_method(_unary(_asin, "asin"))
acos = tensor_method(_unary(_acos, "acos"))
atan = tensor_method(_unary(_atan, "atan"))
sinh = tensor_method(_unary(_sinh, "sinh"))
cosh = tensor_method(_unary(_cosh, "cosh"))
asinh = tensor_method(_unary(_asinh, "asinh"))
acosh = tensor_method(_unary(_acosh, "acosh"))
atanh = tensor_method(_unary(_atanh, "atanh"))
log1p = tensor_method(_unary(_log1p, "log1p"))
expm1 = tensor_method(_unary(_expm1, "expm1"))
log2 = tensor_method(_unary(_log2, "log2"))
log10 = tensor_method(_unary(_log10, "log10"))
exp2 = tensor_method(_unary(_exp2, "exp2"))
reciprocal = tensor_method(_unary(_reciprocal, "reciprocal"))
# NumPy's spellings, which torch also accepts
arcsin, arccos, arctan = (tensor_method(f, "arc" + f.__name__[1:]) for f in (asin, acos, atan))
arcsinh, arccosh, arctanh = (tensor_method(f, "arc" + f.__name__[1:])
                             for f in (asinh, acosh, atanh))


# --- rounding: piecewise constant, so the gradient is zero (as in PyTorch, rather than an error)
def _zero_vjp(ctx, g):
    return from_array(ctx.backend.zeros_like(g.data), ctx.backend)


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


tensor_method(abs, "__abs__")


@tensor_method
def rsqrt(x):
    return sqrt(x).reciprocal()



@tensor_method
def frac(x):
    """x - trunc(x): the fractional part, with x's sign (gradient 1, as in PyTorch)."""
    return x - trunc(x)


@tensor_method
def sinc(x):
    """sin(pi x) / (pi x), and 1 at x = 0 (the limit; the gradient there is 0)."""
    require_float(x, "sinc")
    zero = x == 0
    px = where(zero, 1.0, x) * math.pi  # no 0 / 0 at x = 0, in the value or the gradient
    return where(zero, 1.0, sin(px) / px)


# --- in-place forms: x.exp_() and friends, for tensors autograd does not track -------------------
def apply_inplace(x, op, name, *args, **kwargs):
    """Compute op(x, ...) and write it into x: what x.exp_() and F.relu(x, inplace=True) do, with
    the meaning every in-place op has here (`_update` in tensorgrad/inplace.py): in memory
    outside the graph, PyTorch's error on a leaf that requires grad, and the Tensor object
    taking the result inside the graph."""
    return x._update(name, lambda t, _: op(t, *args, **kwargs), None)


def inplace_form(op, name):
    """Declare the Tensor method `name` (e.g. exp_) as the in-place form of op."""
    def method(x, *args, **kwargs):
        return apply_inplace(x, op, name, *args, **kwargs)
    method.__name__, method.__qualname__ = name, name
    method.__doc__ = f"In-place {op.__name__}: writes {op.__name__}(self, ...) into self."
    return tensor_method(method, name)


for _op in (exp, log, sqrt, rsqrt, sin, cos, tanh, erf, erfinv, tan, asin, acos, atan, sinh, cosh,
            asinh, acosh, atanh, log1p, expm1, log2, log10, exp2, abs, sign, floor, ceil, trunc,
            round, frac, sinc):
    inplace_form(_op, _op.__name__ + "_")
