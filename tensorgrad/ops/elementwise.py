"""Elementwise primitives (arithmetic, unary math, comparisons, casts) and their composites.

Each primitive is its forward on arrays followed by its VJP in tensorgrad ops. Broadcasting is
not undone here: the engine sums every gradient back to its input's shape.
"""
import math

from ..autograd import primitive
from ..tensor import Tensor, tensor_method
from .operands import as_operand, binary_operands, require_float


# --- arithmetic ---------------------------------------------------------------------------------
@primitive("add")
def _add(xp, a, b):
    return a + b


@_add.defvjp
def _add_vjp(ctx, g):
    return g, g


@primitive("sub")
def _sub(xp, a, b):
    return a - b


@_sub.defvjp
def _sub_vjp(ctx, g):
    return g, (-g if ctx.needs_grad[1] else None)


@primitive("mul", saves=(0, 1))
def _mul(xp, a, b):
    return a * b


@_mul.defvjp
def _mul_vjp(ctx, g):
    a, b = ctx.inputs
    return (g * b if ctx.needs_grad[0] else None), (g * a if ctx.needs_grad[1] else None)


@primitive("neg")
def _neg(xp, x):
    return -x


@_neg.defvjp
def _neg_vjp(ctx, g):
    return -g


@primitive("pow", saves=(0, 1), saves_out=True)
def _pow(xp, a, b):
    return a ** b


@_pow.defvjp
def _pow_vjp(ctx, g):
    a, b = ctx.inputs
    ga = g * b * a ** (b - 1) if ctx.needs_grad[0] else None
    # d(a^b)/db = a^b log a; where a == 0 PyTorch takes 0 (the limit for b > 0), not NaN.
    gb = g * where(a == 0, 0.0, ctx.out * log(where(a == 0, 1.0, a))) \
        if ctx.needs_grad[1] else None
    return ga, gb


@tensor_method
def add(a, b, alpha=1):
    a, b = binary_operands(a, b)
    return _add(a, b if alpha == 1 else b * alpha)


@tensor_method
def sub(a, b, alpha=1):
    a, b = binary_operands(a, b)
    return _sub(a, b if alpha == 1 else b * alpha)


@tensor_method
def mul(a, b):
    return _mul(*binary_operands(a, b))


@tensor_method
def neg(x):
    return _neg(x)


@tensor_method
def pow(a, b):
    return _pow(*binary_operands(a, b))


@tensor_method
def square(x):
    return x * x


@tensor_method
def reciprocal(x):
    return 1.0 / x


multiply = tensor_method(mul, "multiply")
subtract = tensor_method(sub, "subtract")
negative = tensor_method(neg, "negative")


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


@primitive("sigmoid", saves_out=True)
def _sigmoid(xp, x):
    # tanh form: no overflow warnings for large |x|, exact to float rounding.
    return xp.tanh(x * 0.5) * 0.5 + 0.5


@_sigmoid.defvjp
def _sigmoid_vjp(ctx, g):
    y = ctx.out
    return g * y * (1.0 - y)


def _relu_composite(x):
    return x * (x > 0).to(x.dtype)


# The VJP works on arrays (one pass: g times the bool mask; the op-by-op form made three and two
# temporaries, benchmarks/: mlp_step); create_graph differentiates the composite.
@primitive("relu", saves=(0,), composite=_relu_composite)
def _relu(xp, x):
    return xp.maximum(x, 0)


@_relu.defvjp
def _relu_vjp(ctx, g):
    x, xp = ctx.inputs[0], ctx.backend
    out = xp.empty_like(g.data)  # an array even for 0-d inputs, where multiply gives a scalar
    return Tensor._constant(xp.multiply(g.data, x.data > 0, out=out), xp)


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
sigmoid = tensor_method(_unary(_sigmoid, "sigmoid"))
erf = tensor_method(_unary(_erf, "erf"))


@tensor_method
def abs(x):
    return _abs(x)


@tensor_method
def relu(x):
    return _relu(x)


@tensor_method
def rsqrt(x):
    return sqrt(x).reciprocal()


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715


def _gelu_composite(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1.0 + tanh(_SQRT_2_OVER_PI * (x + _GELU_CUBIC * x * x * x)))
    return 0.5 * x * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))


