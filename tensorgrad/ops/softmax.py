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


def _over_rows(prim, x, dim, dtype):
    if dtype is not None:
        x = x.to(dtype)
    require_float(x, prim.name)
    dim = normalize_dim(dim, x.ndim, prim.name)
    if x.ndim == 0:  # dim 0 or -1 of a 0-d tensor, as PyTorch allows: a row of one element
        return prim(x.reshape(1), dim=0).reshape(())
    return prim(x, dim=dim)


@tensor_method
def softmax(x, dim=-1, dtype=None):
    """exp(x) / sum(exp(x)) along dim, shifted by the max so large logits do not overflow."""
    return _over_rows(_softmax, x, dim, dtype)


@tensor_method
def log_softmax(x, dim=-1, dtype=None):
    """log(softmax(x)) along dim, computed as x - max - log(sum(exp(x - max)))."""
    return _over_rows(_log_softmax, x, dim, dtype)
