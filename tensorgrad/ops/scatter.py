"""The scatter/gather family by index along a dim, as in PyTorch: scatter, scatter_reduce,
index_add/copy/fill/select, take, take_along_dim, masked_select/scatter, their in-place `_`
forms, and the data-dependent queries nonzero, argwhere, unique and bincount (no gradient).

Two primitives: `scatter` (write src at index; gradients: g with those positions cleared, and g
gathered back) and `scatter_prod` (zero-safe). Everything else is gather/scatter_add composites.
"""
from ..autograd import guard, primitive
from ..errors import OpError, OpIndexError
from ..tensor import Tensor, from_array, tensor_method
from .index import _along, _check_along, _fit, _gather, _scatter_add, getitem, scatter_add
from .select import where
from .operands import normalize_dim
from .unary import inplace_form


def _touched(x, dim, index):
    """Bool mask of the positions of x that index writes to, and how many times each."""
    xp = x._backend
    counts = xp.zeros(x.shape, dtype="int64")
    xp.scatter_add(counts, _along(xp, index, dim), xp.ones(index.shape, dtype="int64"))
    return from_array(counts > 0, x._backend), from_array(counts, x._backend)


@primitive("scatter")
def _scatter(xp, x, src, dim, index):
    out = x.copy()
    out[_along(xp, index, dim)] = src  # repeated indices: one of the writes wins, as in PyTorch
    return out


@_scatter.defvjp
def _scatter_vjp(ctx, g):
    dim, index = ctx.attrs["dim"], ctx.attrs["index"]
    cleared = from_array(g._backend.zeros(index.shape, dtype=g.dtype), g._backend)
    return (_scatter(g, cleared, dim=dim, index=index) if ctx.needs_grad[0] else None,
            _gather(g, dim=dim, index=index) if ctx.needs_grad[1] else None)


@tensor_method
def scatter(x, dim, index, src=None, value=None, reduce=None):
    """x with src (a tensor, or a number `value`) written at `index` along dim:
    out[i][index[i][j]] = src[i][j] for dim=1. reduce='add' / 'multiply' is PyTorch's legacy
    spelling of scatter_reduce('sum' / 'prod')."""
    src = value if src is None else src
    if src is None:
        raise TypeError("scatter: needs src (a tensor) or value (a number)")
    if reduce is not None:
        modes = {"add": "sum", "multiply": "prod"}
        if reduce not in modes:
            raise OpError(f"scatter: reduce must be 'add' or 'multiply', got {reduce!r}")
        return scatter_reduce(x, dim, index, src, modes[reduce])
    dim = _check_along(x, dim, index, "scatter")
    return guard(_scatter(x, _fit(src, index, x, "scatter"), dim=dim, index=index.data), index)


@primitive("scatter_prod", saves="all", saves_out=True)  # the output too, as PyTorch saves
def _scatter_prod(xp, x, src, dim, index):
    out = x.copy()
    xp.multiply.at(out, _along(xp, index, dim), src)
    return out


@_scatter_prod.defvjp
def _scatter_prod_vjp(ctx, g):
    # Each element's gradient is g times the product of the others in its group (the target and
    # everything scattered onto it). With no zero among the others that is the product of the
    # non-zeros divided by the element; with exactly one zero among them it is that product
    # times the zero (0, but with the right derivative for the second order); past that it is 0.
    x, src = ctx.inputs
    dim, index = ctx.attrs["dim"], ctx.attrs["index"]
    zero_x, zero_src = x == 0, src == 0
    zeros = _scatter_add(zero_src.to(x.dtype), dim=dim, index=index, shape=x.shape) + \
        zero_x.to(x.dtype)
    zero_sum = _scatter_add(where(zero_src, src, 0.0), dim=dim, index=index, shape=x.shape) + \
        where(zero_x, x, 0.0)
    safe_x, safe_src = where(zero_x, 1.0, x), where(zero_src, 1.0, src)
    nonzero = _scatter_prod(safe_x, safe_src, dim=dim, index=index)

    def others(value, safe, zero, gather):
        rest = gather(zeros) - zero.to(x.dtype)  # zeros in the group besides this element
        one_zero = gather(zero_sum) - where(zero, value, 0.0)
        base = gather(nonzero) / safe
        return where(rest == 0, base, where(rest == 1, base * one_zero, 0.0))

    def at_index(t):
        return _gather(t, dim=dim, index=index)
    return (g * others(x, safe_x, zero_x, lambda t: t) if ctx.needs_grad[0] else None,
            at_index(g) * others(src, safe_src, zero_src, at_index) if ctx.needs_grad[1]
            else None)