# Fused: the composite is 6-8 elementwise ops and as many again in backward (benchmarks/
# gpt_step); here the forward is in-place passes over one buffer and the VJP one expression.
@primitive("gelu", saves=(0,), saves_extra=True, composite=_gelu_composite)
def _gelu(xp, x, approximate):
    # gelu(x) = 0.5 x gate(x), gate = 1 + tanh(u) or 1 + erf(x / sqrt 2); the gate is kept for
    # the VJP, which then needs no tanh or erf of its own.
    kernels = xp.kernels(x)
    if kernels is not None and approximate == "tanh":
        return kernels.gelu_tanh(x)
    gate = xp.empty_like(x)  # an array even for 0-d x, so the passes below work in place
    if approximate == "tanh":
        xp.multiply(x, x, out=gate)
        gate *= _GELU_CUBIC
        gate += 1.0
        gate *= x
        gate *= _SQRT_2_OVER_PI
        xp.tanh(gate, out=gate)
    else:
        gate[...] = xp.erf(x * (1.0 / math.sqrt(2.0)))
    gate += 1.0
    y = x * gate
    y *= 0.5
    return y, gate


@_gelu.defvjp
def _gelu_vjp(ctx, g):
    # In-place passes over two buffers: each fresh temporary of this size costs as much as the
    # arithmetic (page faults on new memory).
    x, = ctx.inputs
    gate, xp = ctx.extra, ctx.backend
    kernels = xp.kernels(x.data, g.data)
    if kernels is not None and ctx.attrs["approximate"] == "tanh":
        return Tensor._constant(kernels.gelu_tanh_backward(x.data, gate, g.data), xp)
    x, gate = x.data.reshape(x.shape or (1,)), gate.reshape(x.shape or (1,))  # 0-d: no scalars
    slope = x * x
    if ctx.attrs["approximate"] == "tanh":
        # d/dx 0.5 x (1 + t) = 0.5 (1 + t) (1 + x (1 - t) u'),  t = tanh u = gate - 1,
        # u' = c (1 + 3 * 0.044715 x^2)
        slope *= 3.0 * _GELU_CUBIC * _SQRT_2_OVER_PI
        slope += _SQRT_2_OVER_PI
        slope *= x
        slope *= 2.0 - gate
        slope += 1.0
        slope *= gate
        slope *= 0.5
    else:
        # d/dx x Phi(x) = Phi(x) + x phi(x),  Phi = gate / 2
        slope *= -0.5
        xp.exp(slope, out=slope)
        slope *= x
        slope *= 1.0 / math.sqrt(2.0 * math.pi)
        slope += 0.5 * gate
    slope *= g.data.reshape(slope.shape)
    return Tensor._constant(slope.reshape(g.shape), xp)


def gelu(x, approximate="none"):
    """GELU: x * Phi(x). approximate='tanh' is GPT-2's tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    require_float(x, "gelu")
    return _gelu(x, approximate=approximate)


def silu(x):
    """SiLU (swish): x * sigmoid(x)."""
    return x * sigmoid(x)


# --- two-argument selections ---------------------------------------------------------------------
@primitive("maximum", saves=(0, 1))
def _maximum(xp, a, b):
    return xp.maximum(a, b)


@primitive("minimum", saves=(0, 1))
def _minimum(xp, a, b):
    return xp.minimum(a, b)


def _select_vjp(ctx, g):
    # The winner takes the gradient; on a tie each side takes half, as PyTorch does.
    a, b = ctx.inputs
    wins = (a > b) if ctx.prim is _maximum else (a < b)
    share = wins.to(g.dtype) + (a == b).to(g.dtype) * 0.5
    return (g * share if ctx.needs_grad[0] else None), (g * (1.0 - share)
                                                         if ctx.needs_grad[1] else None)


_maximum.defvjp(_select_vjp)
_minimum.defvjp(_select_vjp)


@tensor_method
def maximum(a, b):
    return _maximum(*binary_operands(a, b))


@tensor_method
def minimum(a, b):
    return _minimum(*binary_operands(a, b))


@primitive("clamp", saves=(0,))
def _clamp(xp, x, min=None, max=None):
    return xp.clip(x, min, max)


@_clamp.defvjp
def _clamp_vjp(ctx, g):
    x, = ctx.inputs
    lo, hi = ctx.attrs["min"], ctx.attrs["max"]
    inside = None
    if lo is not None:
        inside = x >= lo
    if hi is not None:
        inside = (x <= hi) if inside is None else inside & (x <= hi)
    return g * inside.to(g.dtype)


@tensor_method
def clamp(x, min=None, max=None):
    """Limit x to [min, max]; tensor bounds broadcast (gradient 1 inside, 0 outside)."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = x if min is None else maximum(x, min)
        return out if max is None else minimum(out, max)
    return _clamp(x, min=min, max=max)


