"""Ordering and selection: sort, argsort, msort, topk, kthvalue, median, nanmedian, mode.

Two non-differentiable primitives find positions: `argsort` and `argpartition` (the indices
that put the k-th smallest element in place, smaller ones before it and larger ones after, in
O(n)). Values are then read with `gather`, whose VJP scatters the gradient back to the chosen
indices, so every op here is differentiable in its values with no gradient code of its own and
second order comes for free.

NaN orders as the largest value, as in PyTorch (NumPy and CuPy sort it last).
"""
import functools

from ..autograd import primitive
from ..creation import full, ones_like, tensor, zeros_like
from ..tensor import tensor_method
from .compare import isnan
from .index import gather
from .operands import normalize_dim
from .reduce import values_indices
from .shape import cat


def _ascending(xp, x, dim, stable):
    # NumPy's default quicksort is several times faster than its stable sort, so stability is
    # asked for only when wanted. CuPy's sort is always stable, and older CuPy takes no `kind`.
    if stable:
        try:
            return xp.argsort(x, axis=dim, kind="stable")
        except (TypeError, ValueError):
            pass
    return xp.argsort(x, axis=dim)


@primitive("argsort", differentiable=False)
def _argsort(xp, x, dim, descending, stable):
    if not descending:
        return _ascending(xp, x, dim, stable).astype("int64", copy=False)
    if not stable:  # the ascending order reversed: NaN, sorted last, comes first
        return xp.flip(_ascending(xp, x, dim, False), axis=dim).astype("int64", copy=False)
    # Stable: sort the reversed row ascending, then reverse the result, which puts equal values
    # back in their original order.
    order = xp.flip(_ascending(xp, xp.flip(x, axis=dim), dim, True), axis=dim)
    return (x.shape[dim] - 1 - order).astype("int64", copy=False)


@primitive("argpartition", differentiable=False)
def _argpartition(xp, x, dim, kth):
    return xp.argpartition(x, kth, axis=dim).astype("int64", copy=False)


def _vectorised(fn):
    """Run a selection op on a 0-d tensor as on a 1-element vector (so dim 0 / -1 work, as in
    PyTorch), giving 0-d results."""
    @functools.wraps(fn)
    def run(x, *args, **kwargs):
        if x.ndim:
            return fn(x, *args, **kwargs)
        out = fn(x.reshape(1), *args, **kwargs)
        if isinstance(out, tuple):
            return type(out)(*(o.reshape(()) for o in out))
        return out.reshape(())
    return run


@tensor_method
@_vectorised
def argsort(x, dim=-1, descending=False, stable=False):
    """The int64 indices that sort x along dim (ascending unless descending). stable=True keeps
    equal elements in their original order; otherwise their order is unspecified."""
    return _argsort(x, dim=normalize_dim(dim, x.ndim, "argsort"), descending=bool(descending),
                    stable=bool(stable))


@tensor_method
@_vectorised
def sort(x, dim=-1, descending=False, stable=False):
    """(values, indices): x sorted along dim, and where each value came from. The values are
    differentiable (the gradient goes back to the indices)."""
    dim = normalize_dim(dim, x.ndim, "sort")
    indices = argsort(x, dim, descending, stable=stable)
    return values_indices(gather(x, dim, indices), indices)


@tensor_method
def msort(x):
    """x sorted along its first dimension (the values of sort(x, dim=0))."""
    return sort(x, 0).values