@tensor_method
def scatter_reduce(x, dim, index, src, reduce, include_self=True):
    """Reduce src into x at `index` along dim: reduce is 'sum', 'prod', 'mean', 'amax' or
    'amin'; include_self=False leaves x's own value out wherever index writes. amax/amin share
    the gradient evenly among the values equal to the result, as in PyTorch."""
    return guard(_scatter_reduce(x, dim, index, src, reduce, include_self), index)


def _scatter_reduce(x, dim, index, src, reduce, include_self):
    dim = _check_along(x, dim, index, "scatter_reduce")
    src, idx = _fit(src, index, x, "scatter_reduce"), index.data
    touched, counts = _touched(x, dim, idx)
    if reduce in ("sum", "mean"):
        total = (x if include_self else where(touched, 0, x)) + \
            _scatter_add(src, dim=dim, index=idx, shape=x.shape)
        if reduce == "sum":
            return total
        count = counts.to(x.dtype) + (1.0 if include_self else 0.0)
        mean = total / where(touched, count, 1.0)
        return mean if x.dtype.kind in "fc" else mean.floor().to(x.dtype)
    if reduce == "prod":
        return _scatter_prod(x if include_self else where(touched, 1, x), src, dim=dim,
                             index=idx)
    if reduce in ("amax", "amin"):
        # The extremes on arrays first; then, differentiably, the mean of the values equal to
        # them, so ties share the gradient.
        xp = x._backend
        result = x.data.copy()
        if not include_self:  # start the written positions from the identity of the reduction
            info = xp.finfo(x.dtype) if x.dtype.kind == "f" else xp.iinfo(x.dtype)
            result[touched.data] = info.max if reduce == "amin" else info.min
        (xp.minimum if reduce == "amin" else xp.maximum).at(result, _along(xp, idx, dim), src.data)
        result = from_array(result, x._backend)
        src_hit = src == _gather(result, dim=dim, index=idx)
        self_hit = (x == result) if include_self else ~touched  # where x's own value takes part
        hits = _scatter_add(src_hit.to(x.dtype), dim=dim, index=idx, shape=x.shape) + \
            self_hit.to(x.dtype)
        chosen = where(self_hit, x, 0.0) + _scatter_add(where(src_hit, src, 0.0), dim=dim,
                                                        index=idx, shape=x.shape)
        return chosen / hits if x.dtype.kind in "fc" else result
    raise OpError(f"scatter_reduce: reduce must be 'sum', 'prod', 'mean', 'amax' or 'amin', "
                     f"got {reduce!r}")


# --- index_*: a 1-D index along one dim ---------------------------------------------------------
def _index_along(x, dim, index, source, op):
    """(dim, index array spread over source's shape) for the index_* ops on x with ndim >= 1."""
    if not isinstance(index, Tensor) or index.dtype.kind not in "iu" or index.ndim > 1:
        raise TypeError(f"{op}: index must be a 0-d or 1-D integer Tensor, got "
                        f"{getattr(index, 'shape', type(index).__name__)} "
                        f"{getattr(index, 'dtype', '')}")
    dim = normalize_dim(dim, x.ndim, op)
    count = index.numel()
    expected = x.shape[:dim] + (count,) + x.shape[dim + 1:]
    if source is not None and source.shape != expected:
        raise RuntimeError(f"{op}: source must have shape {expected} (x's shape {x.shape} with "
                           f"dim {dim} of size len(index) = {count}), got {source.shape}")
    data = index.data.reshape(-1)
    if data.size and (int(data.min()) < 0 or int(data.max()) >= x.shape[dim]):
        raise OpIndexError(f"{op}: index values must lie in [0, {x.shape[dim]}) for dim {dim} of "
                           f"shape {x.shape}; got values in [{int(data.min())}, "
                           f"{int(data.max())}]")
    spread = data.reshape(tuple(-1 if d == dim else 1 for d in range(x.ndim)))
    return dim, x._backend.broadcast_to(spread % x.shape[dim], expected)