clip = tensor_method(clamp, "clip")


@primitive("where")
def _where(xp, a, b, condition):
    return xp.where(condition.data, a, b)


@_where.defvjp
def _where_vjp(ctx, g):
    condition = ctx.attrs["condition"]
    return (where(condition, g, 0.0) if ctx.needs_grad[0] else None,
            where(condition, 0.0, g) if ctx.needs_grad[1] else None)


def where(condition, a, b):
    """Elementwise `a if condition else b`, broadcasting all three."""
    if not isinstance(condition, Tensor):
        raise TypeError(f"where: condition must be a bool Tensor, got {type(condition).__name__}")
    if condition.data.dtype.kind != "b":
        condition = condition != 0
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = as_operand(a, condition.float())
    a, b = binary_operands(a, b)
    if condition._backend is not a._backend:
        raise RuntimeError(f"where: condition is on {condition.device} but the values are on "
                           f"{a.device}")
    return _where(a, b, condition=condition)


# --- dtype and device moves, copies -------------------------------------------------------------
@primitive("cast")
def _cast(xp, x, dtype):
    return x.astype(dtype)


@_cast.defvjp
def _cast_vjp(ctx, g):
    return g  # the engine casts every gradient back to its input's dtype


def cast(x, dtype):
    if dtype.kind not in "fc" and x.requires_grad:
        return _cast(x.detach(), dtype=dtype)
    return _cast(x, dtype=dtype)


@primitive("to_device")
def _to_device(xp, x, target, source):
    return target.from_host(source.to_host(x))


@_to_device.defvjp
def _to_device_vjp(ctx, g):
    return to_device(g, ctx.attrs["source"])


def to_device(x, target):
    out = _to_device(x, target=target, source=x._backend)
    out._backend = target
    return out


@primitive("clone")
def _clone(xp, x):
    return x.copy()


@_clone.defvjp
def _clone_vjp(ctx, g):
    return g


def clone(x):
    return _clone(x)


# --- comparisons, logic and rounding: no gradient ------------------------------------------------
def _nondiff(name, fn, arity):
    prim = primitive(name, differentiable=False)(fn)
    if arity == 2:
        def op(a, b):
            return prim(*binary_operands(a, b))
    else:
        def op(x):
            return prim(x)
    op.__name__ = name
    return op


eq = tensor_method(_nondiff("eq", lambda xp, a, b: a == b, 2))
ne = tensor_method(_nondiff("ne", lambda xp, a, b: a != b, 2))
lt = tensor_method(_nondiff("lt", lambda xp, a, b: a < b, 2))
le = tensor_method(_nondiff("le", lambda xp, a, b: a <= b, 2))
gt = tensor_method(_nondiff("gt", lambda xp, a, b: a > b, 2))
ge = tensor_method(_nondiff("ge", lambda xp, a, b: a >= b, 2))
logical_and = tensor_method(_nondiff("logical_and", lambda xp, a, b: xp.logical_and(a, b), 2))
logical_or = tensor_method(_nondiff("logical_or", lambda xp, a, b: xp.logical_or(a, b), 2))
logical_not = tensor_method(_nondiff("logical_not", lambda xp, x: xp.logical_not(x), 1))
sign = tensor_method(_nondiff("sign", lambda xp, x: xp.sign(x), 1))
floor = tensor_method(_nondiff("floor", lambda xp, x: xp.floor(x), 1))
ceil = tensor_method(_nondiff("ceil", lambda xp, x: xp.ceil(x), 1))
round = tensor_method(_nondiff("round", lambda xp, x: xp.round(x), 1))
isnan = tensor_method(_nondiff("isnan", lambda xp, x: xp.isnan(x), 1))
isinf = tensor_method(_nondiff("isinf", lambda xp, x: xp.isinf(x), 1))
isfinite = tensor_method(_nondiff("isfinite", lambda xp, x: xp.isfinite(x), 1))
