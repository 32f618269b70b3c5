"""Fused, numerically stable primitives: softmax, log_softmax, cross_entropy, layer_norm, rms_norm.

Each exists as a primitive because its composite form either overflows (exp of large logits) or
makes several extra passes over memory. softmax, log_softmax and cross_entropy have VJPs in
tensorgrad ops. layer_norm and rms_norm compute their first-order gradient on arrays, from
statistics the forward kept (benchmarks/: the op-by-op VJP cost a GPT-mini step more than its
matmuls); they name their composite, which the engine differentiates under create_graph.
"""
import math

from ..autograd import primitive
from ..tensor import Tensor, tensor_method
from .elementwise import rsqrt
from .operands import normalize_dim, require_float


# --- softmax / log_softmax ----------------------------------------------------------------------
@primitive("softmax", saves_out=True)
def _softmax(xp, x, dim):
    e = xp.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


@_softmax.defvjp
def _softmax_vjp(ctx, g):
    y, dim = ctx.out, ctx.attrs["dim"]
    return y * (g - (g * y).sum(dim, keepdim=True))


@primitive("log_softmax", saves_out=True)
def _log_softmax(xp, x, dim):
    shifted = x - x.max(axis=dim, keepdims=True)
    return shifted - xp.log(xp.exp(shifted).sum(axis=dim, keepdims=True))


@_log_softmax.defvjp
def _log_softmax_vjp(ctx, g):
    y, dim = ctx.out, ctx.attrs["dim"]
    return g - y.exp() * g.sum(dim, keepdim=True)


@tensor_method
def softmax(x, dim=-1, dtype=None):
    """exp(x) / sum(exp(x)) along dim, shifted by the max so large logits do not overflow."""
    if dtype is not None:
        x = x.to(dtype)
    require_float(x, "softmax")
    return _softmax(x, dim=normalize_dim(dim, x.ndim, "softmax"))


@tensor_method
def log_softmax(x, dim=-1, dtype=None):
    if dtype is not None:
        x = x.to(dtype)
    require_float(x, "log_softmax")
    return _log_softmax(x, dim=normalize_dim(dim, x.ndim, "log_softmax"))


# --- cross entropy ------------------------------------------------------------------------------
@primitive("cross_entropy", saves=(0,))
def _cross_entropy(xp, logits, target, weight, ignore_index, label_smoothing, reduction):
    n, classes = logits.shape
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))
    valid = target != ignore_index
    safe = xp.where(valid, target, 0)
    picked = -logp[xp.arange(n), safe]
    w_t = (weight[safe] if weight is not None else xp.ones(n, dtype=logits.dtype)) * valid
    loss = (1.0 - label_smoothing) * w_t * picked
    if label_smoothing:
        spread = -(logp * weight).sum(axis=1) if weight is not None else -logp.sum(axis=1)
        loss = loss + (label_smoothing / classes) * spread * valid
    if reduction == "none":
        return loss.astype(logits.dtype, copy=False)
    total = loss.sum()
    if reduction == "mean":
        total = total / w_t.sum()
    return total.astype(logits.dtype)


