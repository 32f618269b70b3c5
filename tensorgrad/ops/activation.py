"""Activation functions: sigmoid, relu, gelu, silu.

relu and gelu are fused primitives whose first-order VJP works on arrays (one pass where the
op-by-op form makes several); each names its composite, which the engine differentiates under
create_graph. GELU's tanh form also has a compiled twin for the CPU
(tensorgrad/backend/kernels/activation.py), used when the backend offers kernels.
"""
import math

from ..autograd import primitive
from ..tensor import Tensor, tensor_method
from .operands import require_float
from .unary import _unary, erf, tanh


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


sigmoid = tensor_method(_unary(_sigmoid, "sigmoid"))


@tensor_method
def relu(x):
    return _relu(x)


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

