"""Activation functions: sigmoid, relu, gelu (fused primitives) and the composites built from
them and the unary math: silu, leaky_relu, elu, celu, selu, hardtanh/relu6, hardsigmoid,
hardswish, softplus, logsigmoid, mish, softsign, the shrink functions, threshold, prelu, glu.

The composites pick their branch with `where`, so the gradient at each kink is the one PyTorch
defines (leaky_relu and elu take the negative side's slope at 0; hardtanh, relu6, hardsigmoid,
the shrinks and threshold take 0 on their boundaries), and every branch is kept finite where it
is not chosen: a masked-out inf still turns into NaN in the gradient (0 * inf).

relu and gelu are fused primitives whose first-order VJP works on arrays (one pass where the
op-by-op form makes several); relu's VJP switches to tensorgrad ops under create_graph, gelu
names its composite, which the engine differentiates then. Their forwards and VJP steps are
overridable: the CPU backend's compiled twins register against their names.
"""
import math

from ..autograd import is_grad_enabled, primitive
from ..backend.overrides import overridable
from ..tensor import from_array, tensor_method
from .operands import normalize_dim, require_float
from .select import where
from .unary import _unary, apply_inplace, erf, exp, expm1, inplace_form, log1p, tanh


@primitive("sigmoid", saves_out=True)
def _sigmoid(xp, x):
    # 1 / (1 + exp(-x)) is exact to rounding in both tails (the tanh form 0.5 tanh(x/2) + 0.5
    # rounds sigmoid(-50) = 2e-22 to 0, and silu's gradient with it). The exponent is capped
    # just below log(max float), so exp never overflows (and warns): below x = -87 in float32
    # the result is 1e-38 instead of 0 (float16, whose cap would be 10, runs in float32).
    # In-place passes over one buffer, where a select between two forms makes two (mlp_step).
    if x.dtype.itemsize < 4:
        return _sigmoid.forward(xp, x.astype(xp.float32)).astype(x.dtype)
    e = xp.empty_like(x)  # an array even for 0-d x, so the passes below work in place
    xp.negative(x, out=e)
    xp.minimum(e, math.log(xp.finfo(x.dtype).max) - 1.0, out=e)
    xp.exp(e, out=e)
    e += 1.0
    return xp.reciprocal(e, out=e)


@_sigmoid.defvjp
def _sigmoid_vjp(ctx, g):
    y = ctx.out
    return g * y * (1.0 - y)


# Saves its output, as PyTorch's does (out > 0 where x > 0), so a write into x after relu is
# harmless. The VJP works on arrays (one pass: g times the bool mask; the op-by-op form made
# three and two temporaries, benchmarks/: mlp_step), and in tensorgrad ops under create_graph.
@primitive("relu", saves_out=True)
@overridable("relu")
def _relu(xp, x):
    return xp.maximum(x, 0)


@overridable("relu.vjp")
def _relu_backward(xp, x, g):
    out = xp.empty_like(g)  # an array even for 0-d inputs, where multiply gives a scalar
    return xp.multiply(g, x > 0, out=out)


@_relu.defvjp
def _relu_vjp(ctx, g):
    if is_grad_enabled():
        y = ctx.out
        return g * (y > 0).to(y.dtype)
    xp = ctx.backend
    return from_array(_relu_backward(xp, ctx.out_data, g.data), xp)  # out > 0 iff x > 0


sigmoid = tensor_method(_unary(_sigmoid, "sigmoid"))


@tensor_method
def relu(x, inplace=False):
    """max(x, 0); the gradient at 0 is 0. inplace=True (F.relu's flag) writes into x."""
    return apply_inplace(x, _relu, "relu") if inplace else _relu(x)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715


def _gelu_composite(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1.0 + tanh(_SQRT_2_OVER_PI * (x + _GELU_CUBIC * x * x * x)))
    return 0.5 * x * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))


# Fused: the composite is 6-8 elementwise ops and as many again in backward (benchmarks/
# gpt_step); here the forward is in-place passes over one buffer and the VJP one expression.
@primitive("gelu", saves=(0,), saves_extra=True, composite=_gelu_composite)
@overridable("gelu")
def _gelu(xp, x, approximate):
    # gelu(x) = 0.5 x gate(x), gate = 1 + tanh(u) or 1 + erf(x / sqrt 2); the gate is kept for
    # the VJP, which then needs no tanh or erf of its own.
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
    xp = ctx.backend
    gx = _gelu_backward(xp, ctx.inputs[0].data, ctx.extra, g.data, ctx.attrs["approximate"])
    return from_array(gx, xp)


@overridable("gelu.vjp")
def _gelu_backward(xp, x, gate, g, approximate):
    # In-place passes over two buffers: each fresh temporary of this size costs as much as the
    # arithmetic (page faults on new memory).
    shape = x.shape
    x, gate = x.reshape(shape or (1,)), gate.reshape(shape or (1,))  # 0-d: no scalars
    slope = x * x
    if approximate == "tanh":
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
    slope *= g.reshape(slope.shape)
    return slope.reshape(shape)


