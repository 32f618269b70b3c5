"""softmax and log_softmax, shifted by the row max so large logits do not overflow (the
composite exp / sum overflows: why they are primitives). Their VJPs are in tensorgrad ops."""
from ..autograd import primitive
from ..tensor import tensor_method
from .operands import normalize_dim, require_float


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
    dim = normalize_dim(dim, x.ndim, "softmax")
    if x.ndim == 0:  # dim 0 or -1 of a 0-d tensor, as PyTorch allows: a row of one element
        return _softmax(x.reshape(1), dim=0).reshape(())
    return _softmax(x, dim=dim)


@tensor_method
def log_softmax(x, dim=-1, dtype=None):
    if dtype is not None:
        x = x.to(dtype)
    require_float(x, "log_softmax")
    dim = normalize_dim(dim, x.ndim, "log_softmax")
    if x.ndim == 0:  # dim 0 or -1 of a 0-d tensor, as PyTorch allows: a row of one element
        return _log_softmax(x.reshape(1), dim=0).reshape(())
    return _log_softmax(x, dim=dim)