@_cross_entropy.defvjp
def _cross_entropy_vjp(ctx, g):
    # d loss_i / d logits_ij = (1-e) w_t (p_j - [j = t]) + (e / C) (p_j sum_c w_c - w_j)
    logits, = ctx.inputs
    a = ctx.attrs
    xp, dtype = logits._backend, logits.data.dtype
    n, classes = logits.shape
    target, weight, eps = a["target"], a["weight"], a["label_smoothing"]
    valid = target != a["ignore_index"]
    safe = xp.where(valid, target, 0)
    w = weight if weight is not None else xp.ones(classes, dtype=dtype)
    w_t = w[safe] * valid
    onehot = (safe[:, None] == xp.arange(classes)).astype(dtype)

    def const(array):
        return Tensor._constant(xp.asarray(array, dtype=dtype), xp)

    p = softmax(logits, dim=1)
    grad = const(((1.0 - eps) * w_t)[:, None]) * (p - const(onehot))
    if eps:
        grad = grad + const((eps / classes) * valid[:, None]) * (p * float(w.sum()) - const(w))
    if a["reduction"] == "none":
        return grad * g.unsqueeze(1)
    if a["reduction"] == "mean":
        g = g / float(w_t.sum())
    return grad * g


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    """Softmax cross-entropy between logits and class indices (or class probabilities).

    input: (N, C), (C,) or (N, C, d1, ...) logits. target: int64 class indices of shape (N,),
    () or (N, d1, ...), or float probabilities shaped like input. Rows whose target is
    ignore_index contribute nothing; reduction 'mean' divides by the (weighted) count of the
    rest, as PyTorch does.
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
    require_float(input, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    if isinstance(target, Tensor) and target.dtype.kind == "f":
        return _soft_cross_entropy(input, target, weight, reduction, label_smoothing)
    if not isinstance(target, Tensor) or target.dtype.kind not in "iu":
        raise TypeError(f"cross_entropy: target must be an integer Tensor of class indices or a "
                        f"float Tensor of probabilities, got "
                        f"{getattr(target, 'dtype', type(target).__name__)}")
    class_dim = 0 if input.ndim == 1 else 1
    classes = input.shape[class_dim]
    expected = input.shape[:class_dim] + input.shape[class_dim + 1:]
    if target.shape != expected:
        raise ValueError(f"cross_entropy: logits of shape {input.shape} need a target of shape "
                         f"{expected}, got {target.shape}")
    logits = input.unsqueeze(0) if input.ndim == 1 else input
    if logits.ndim > 2:  # (N, C, d1, ...) -> (N * d1 * ..., C)
        logits = logits.movedim(1, -1)
    logits = logits.reshape(-1, classes)
    flat = target.data.reshape(-1)
    valid = flat[flat != ignore_index]
    if valid.size and (int(valid.min()) < 0 or int(valid.max()) >= classes):
        raise IndexError(f"cross_entropy: target values must lie in [0, {classes}) (or equal "
                         f"ignore_index={ignore_index}); got values in [{int(valid.min())}, "
                         f"{int(valid.max())}]")
    weight_data = None
    if weight is not None:
        if weight.shape != (classes,):
            raise ValueError(f"cross_entropy: weight must have shape ({classes},), got "
                             f"{weight.shape}")
        weight_data = weight.data.astype(input.dtype, copy=False)
    loss = _cross_entropy(logits, target=flat, weight=weight_data, ignore_index=ignore_index,
                          label_smoothing=float(label_smoothing), reduction=reduction)
    return loss.reshape(target.shape) if reduction == "none" else loss


def _soft_cross_entropy(input, target, weight, reduction, label_smoothing):
    if target.shape != input.shape:
        raise ValueError(f"cross_entropy: probability targets must match the logits' shape "
                         f"{input.shape}, got {target.shape}")
    class_dim = 0 if input.ndim == 1 else 1
    classes = input.shape[class_dim]
    if label_smoothing:
        target = target * (1.0 - label_smoothing) + label_smoothing / classes
    logp = log_softmax(input, class_dim)
    if weight is not None:
        logp = logp * weight.reshape((classes,) + (1,) * (input.ndim - class_dim - 1))
    loss = -(target * logp).sum(class_dim)
    if reduction == "none":
        return loss
    total = loss.sum()
    return total / (loss.numel() or 1) if reduction == "mean" else total


# --- normalisation ----------------------------------------------------------------------------
# The forwards keep their statistics (mean and 1/std per row) for the VJP, which computes the
# first-order gradient on arrays in a few passes; higher orders come from the composites.
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
def _layer_norm(xp, x, weight, bias, dims, eps):
    kernels = xp.kernels(x, weight, bias)
    if kernels is not None:
        y, mean, rstd = kernels.norm(x, weight, bias, eps, dims, center=True)
        return y, (mean, rstd)
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
    dims, xp = ctx.attrs["dims"], ctx.backend
    w = None if weight is None else weight.data
    kernels = xp.kernels(x.data, w, g.data)
    if kernels is not None:
        grads = kernels.norm_backward(x.data, mean, rstd, w, g.data, dims, True,
                                      *ctx.needs_grad[1:])
        return tuple(None if a is None else Tensor._constant(a, xp) for a in grads)
    xhat = (x.data - mean) * rstd
    gy = g.data
    gxhat = gy * weight.data if weight is not None else gy
    gx = gxhat - _row_mean(gxhat, dims)
    gx -= xhat * _row_mean(gxhat * xhat, dims)
    gx *= rstd
    rows = tuple(range(x.ndim - len(dims)))  # the dims weight and bias are shared over
    return (Tensor._constant(gx, xp),
            Tensor._constant((gy * xhat).sum(axis=rows), xp) if ctx.needs_grad[1] else None,
            Tensor._constant(gy.sum(axis=rows), xp) if ctx.needs_grad[2] else None)


def _norm_dims(x, normalized_shape, weight, bias, op):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    ndim = x.ndim
    if x.shape[ndim - len(shape):] != shape:
        raise ValueError(f"{op}: normalized_shape {shape} must equal the last dimensions of the "
                         f"input, got input shape {x.shape}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and p.shape != shape:
            raise ValueError(f"{op}: {name} must have shape {shape}, got {p.shape}")
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
def _rms_norm(xp, x, weight, dims, eps):
    kernels = xp.kernels(x, weight)
    if kernels is not None:
        y, _, rstd = kernels.norm(x, weight, None, eps, dims, center=False)
        return y, rstd
    rstd = 1.0 / xp.sqrt(_row_mean(x * x, dims) + eps)
    y = x * rstd
    if weight is not None:
        y *= weight
    return y, rstd


@_rms_norm.defvjp
def _rms_norm_vjp(ctx, g):
    x, weight = ctx.inputs
    rstd, dims, xp = ctx.extra, ctx.attrs["dims"], ctx.backend
    w = None if weight is None else weight.data
    kernels = xp.kernels(x.data, w, g.data)
    if kernels is not None:
        gx, gw, _ = kernels.norm_backward(x.data, None, rstd, w, g.data, dims, False,
                                          ctx.needs_grad[1], False)
        return Tensor._constant(gx, xp), None if gw is None else Tensor._constant(gw, xp)
    xhat = x.data * rstd
    gy = g.data
    gxhat = gy * weight.data if weight is not None else gy
    gx = gxhat - xhat * _row_mean(gxhat * xhat, dims)
    gx *= rstd
    rows = tuple(range(x.ndim - len(dims)))
    return Tensor._constant(gx, xp), (Tensor._constant((gy * xhat).sum(axis=rows), xp)
                                      if ctx.needs_grad[1] else None)


def rms_norm(x, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) * weight; eps defaults to the dtype's machine epsilon, as in
    torch.nn.functional.rms_norm."""
    dims = _norm_dims(x, normalized_shape, weight, None, "rms_norm")
    if eps is None:
        eps = float(x._backend.finfo(x.dtype).eps)
    return _rms_norm(x, weight, dims=dims, eps=eps)


# --- dropout ------------------------------------------------------------------------------------
def dropout(x, p=0.5, training=True):
    """Zero each element with probability p and scale the rest by 1 / (1 - p) (training only)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    xp = x._backend
    keep = xp.random_uniform(x.shape, x.dtype) >= p
    scale = keep.astype(x.dtype) * (1.0 / (1.0 - p) if p < 1.0 else 0.0)
    return x * Tensor._constant(scale.astype(x.dtype, copy=False), xp)
