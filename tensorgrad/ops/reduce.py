"""Reductions and scans: sum, max/min, cumsum and cumprod are primitives; mean, var, std, prod,
logsumexp, logcumsumexp, cummax/cummin, norm are composites."""
import builtins
from collections import namedtuple

from ..autograd import is_grad_enabled, primitive
from ..tensor import Tensor, _numpy_names, from_array, tensor_method
from .compare import isfinite, isnan
from .select import maximum, where
from .unary import exp, log, sqrt
from .operands import normalize_dims, normalize_dim
from .shape import cat

values_indices = namedtuple("values_indices", ["values", "indices"])
min_max = namedtuple("aminmax", ["min", "max"])


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
    return _sum(_accumulator(x, dtype), dim=dims, keepdim=keepdim)


def _accumulator(x, dtype):
    """x in the dtype a sum or product accumulates in: `dtype` if given, int64 for ints/bools."""
    if dtype is not None:
        return x.to(dtype)
    return x.long() if x.dtype.kind in "biu" else x


@tensor_method
def mean(x, dim=None, keepdim=False):
    if x.dtype.kind not in "fc":
        raise TypeError(f"mean: expected a floating point tensor, got {x.dtype}; use .float()")
    dims = normalize_dims(dim, x.ndim, "mean")
    count = 1
    for d in dims:
        count *= x.shape[d]
    return _sum(x, dim=dims, keepdim=keepdim) * (1.0 / count if count else float("nan"))


@tensor_method
def var(x, dim=None, correction=1, keepdim=False, unbiased=None):
    """Variance with Bessel's correction by default (correction=1), as in PyTorch; the legacy
    `unbiased=` (also positional: var(x, False)) means correction 1 (True) or 0 (False)."""
    if isinstance(dim, bool):  # torch.var(input, unbiased): a bool is never a dim
        dim, unbiased = None, dim
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


@_numpy_names
def var_mean(x, dim=None, correction=1, keepdim=False, unbiased=None):
    """(var, mean) over dim, as torch.var_mean."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return var(x, dim, correction, keepdim, unbiased), mean(x, dim, keepdim)


@_numpy_names
def std_mean(x, dim=None, correction=1, keepdim=False, unbiased=None):
    """(std, mean) over dim, as torch.std_mean."""
    variance, average = var_mean(x, dim, correction, keepdim, unbiased)
    return sqrt(variance), average


@tensor_method
def nansum(x, dim=None, keepdim=False, dtype=None):
    """sum with NaNs counted as zero."""
    if x.dtype.kind in "fc":
        x = where(isnan(x), 0.0, x)
    return sum(x, dim, keepdim, dtype)


@tensor_method
def nanmean(x, dim=None, keepdim=False):
    """mean of the values that are not NaN (NaN where a slice has none)."""
    if x.dtype.kind not in "fc":
        raise TypeError(f"nanmean: expected a floating point tensor, got {x.dtype}")
    present = ~isnan(x)
    return nansum(x, dim, keepdim) / sum(present, dim, keepdim).to(x.dtype)


@tensor_method
def count_nonzero(x, dim=None):
    """Number of non-zero elements over dim (an int, a tuple or None), as int64."""
    return sum(x != 0, dim)


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
def aminmax(x, *, dim=None, keepdim=False):
    """(min, max) over dim (every element by default), as a named pair."""
    return min_max(amin(x, dim, keepdim), amax(x, dim, keepdim))


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
        return values_indices(x.clone(), index)
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


def _reverse_cumsum(x, dim):
    return x.flip(dim).cumsum(dim).flip(dim)


def _scan(op, x, dim, scan):
    """Run a scan along dim; a 0-d tensor (dim 0 or -1, as PyTorch allows) is scanned as (1,)."""
    dim = normalize_dim(dim, x.ndim, op)
    if x.ndim == 0:
        out = scan(x.reshape(1), 0)
        return type(out)(*(o.reshape(()) for o in out)) if isinstance(out, tuple) else \
            out.reshape(())
    return scan(x, dim)


@_cumsum.defvjp
def _cumsum_vjp(ctx, g):
    return _reverse_cumsum(g, ctx.attrs["dim"])


@tensor_method
def cumsum(x, dim, dtype=None):
    return _scan("cumsum", _accumulator(x, dtype), dim, lambda t, d: _cumsum(t, dim=d))


@primitive("cumprod", saves=(0,), saves_out=True)
def _cumprod(xp, x, dim):
    return xp.cumprod(x, axis=dim)


@_cumprod.defvjp
def _cumprod_vjp(ctx, g):
    # d out_i / d x_j = prod(x_k for k <= i, k != j) for j <= i. Without zeros that is
    # out_i / x_j: the gradient is reversed-cumsum(g * out) / x, O(n).
    x, = ctx.inputs
    dim = ctx.attrs["dim"]
    if not bool((x.data == 0).any()):
        return _reverse_cumsum(g * ctx.out, dim) / x
    if is_grad_enabled():  # the backward is recorded (create_graph): exact at every order
        return _cumprod_vjp_by_pairs(x, g, dim)
    return _cumprod_vjp_by_first_zero(x, g, ctx.out, dim)


def _cumprod_vjp_by_first_zero(x, g, out, dim):
    """First order, O(n): before a slice's first zero the division formula holds; past it every
    product holds that zero (0); at the first zero z the product skips it:
    prod(x_k, k < z) * sum(g_i * prod(x_k, z < k <= i) for i >= z). The masks are constants,
    so this is not differentiated further (see _cumprod_vjp_by_pairs)."""
    zero = x == 0
    seen = _cumsum(zero, dim=dim)  # zeros up to and including each position
    before, first = seen == 0, zero & (seen == 1)
    away = _reverse_cumsum(g * out, dim) / where(before, x, 1.0)
    head = _cumprod(where(before, x, 1.0), dim=dim)  # at z: the product of x_k for k < z
    tail = _cumprod(where(before | first, 1.0, x), dim=dim)  # at i >= z: prod(x_k, z < k <= i)
    return where(before, away, where(first, head * _reverse_cumsum(g * tail, dim), 0.0))


def _cumprod_vjp_by_pairs(x, g, dim):
    """Every order, O(n**2) per slice: the products of the others formed outright, as
    prod(x_k, k < j) times prod(x_k, j < k <= i) for each pair (j, i); no mask depends on x."""
    xs, gs = x.movedim(dim, -1), g.movedim(dim, -1)  # (..., n)
    n, xp = xs.shape[-1], x._backend
    above = from_array(~xp.tri(n, n, 0, dtype=bool), xp)  # [j, k]: k > j
    between = _cumprod(where(above, xs.unsqueeze(-2), 1.0), dim=-1)  # [j, i]: prod(j < k <= i)
    later = from_array(~xp.tri(n, n, -1, dtype=bool), xp)  # [j, i]: i >= j
    weighted = _sum(where(later, gs.unsqueeze(-2), 0.0) * between, dim=(xs.ndim,), keepdim=False)
    shifted = cat([xs.narrow(-1, 0, 1) * 0 + 1, xs.narrow(-1, 0, n - 1)], -1)
    return (_cumprod(shifted, dim=-1) * weighted).movedim(-1, dim)  # prod(x_k, k < j) * ...


@tensor_method
def cumprod(x, dim, dtype=None):
    """Running product along dim; ints and bools give int64. The gradient is exact with zeros."""
    return _scan("cumprod", _accumulator(x, dtype), dim, lambda t, d: _cumprod(t, dim=d))


@tensor_method
def prod(x, dim=None, keepdim=False, dtype=None):
    """Product over one dim (or every element); ints and bools give int64. A composite of
    cumprod's last entry, so its gradient is exact with one zero or several."""
    x = _accumulator(x, dtype)
    if dim is None:
        out = prod(x.reshape(-1), 0)
        return out.reshape((1,) * x.ndim) if keepdim else out
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"prod: dim must be one int (as in PyTorch), got {dim!r}")
    dim = normalize_dim(dim, x.ndim, "prod")
    if x.ndim == 0:
        return x * 1
    size = x.shape[dim]
    if size == 0:  # the empty product is 1; the empty sum is 0
        return _sum(x, dim=(dim,), keepdim=keepdim) + 1
    out = _cumprod(x, dim=dim).narrow(dim, size - 1, 1)
    return out if keepdim else out.squeeze(dim)