def _zero_dim(fn, x, dim, index, *rest):
    """A 0-d x (dim 0 or -1) handled as a 1-element x, as PyTorch treats it."""
    normalize_dim(dim, 0, fn.__name__)
    rest = tuple(r.reshape(-1) if isinstance(r, Tensor) else r for r in rest)
    return fn(x.reshape(1), 0, index.reshape(-1), *rest).reshape(())


@tensor_method
def index_add(x, dim, index, source, alpha=1):
    """x with alpha * source's slices added at `index` along dim (repeats accumulate)."""
    if x.ndim == 0:
        return _zero_dim(index_add, x, dim, index, source, alpha)
    dim, spread = _index_along(x, dim, index, source, "index_add")
    added = _scatter_add(source if alpha == 1 else source * alpha, dim=dim, index=spread,
                         shape=x.shape)
    return guard(x + added, index)


@tensor_method
def index_copy(x, dim, index, source):
    """x with source's slices written at `index` along dim."""
    if x.ndim == 0:
        return _zero_dim(index_copy, x, dim, index, source)
    dim, spread = _index_along(x, dim, index, source, "index_copy")
    return guard(_scatter(x, source.to(x.dtype), dim=dim, index=spread), index)


@tensor_method
def index_fill(x, dim, index, value):
    """x with `value` (a number or a 0-d tensor) in the slices at `index` along dim."""
    if x.ndim == 0:
        return _zero_dim(index_fill, x, dim, index, value)
    dim, spread = _index_along(x, dim, index, None, "index_fill")
    mask = x._backend.zeros(x.shape, dtype=bool)
    mask[(slice(None),) * dim + (spread.reshape(-1),)] = True
    return guard(where(from_array(mask, x._backend), value, x), index)


@tensor_method
def index_select(x, dim, index):
    """The slices of x at `index` (0-d or 1-D) along dim."""
    if x.ndim == 0:
        return _zero_dim(index_select, x, dim, index)
    dim, _ = _index_along(x, dim, index, None, "index_select")
    return getitem(x, (slice(None),) * dim + (index.reshape(-1),))


@tensor_method
def take(x, index):
    """x's elements at `index` into the flattened tensor; the result has index's shape."""
    return getitem(x.reshape(-1), index)


@tensor_method
def take_along_dim(x, indices, dim=None):
    """gather with broadcasting: x and indices broadcast in every dim but dim; dim=None
    indexes the flattened tensor."""
    if dim is None:
        return x.reshape(-1).gather(0, indices.reshape(-1))
    dim = normalize_dim(dim, x.ndim, "take_along_dim")
    if indices.ndim != x.ndim:
        raise RuntimeError(f"take_along_dim: indices of shape {indices.shape} and the tensor of "
                           f"shape {x.shape} must have the same number of dims")
    shape = x._backend.broadcast_shapes(x.shape[:dim] + (1,) + x.shape[dim + 1:],
                                        indices.shape[:dim] + (1,) + indices.shape[dim + 1:])
    x = x.expand(shape[:dim] + (x.shape[dim],) + shape[dim + 1:])
    indices = indices.expand(shape[:dim] + (indices.shape[dim],) + shape[dim + 1:])
    return x.gather(dim, indices)


