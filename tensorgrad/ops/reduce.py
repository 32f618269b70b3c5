"""Reductions: sum and max/min are primitives; mean, var, std, logsumexp, norm are composites."""
import builtins
from collections import namedtuple

from ..autograd import primitive
from ..tensor import Tensor, tensor_method
from .compare import isfinite
from .select import where
from .unary import exp, log, sqrt
from .operands import normalize_dims, normalize_dim

values_indices = namedtuple("values_indices", ["values", "indices"])


def _kept_shape(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


@primitive("sum")
def _sum(xp, x, dim, keepdim):
    return x.sum(axis=dim, keepdims=keepdim)


@_sum.defvjp
def _sum_vjp(ctx, g):
    shape = ctx.in_shapes[0]
    if not ctx.attrs["keepdim"]:
        g = g.reshape(_kept_shape(shape, ctx.attrs["dim"]))
    return g.expand(*shape)


@tensor_method
def sum(x, dim=None, keepdim=False, dtype=None):
    """Sum over `dim` (an int, a tuple, or None for all). Integer and bool inputs sum to int64."""
    dims = normalize_dims(dim, x.ndim, "sum")
    if dtype is not None:
        x = x.to(dtype)
    elif x.data.dtype.kind in "biu":
        x = x.long()
    return _sum(x, dim=dims, keepdim=keepdim)


@tensor_method
def mean(x, dim=None, keepdim=False):
    if x.data.dtype.kind not in "fc":
        raise TypeError(f"mean: expected a floating point tensor, got {x.dtype}; use .float()")
    dims = normalize_dims(dim, x.ndim, "mean")
    count = 1
    for d in dims:
        count *= x.shape[d]
    return _sum(x, dim=dims, keepdim=keepdim) * (1.0 / count if count else float("nan"))


@tensor_method
def var(x, dim=None, correction=1, keepdim=False, unbiased=None):
    """Variance with Bessel's correction by default (correction=1), as in PyTorch."""
    if unbiased is not None:
        correction = int(unbiased)
    dims = normalize_dims(dim, x.ndim, "var")
    count = 1
    for d in dims:
        count *= x.shape[d]
    centered = x - mean(x, dim=dims, keepdim=True)
    total = _sum(centered * centered, dim=dims, keepdim=keepdim)
    return total / builtins.max(count - correction, 0)


@tensor_method
def std(x, dim=None, correction=1, keepdim=False, unbiased=None):
    return sqrt(var(x, dim, correction, keepdim, unbiased))


# --- max / min --------------------------------------------------------------------------------
@primitive("amax", saves=(0,), saves_out=True)
def _amax(xp, x, dim, keepdim):
    return x.max(axis=dim, keepdims=keepdim)


@primitive("amin", saves=(0,), saves_out=True)
def _amin(xp, x, dim, keepdim):
    return x.min(axis=dim, keepdims=keepdim)


def _extreme_vjp(ctx, g):
    # Ties share the gradient equally: that is what central differences see, and PyTorch's
    # amax/amin do the same.
    x, = ctx.inputs
    dims, keepdim = ctx.attrs["dim"], ctx.attrs["keepdim"]
    out = ctx.out.detach()
    if not keepdim:
        kept = _kept_shape(x.shape, dims)
        out, g = out.reshape(kept), g.reshape(kept)
    hit = (x.detach() == out).to(g.dtype)
    return g * hit / _sum(hit, dim=dims, keepdim=True)


_amax.defvjp(_extreme_vjp)
_amin.defvjp(_extreme_vjp)


def _check_nonempty(x, dims, op):
    if builtins.any(x.shape[d] == 0 for d in dims):
        raise RuntimeError(f"{op}: cannot reduce over an empty dimension (shape {x.shape})")


@tensor_method
def amax(x, dim=None, keepdim=False):
    dims = normalize_dims(dim, x.ndim, "amax")
    _check_nonempty(x, dims, "amax")
    return _amax(x, dim=dims, keepdim=keepdim)


@tensor_method
def amin(x, dim=None, keepdim=False):
    dims = normalize_dims(dim, x.ndim, "amin")
    _check_nonempty(x, dims, "amin")
    return _amin(x, dim=dims, keepdim=keepdim)


@tensor_method
def max(x, dim=None, keepdim=False):
    """max(x) -> the largest value; max(x, dim) -> (values, indices); max(x, other) -> maximum."""
    if isinstance(dim, Tensor):
        from .select import maximum
        return maximum(x, dim)
    if dim is None:
        return amax(x)
    return _picked(x, argmax(x, dim, keepdim=True), dim, keepdim)


@tensor_method
def min(x, dim=None, keepdim=False):
    """min(x) -> the smallest value; min(x, dim) -> (values, indices); min(x, other) -> minimum."""
    if isinstance(dim, Tensor):
        from .select import minimum
        return minimum(x, dim)
    if dim is None:
        return amin(x)
    return _picked(x, argmin(x, dim, keepdim=True), dim, keepdim)


def _picked(x, index, dim, keepdim):
    """(values, indices) of max/min along dim: the values are gathered at the index, so the
    whole gradient goes to the returned index on ties, as in PyTorch (amax/amin split it)."""
    if x.ndim == 0:
        return values_indices(x * 1, index)
    values = x.gather(dim, index)
    if not keepdim:
        values, index = values.squeeze(dim), index.squeeze(dim)
    return values_indices(values, index)


@primitive("argmax", differentiable=False)
def _argmax(xp, x, dim, keepdim):
    return xp.argmax(x, axis=dim, keepdims=keepdim).astype("int64")


@primitive("argmin", differentiable=False)
def _argmin(xp, x, dim, keepdim):
    return xp.argmin(x, axis=dim, keepdims=keepdim).astype("int64")


def _arg_extreme(prim, x, dim, keepdim):
    if dim is None or x.ndim == 0:  # over the flattened tensor; keepdim leaves every dim at 1
        if dim is not None:
            normalize_dim(dim, 0, prim.name)  # a 0-d tensor takes dim 0 or -1
        out = prim(x.reshape(-1), dim=0, keepdim=False)
        return out.reshape((1,) * x.ndim) if keepdim else out
    return prim(x, dim=normalize_dim(dim, x.ndim, prim.name), keepdim=keepdim)


@tensor_method
def argmax(x, dim=None, keepdim=False):
    """Index of the largest value (of the flattened tensor when dim is None), as int64."""
    return _arg_extreme(_argmax, x, dim, keepdim)


@tensor_method
def argmin(x, dim=None, keepdim=False):
    return _arg_extreme(_argmin, x, dim, keepdim)


@tensor_method
def logsumexp(x, dim, keepdim=False):
    """log(sum(exp(x))) over dim, computed stably by shifting by the (constant) maximum."""
    dims = normalize_dims(dim, x.ndim, "logsumexp")
    shift = amax(x.detach(), dim=dims, keepdim=True)
    shift = where(isfinite(shift), shift, 0.0)
    out = log(_sum(exp(x - shift), dim=dims, keepdim=True)) + shift
    return out if keepdim else out.reshape(tuple(s for i, s in enumerate(out.shape)
                                                 if i not in dims))


@tensor_method
def norm(x, p=2, dim=None, keepdim=False):
    """Vector p-norm over dim (all elements by default); p = 2, 1 or inf."""
    if p == 2:
        return sqrt(sum(x * x, dim, keepdim))
    if p == 1:
        return sum(x.abs(), dim, keepdim)
    if p == float("inf"):
        return amax(x.abs(), dim, keepdim)
    return sum(x.abs() ** p, dim, keepdim) ** (1.0 / p)


@primitive("any", differentiable=False)
def _any(xp, x, dim, keepdim):
    return x.any(axis=dim, keepdims=keepdim)


@primitive("all", differentiable=False)
def _all(xp, x, dim, keepdim):
    return x.all(axis=dim, keepdims=keepdim)


@tensor_method
def any(x, dim=None, keepdim=False):
    return _any(x, dim=normalize_dims(dim, x.ndim, "any"), keepdim=keepdim)


@tensor_method
def all(x, dim=None, keepdim=False):
    return _all(x, dim=normalize_dims(dim, x.ndim, "all"), keepdim=keepdim)


@primitive("cumsum")
def _cumsum(xp, x, dim):
    return xp.cumsum(x, axis=dim)


@_cumsum.defvjp
def _cumsum_vjp(ctx, g):
    dim = ctx.attrs["dim"]
    return g.flip(dim).cumsum(dim).flip(dim)


@tensor_method
def cumsum(x, dim):
    dim = normalize_dim(dim, x.ndim, "cumsum")
    if x.ndim == 0:  # dim 0 of a 0-d tensor, as PyTorch allows: the shape stays ()
        return _cumsum(x.reshape(1), dim=0).reshape(())
    return _cumsum(x, dim=dim)