def gelu(x, approximate="none"):
    """GELU: x * Phi(x). approximate='tanh' is GPT-2's tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    require_float(x, "gelu")
    return _gelu(x, approximate=approximate)


def silu(x, inplace=False):
    """SiLU (swish): x * sigmoid(x). inplace=True (F.silu's flag) writes into x."""
    return apply_inplace(x, silu, "silu") if inplace else x * sigmoid(x)


relu_ = inplace_form(relu, "relu_")
sigmoid_ = inplace_form(sigmoid, "sigmoid_")


def leaky_relu(x, negative_slope=0.01):
    """x for x > 0, negative_slope * x otherwise."""
    require_float(x, "leaky_relu")
    return where(x > 0, x, x * negative_slope)


def elu(x, alpha=1.0):
    """x for x > 0, alpha * (exp(x) - 1) otherwise (Clevert et al., 2015)."""
    require_float(x, "elu")
    return where(x > 0, x, expm1(x.clamp(max=0.0)) * alpha)  # clamp: no exp(1000) = inf


def celu(x, alpha=1.0):
    """x for x > 0, alpha * (exp(x / alpha) - 1) otherwise: elu with a slope of 1 at 0."""
    require_float(x, "celu")
    if alpha == 0:
        raise ValueError("celu: alpha must be nonzero (it divides the input)")
    return where(x > 0, x, expm1(x.clamp(max=0.0) * (1.0 / alpha)) * alpha)


# SELU's fixed point constants (Klambauer et al., 2017), as PyTorch spells them.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
    """scale * elu(x, alpha) with the self-normalising constants."""
    require_float(x, "selu")
    return elu(x, _SELU_ALPHA) * _SELU_SCALE


def hardtanh(x, min_val=-1.0, max_val=1.0):
    """x clipped to [min_val, max_val]; the gradient is 0 on the bounds themselves."""
    require_float(x, "hardtanh")
    if max_val < min_val:
        raise ValueError(f"hardtanh: max_val ({max_val}) must not be below min_val ({min_val})")
    return where(x <= min_val, min_val, where(x >= max_val, max_val, x))


def relu6(x):
    """min(max(x, 0), 6)."""
    return hardtanh(x, 0.0, 6.0)


def hardsigmoid(x):
    """The piecewise linear sigmoid: 0 below -3, 1 above 3, x / 6 + 1/2 between."""
    require_float(x, "hardsigmoid")
    return where(x <= -3.0, 0.0, where(x >= 3.0, 1.0, x * (1.0 / 6.0) + 0.5))


def hardswish(x):
    """x * hardsigmoid(x) (MobileNetV3): 0 below -3, x above 3, x (x + 3) / 6 between."""
    require_float(x, "hardswish")
    return where(x <= -3.0, 0.0, where(x >= 3.0, x, x * (x + 3.0) * (1.0 / 6.0)))


def _log1p_exp(z):
    """log(1 + exp(z)) for any z, exact to rounding, with gradient sigmoid(z) everywhere.

    Shifted by the constant m = max(z, 0): m + log1p(exp(z - m) + expm1(-m)) never overflows,
    is log1p(exp(z)) exactly for z <= 0 (log(1 + 1e-22) would be 0), and has no kink at 0
    (forms built from |z| get the slope at 0 wrong).
    """
    m = z.detach().clamp(min=0.0)
    return m + log1p(exp(z - m) + expm1(-m))


def softplus(x, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as PyTorch)."""
    require_float(x, "softplus")
    z = x * beta
    return where(z > threshold, x, _log1p_exp(z) * (1.0 / beta))


def logsigmoid(x):
    """log(sigmoid(x)) = -log(1 + exp(-x)), finite and accurate for large |x|."""
    require_float(x, "logsigmoid")
    return -_log1p_exp(-x)


def mish(x):
    """x * tanh(softplus(x)) (Misra, 2019)."""
    require_float(x, "mish")
    return x * tanh(_log1p_exp(x))


def softsign(x):
    """x / (1 + |x|)."""
    require_float(x, "softsign")
    return x / (x.abs() + 1.0)


def tanhshrink(x):
    """x - tanh(x)."""
    require_float(x, "tanhshrink")
    return x - tanh(x)


def _check_lambd(lambd, op):
    if lambd < 0:
        raise ValueError(f"{op}: lambd must be >= 0, got {lambd}")


def softshrink(x, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    require_float(x, "softshrink")
    _check_lambd(lambd, "softshrink")
    return where(x > lambd, x - lambd, where(x < -lambd, x + lambd, 0.0))


@tensor_method
def hardshrink(x, lambd=0.5):
    """x where |x| > lambd, 0 elsewhere."""
    require_float(x, "hardshrink")
    _check_lambd(lambd, "hardshrink")
    return where((x > lambd) | (x < -lambd), x, 0.0)


def threshold(x, threshold, value):
    """x where x > threshold, value elsewhere."""
    require_float(x, "threshold")
    return where(x > threshold, x, value)


@tensor_method
def prelu(x, weight):
    """x for x > 0, weight * x otherwise, with one learned slope per channel (dim 1) or one
    for all. x: (N, C, *) or any shape for a single slope; weight: (C,) or (1,)."""
    require_float(x, "prelu")
    slopes = weight.numel()
    if slopes != 1:
        channels = x.shape[1] if x.ndim >= 2 else 1
        if weight.ndim != 1 or slopes != channels:
            raise ValueError(f"prelu: weight of shape {weight.shape} needs 1 or C = {channels} "
                             f"slopes (C is dim 1 of the input of shape {x.shape})")
        weight = weight.reshape((slopes,) + (1,) * (x.ndim - 2))  # (C, 1, ..., 1)
    elif weight.ndim > x.ndim:
        weight = weight.reshape(())
    return where(x > 0, x, weight * x)


def glu(x, dim=-1):
    """Gated linear unit: a * sigmoid(b), where a and b are the two halves of x along dim."""
    require_float(x, "glu")
    if x.ndim == 0:
        raise ValueError("glu: expected a tensor with at least one dimension, got a 0-d tensor")
    dim = normalize_dim(dim, x.ndim, "glu")
    if x.shape[dim] % 2:
        raise ValueError(f"glu: dimension {dim} of the input of shape {x.shape} must have an "
                         f"even size to be halved")
    half = x.shape[dim] // 2
    return x.narrow(dim, 0, half) * sigmoid(x.narrow(dim, half, half))  # chunk gives 1 piece of 0