@tensor_method
@_vectorised
def topk(x, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the k largest (or, largest=False, smallest) elements along dim,
    from the most extreme on; the values are differentiable. O(n + k log k): a partition finds
    the k, only they are sorted. The results are sorted whatever `sorted` says (PyTorch leaves
    the order unspecified when it is False)."""
    dim = normalize_dim(dim, x.ndim, "topk")
    n = x.shape[dim]
    if not isinstance(k, int) or not 0 <= k <= n:
        raise IndexError(f"topk: k={k} is out of range for dimension {dim} of size {n} "
                         f"(shape {x.shape}); expected 0 <= k <= {n}")
    keys = x.detach()  # positions only: no graph until the values are gathered
    if 0 < k < n:
        # NaN partitions last, so as the largest value.
        kth = n - k if largest else k - 1
        chosen = _argpartition(keys, dim=dim, kth=kth).narrow(dim, kth if largest else 0, k)
    else:
        chosen = _argsort(keys, dim=dim, descending=False, stable=False).narrow(dim, 0, k)
    order = argsort(gather(keys, dim, chosen), dim, descending=largest)
    indices = gather(chosen, dim, order)
    return values_indices(gather(x, dim, indices), indices)


@tensor_method
@_vectorised
def kthvalue(x, k, dim=-1, keepdim=False):
    """(values, indices) of the k-th smallest element (k counts from 1) along dim, in O(n)."""
    dim = normalize_dim(dim, x.ndim, "kthvalue")
    n = x.shape[dim]
    if not isinstance(k, int) or not 1 <= k <= n:
        raise IndexError(f"kthvalue: k={k} is out of range for dimension {dim} of size {n} "
                         f"(shape {x.shape}); expected 1 <= k <= {n}")
    indices = _argpartition(x, dim=dim, kth=k - 1).narrow(dim, k - 1, 1)
    return _picked(x, dim, indices, keepdim)


def _picked(x, dim, indices, keepdim):
    """(values, indices) of x at one index per row along dim (indices keep that dim, size 1)."""
    values = gather(x, dim, indices)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return values_indices(values, indices)


def _nan_count(x, dim):
    if x.dtype.kind != "f":
        return None
    return x.isnan().sum(dim, keepdim=True)  # (..., 1, ...)


@tensor_method
def median(x, dim=None, keepdim=False):
    """PyTorch's median: the lower of the two middle values for an even count (no averaging).
    median(x) is that of all elements, a 0-d tensor, whose gradient is shared equally by every
    element equal to it (as in PyTorch); median(x, dim) gives (values, indices), the gradient
    going to the index. A row holding NaN has median NaN (see nanmedian)."""
    if dim is None:
        if x.numel() == 0 and x.dtype.kind == "f":  # PyTorch's answer for no elements
            return full((), float("nan"), dtype=x.dtype, device=x.device)
        return _shared(x, median(x.detach().reshape(-1), 0).values, _median)
    return _median(x, dim, keepdim)


def _shared(x, value, by_index):
    """The all-elements median `value` (0-d) as a function of x whose gradient is split
    equally among the elements equal to it: value + sum((x - value) * tied) / count is value
    exactly, since x - value is 0 where tied."""
    flat = x.reshape(-1)
    if x.dtype.kind != "f" or bool(value.isnan()):
        return by_index(flat, 0, False).values
    tied = flat.detach() == value
    return value + ((flat - value) * tied).sum() / tied.sum()


@_vectorised
def _median(x, dim, keepdim):
    dim = normalize_dim(dim, x.ndim, "median")
    n = x.shape[dim]
    if n == 0:
        raise IndexError(f"median: dimension {dim} of shape {x.shape} is empty")
    indices = _argpartition(x, dim=dim, kth=(n - 1) // 2).narrow(dim, (n - 1) // 2, 1)
    nans = _nan_count(x, dim)
    if nans is not None:  # a row with NaN answers NaN: its first NaN
        first_nan = x.isnan().to("int8").argmax(dim, keepdim=True)
        indices = first_nan.where(nans > 0, indices)
    return _picked(x, dim, indices, keepdim)


@tensor_method
def nanmedian(x, dim=None, keepdim=False):
    """median ignoring NaN: the lower middle value of each row's non-NaN elements (NaN when a
    row holds nothing else)."""
    if dim is None:
        return _shared(x, nanmedian(x.detach().reshape(-1), 0).values, _nanmedian)
    return _nanmedian(x, dim, keepdim)


@_vectorised
def _nanmedian(x, dim, keepdim):
    dim = normalize_dim(dim, x.ndim, "nanmedian")
    n = x.shape[dim]
    if n == 0:
        raise IndexError(f"nanmedian: dimension {dim} of shape {x.shape} is empty")
    nans = _nan_count(x, dim)
    if nans is None:
        return _median(x, dim, keepdim)
    # The per-row position differs with the row's NaN count, so sort (NaN goes last).
    order = _argsort(x, dim=dim, descending=False, stable=False)
    valid = (n - nans).clamp(min=1)  # (..., 1, ...); an all-NaN row picks position 0: NaN
    position = ((valid - 1).double() * 0.5).floor().long()
    return _picked(x, dim, gather(order, dim, position), keepdim)


@tensor_method
@_vectorised
def mode(x, dim=-1, keepdim=False):
    """(values, indices): the most frequent value of each row along dim (the smallest of them
    when several are equally frequent), and the index of its last occurrence."""
    dim = normalize_dim(dim, x.ndim, "mode")
    n = x.shape[dim]
    if n == 0:
        raise IndexError(f"mode: dimension {dim} of shape {x.shape} is empty")
    order = _argsort(x.detach(), dim=dim, descending=False, stable=True)
    ordered = gather(x.detach(), dim, order)
    # Equal values are neighbours once sorted: number their runs 0, 1, ... along dim, count
    # each run's length, and take the first longest (runs go up in value: the smallest mode).
    changes = (ordered.narrow(dim, 1, n - 1) != ordered.narrow(dim, 0, n - 1)).long()
    run = cat([zeros_like(order.narrow(dim, 0, 1)), changes.cumsum(dim)], dim)
    counts = zeros_like(order).scatter_add(dim, run, ones_like(run))
    best = counts.argmax(dim, keepdim=True)
    first = (run == best).to("int8").argmax(dim, keepdim=True)
    # The run's last element: the stable sort kept equal values in index order, so this is the
    # value's last occurrence, the index PyTorch returns.
    last = first + counts.gather(dim, best) - 1
    return _picked(x, dim, gather(order, dim, last), keepdim)


# --- searchsorted / bucketize: insertion positions, by counting -----------------------------------
def _before(seq, v, right):
    """Elementwise: does seq's entry come before the value v is inserted (strictly below v on
    the left side, at or below on the right)? NaN orders last, as in sorting."""
    if right:
        return (seq <= v) | isnan(v)
    return (seq < v) | (isnan(v) & ~isnan(seq))


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """Where each value of input would be inserted to keep sorted_sequence sorted along its last
    dim: the count of entries below it (side='left'), or at or below it (side='right', or
    right=True). A 1-D sequence serves every value; an N-D one pairs its leading dims with
    input's. input may be a number (-> 0-d). sorter: indices that sort an unsorted sequence.
    NaN orders last (a NaN value goes after every number; torch's binary search gives
    probe-dependent positions for a sequence holding NaN, this counts it as the largest).
    Counted by one comparison per (value, entry) pair: O(len(input) * len(sequence))."""
    if side not in (None, "left", "right"):
        raise RuntimeError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if side == "left" and right:
        raise RuntimeError("searchsorted: side='left' contradicts right=True")
    right = right or side == "right"
    seq = sorted_sequence
    if seq.ndim == 0:
        raise RuntimeError("searchsorted: sorted_sequence must have at least one dimension")
    if sorter is not None:
        if sorter.shape != seq.shape:
            raise RuntimeError(f"searchsorted: sorter of shape {sorter.shape} must match "
                               f"sorted_sequence's shape {seq.shape}")
        seq = gather(seq, -1, sorter)
    scalar = not hasattr(input, "shape")
    values = tensor(input, dtype=seq.dtype, device=seq.device) if scalar else input
    if seq.ndim > 1 and (scalar or values.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError(f"searchsorted: an N-D sorted_sequence of shape {seq.shape} needs "
                           f"input with the same leading dims, got "
                           f"{() if scalar else values.shape}")
    if seq.ndim == 1:
        counts = _before(seq, values.unsqueeze(-1), right).sum(-1)
    else:
        counts = _before(seq.unsqueeze(-2), values.unsqueeze(-1), right).sum(-1)
    counts = counts.detach()
    return counts.int() if out_int32 else counts


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value among 1-D ascending boundaries: i with boundaries[i-1] < x <=
    boundaries[i] (right=False), or boundaries[i-1] <= x < boundaries[i] (right=True)."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"bucketize: boundaries must be 1-D, got shape {boundaries.shape}")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)
