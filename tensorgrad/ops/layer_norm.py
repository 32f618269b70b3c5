"""Layer norm and RMS norm.

The forwards keep their statistics (mean and 1/std per row) for the VJP, which computes the
first-order gradient on arrays in a few passes (benchmarks/: the op-by-op VJP cost a GPT-mini
step more than its matmuls); higher orders come from the composites, which the engine
differentiates under create_graph. The forwards and the VJPs' array steps are overridable (the
CPU backend's compiled twins register against their names).
"""
import math

from ..autograd import primitive
from ..backend.overrides import overridable
from ..tensor import from_array
from .operands import require_float
from .unary import rsqrt


def _row_mean(x, dims):
    """x's mean over dims, kept: a sum times 1/n (NumPy's mean adds microseconds of Python per
    call, which decoding pays at every norm of every token)."""
    total = x.sum(axis=dims, keepdims=True)
    total *= 1.0 / math.prod(x.shape[d] for d in dims)
    return total


def _layer_norm_composite(x, weight, bias, dims, eps):
    centered = x - x.mean(dims, keepdim=True)
    y = centered * rsqrt((centered * centered).mean(dims, keepdim=True) + eps)
    if weight is not None:
        y = y * weight
    return y + bias if bias is not None else y


@primitive("layer_norm", saves="all", saves_extra=True, composite=_layer_norm_composite)
@overridable("layer_norm")
def _layer_norm(xp, x, weight, bias, dims, eps):
    mean = _row_mean(x, dims)
    y = x - mean
    rstd = 1.0 / xp.sqrt(_row_mean(y * y, dims) + eps)
    y *= rstd
    if weight is not None:
        y *= weight
    if bias is not None:
        y += bias
    return y, (mean, rstd)


@_layer_norm.defvjp
def _layer_norm_vjp(ctx, g):
    x, weight, bias = ctx.inputs
    mean, rstd = ctx.extra
    xp = ctx.backend
    grads = _layer_norm_backward(xp, x.data, mean, rstd, None if weight is None else weight.data,
                                 g.data, ctx.attrs["dims"], *ctx.needs_grad[1:])
    return tuple(None if a is None else from_array(a, xp) for a in grads)


@overridable("layer_norm.vjp")
def _layer_norm_backward(xp, x, mean, rstd, weight, g, dims, needs_weight, needs_bias):
    """(gx, gweight or None, gbias or None) as arrays."""
    xhat = (x - mean) * rstd
    gxhat = g * weight if weight is not None else g
    gx = gxhat - _row_mean(gxhat, dims)
    gx -= xhat * _row_mean(gxhat * xhat, dims)
    gx *= rstd
    rows = tuple(range(x.ndim - len(dims)))  # the dims weight and bias are shared over
    return (gx, (g * xhat).sum(axis=rows) if needs_weight else None,
            g.sum(axis=rows) if needs_bias else None)


def _norm_dims(x, normalized_shape, weight, bias, op):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    # shapes read directly, no loop over (name, parameter) pairs: every token's norms (generate)
    data = x.data
    ndim = data.ndim
    if data.shape[ndim - len(shape):] != shape:
        raise ValueError(f"{op}: normalized_shape {shape} must equal the last dimensions of the "
                         f"input, got input shape {x.shape}")
    if weight is not None and weight.data.shape != shape:
        raise ValueError(f"{op}: weight must have shape {shape}, got {weight.shape}")
    if bias is not None and bias.data.shape != shape:
        raise ValueError(f"{op}: bias must have shape {shape}, got {bias.shape}")
    require_float(x, op)
    return tuple(range(ndim - len(shape), ndim))


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the trailing `normalized_shape` dims."""
    dims = _norm_dims(x, normalized_shape, weight, bias, "layer_norm")
    return _layer_norm(x, weight, bias, dims=dims, eps=eps)


def _rms_norm_composite(x, weight, dims, eps):
    y = x * rsqrt((x * x).mean(dims, keepdim=True) + eps)
    return y * weight if weight is not None else y


@primitive("rms_norm", saves="all", saves_extra=True, composite=_rms_norm_composite)
@overridable("rms_norm")
def _rms_norm(xp, x, weight, dims, eps):
    rstd = 1.0 / xp.sqrt(_row_mean(x * x, dims) + eps)
    y = x * rstd
    if weight is not None:
        y *= weight
    return y, rstd


@_rms_norm.defvjp
def _rms_norm_vjp(ctx, g):
    x, weight = ctx.inputs
    xp = ctx.backend
    gx, gw = _rms_norm_backward(xp, x.data, ctx.extra, None if weight is None else weight.data,
                                g.data, ctx.attrs["dims"], ctx.needs_grad[1])
    return from_array(gx, xp), None if gw is None else from_array(gw, xp)


@overridable("rms_norm.vjp")
def _rms_norm_backward(xp, x, rstd, weight, g, dims, needs_weight):
    """(gx, gweight or None) as arrays."""
    xhat = x * rstd
    gxhat = g * weight if weight is not None else g
    gx = gxhat - xhat * _row_mean(gxhat * xhat, dims)
    gx *= rstd
    rows = tuple(range(x.ndim - len(dims)))
    return gx, (g * xhat).sum(axis=rows) if needs_weight else None


def rms_norm(x, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) * weight; eps defaults to the dtype's machine epsilon, as in
    torch.nn.functional.rms_norm."""
    dims = _norm_dims(x, normalized_shape, weight, None, "rms_norm")
    if eps is None:
        eps = float(x._backend.finfo(x.dtype).eps)
    return _rms_norm(x, weight, dims=dims, eps=eps)