# --- masks -------------------------------------------------------------------------------------
def _bool_mask(mask, op):
    if not isinstance(mask, Tensor) or mask.dtype.kind != "b":
        raise TypeError(f"{op}: mask must be a bool Tensor, got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)}")


@tensor_method
def masked_select(x, mask):
    """The elements of x (broadcast with mask) where mask is True, as a 1-D tensor."""
    _bool_mask(mask, "masked_select")
    shape = x._backend.broadcast_shapes(x.shape, mask.shape)
    return getitem(x.expand(shape).reshape(-1), mask.expand(shape).reshape(-1))


@tensor_method
def masked_scatter(x, mask, source):
    """x with the elements of source, in order, written where mask (broadcast to x) is True."""
    _bool_mask(mask, "masked_scatter")
    positions = nonzero(mask.expand(x.shape).reshape(-1)).reshape(-1)
    count = positions.numel()
    if source.numel() < count:
        raise RuntimeError(f"masked_scatter: the mask selects {count} elements but source "
                           f"{source.shape} holds only {source.numel()}")
    values = source.reshape(-1)[:count].to(x.dtype)
    return _scatter(x.reshape(-1), values, dim=0, index=positions.data).reshape(x.shape)


# --- data-dependent queries (no gradient) ------------------------------------------------------
@tensor_method
def nonzero(x, as_tuple=False):
    """Indices of the non-zero elements: (count, ndim) int64, or with as_tuple one 1-D index
    tensor per dim (what x[...] takes). A 0-d tensor counts as one element with no dims."""
    xp = x._backend
    if x.ndim == 0:
        count = int(bool(x.data))
        return ((from_array(xp.zeros(count, dtype="int64"), x._backend),) if as_tuple else
                from_array(xp.zeros((count, 0), dtype="int64"), x._backend))
    found = tuple(i.astype("int64") for i in xp.nonzero(x.data))
    if as_tuple:
        return tuple(from_array(i, x._backend) for i in found)
    return from_array(xp.stack(found, axis=1), x._backend)


@tensor_method
def argwhere(x):
    """nonzero(x) as a (count, ndim) tensor."""
    return nonzero(x)


@tensor_method
def unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (or, with dim, distinct slices along dim), always sorted; with
    return_inverse each element's position in them, with return_counts how often each occurs."""
    xp = x._backend
    if dim is not None:
        dim = normalize_dim(dim, x.ndim, "unique")
    data = x.data.reshape(-1) if dim is None else x.data
    values, inverse, counts = xp.unique(data, return_inverse=True, return_counts=True, axis=dim)
    inverse = inverse.reshape(x.shape if dim is None else (x.shape[dim],)).astype("int64")
    out = (from_array(values, x._backend),)
    if return_inverse:
        out += (from_array(inverse, x._backend),)
    if return_counts:
        out += (from_array(counts.astype("int64"), x._backend),)
    return out if len(out) > 1 else out[0]


@tensor_method
def bincount(x, weights=None, minlength=0):
    """How often each value 0, 1, ... occurs in a 1-D non-negative integer tensor (or the sum
    of `weights` at each), with at least `minlength` bins."""
    if x.ndim != 1 or x.dtype.kind not in "iu":
        raise TypeError(f"bincount: expected a 1-D integer tensor, got {x.shape} {x.dtype}")
    if x.numel() and int(x.data.min()) < 0:
        raise ValueError(f"bincount: values must be non-negative, got {int(x.data.min())}")
    xp = x._backend
    w = None if weights is None else weights.data
    out = xp.bincount(x.data, weights=w, minlength=minlength)
    return from_array(out.astype("int64" if w is None else w.dtype), x._backend)


# --- in-place forms (scatter_, index_add_ ...): the meaning every in-place op has (unary.py's
# inplace_form, Tensor._update); masked_fill_ is Tensor's own.
for _fn in (scatter, scatter_add, scatter_reduce, index_add, index_copy, index_fill,
            masked_scatter):
    inplace_form(_fn, _fn.__name__ + "_")