@primitive("cumulative_extreme_index", differentiable=False)
def _cumulative_extreme_index(xp, x, dim, largest):
    moved = xp.moveaxis(x, dim, -1)
    running = (xp.maximum if largest else xp.minimum).accumulate(moved, axis=-1)
    # x_i equals the running extreme when it is a new one or ties it; PyTorch then reports i,
    # and a NaN (which the running extreme propagates) reports itself.
    hits = (moved == running) | xp.isnan(moved)
    positions = xp.where(hits, xp.arange(moved.shape[-1]), 0)
    return xp.moveaxis(xp.maximum.accumulate(positions, axis=-1), -1, dim).astype("int64")


def _cumulative_extreme(x, dim, largest, op):
    def scan(t, d):
        index = _cumulative_extreme_index(t, dim=d, largest=largest)
        return values_indices(t.gather(d, index), index)  # the gradient goes to the index
    return _scan(op, x, dim, scan)


@tensor_method
def cummax(x, dim):
    """(values, indices) of the running maximum along dim; ties report the latest index."""
    return _cumulative_extreme(x, dim, True, "cummax")


@tensor_method
def cummin(x, dim):
    """(values, indices) of the running minimum along dim; ties report the latest index."""
    return _cumulative_extreme(x, dim, False, "cummin")


def _logaddexp(a, b):
    """log(exp(a) + exp(b)), shifted by the (constant) larger of the two."""
    shift = maximum(a.detach(), b.detach())
    shift = where(isfinite(shift), shift, 0.0)
    return log(exp(a - shift) + exp(b - shift)) + shift


@tensor_method
def logcumsumexp(x, dim):
    """log(cumsum(exp(x))) along dim, stable for any spread of values (-1000 next to 0 stays
    -1000). A Hillis-Steele scan: log2(n) rounds, each combining every entry with the one
    `step` before it by a stable logaddexp, so memory is n log n, not the n**2 of a prefix table."""
    if x.dtype.kind not in "fc":
        raise TypeError(f"logcumsumexp: expected a floating point tensor, got {x.dtype}")

    def scan(t, d):
        n, step = t.shape[d], 1
        while step < n:
            earlier, later = t.narrow(d, 0, n - step), t.narrow(d, step, n - step)
            t = cat([t.narrow(d, 0, step), _logaddexp(later, earlier)], d)
            step *= 2
        return t * 1 if n <= 1 else t
    return _scan("logcumsumexp", x, dim, scan)
