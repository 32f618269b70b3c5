"""Indexing: x[index], gather, and the scatter-adds that are their gradients (and vice versa)."""
from ..autograd import guard, primitive
from ..errors import OpError, OpIndexError
from ..tensor import Tensor, from_array, tensor_method
from .select import where
from .operands import normalize_dim


_BASIC = frozenset((slice, int, type(None), type(Ellipsis)))


def array_index(index, like):
    """A Python index (ints, slices, None, Ellipsis, lists, Tensors) as one the backend takes.

    Boolean masks become the integer arrays of their True positions, so that the same index
    drives both the gather (forward) and the scatter-add (gradient).
    """
    items = index if isinstance(index, tuple) else _sequence_as_tuple(index)
    _check_steps(items)
    if _BASIC.issuperset(map(type, items)):  # slicing only: nothing to convert
        return items
    out = []
    for item in items:
        if isinstance(item, Tensor):
            if item._backend is not like._backend:
                raise RuntimeError(f"indexing: a {like.device} tensor indexed with a "
                                   f"{item.device} tensor")
            item = item.data
        elif isinstance(item, (list, tuple)):  # inside the index tuple, a tuple is a list
            item = like._backend.asarray(item)
        if hasattr(item, "dtype"):
            if item.dtype.kind == "b":
                out.extend(item.nonzero())
                continue
            if item.dtype.kind not in "iu":
                raise IndexError(f"indexing: tensors used as indices must be integer or bool, "
                                 f"got {item.dtype}")
        out.append(item)
    return tuple(out)


def _sequence_as_tuple(index):
    """PyTorch's (and old NumPy's) reading of a list index holding sequences, slices, None,
    Ellipsis or tensors: the tuple of them, so x[[[0, 1], [1, 2]]] is x[[0, 1], [1, 2]]."""
    if type(index) is list and len(index) < 32 and any(
            isinstance(i, (list, tuple, slice, Tensor)) or i is None or i is Ellipsis
            for i in index):
        return tuple(index)
    return (index,)


def _check_steps(items):
    """PyTorch's tensors have no negative strides, so a slice with a step below 1 is an error
    there; NumPy would reverse instead. Refused here too, so that code written against
    tensorgrad runs under torch."""
    for item in items:
        if type(item) is slice and item.step is not None and item.step <= 0:
            raise ValueError(f"indexing: slice step must be greater than zero, got {item.step} "
                             "(as in PyTorch; flip() reverses a dim)")


def _is_advanced(index):
    return not _BASIC.issuperset(map(type, index))


@primitive("getitem")
def _getitem(xp, x, index):
    return x[index]


@_getitem.defvjp
def _getitem_vjp(ctx, g):
    return _index_add(g, shape=ctx.in_shapes[0], index=ctx.attrs["index"])


@_getitem.defaccumulate
def _getitem_accumulate(ctx, g, into):
    index = ctx.attrs["index"]
    if _is_advanced(index):
        ctx.backend.scatter_add(into, index, g.data)
    else:
        into[index] += g.data


@primitive("index_add")
def _index_add(xp, g, shape, index):
    out = xp.zeros(shape, dtype=g.dtype)
    if _is_advanced(index):
        xp.scatter_add(out, index, g)  # repeated indices must accumulate
    else:
        out[index] = g
    return out


@_index_add.defvjp
def _index_add_vjp(ctx, g):
    return _getitem(g, index=ctx.attrs["index"])


def getitem(x, index):
    """x[index]: basic slicing (a view) and integer/bool array indexing (a copy)."""
    items = index if isinstance(index, tuple) else _sequence_as_tuple(index)
    if _BASIC.issuperset(map(type, items)):
        # Slicing only (KV-cache views, split, logits[:, -1]): nothing to convert, and a view,
        # so in-place writes to x show through it; tested once (decoding, per token).
        _check_steps(items)
        try:
            out = _getitem(x, index=items)
        except IndexError as exc:
            raise IndexError(f"{exc} (indexing a tensor of shape {x.shape})") from None
        out._version = x._version
        return out
    tensors = [item for item in items if isinstance(item, Tensor)]
    if tensors and x.requires_grad:  # the gradient reads them again
        return guard(_advanced_getitem(x, index), *tensors)
    return _advanced_getitem(x, index)


tensor_method(getitem, "__getitem__")


def _advanced_getitem(x, index):
    index = array_index(index, x)
    if _is_advanced(index) and any(type(item) is int for item in index):
        # PyTorch applies integers as basic indexing first and the arrays to what is left:
        # x[0, :, idx] on (2, 3, 4) is (3, len(idx)). NumPy counts the 0 as an array index
        # separated from idx by a slice and puts the indexed dims first: (len(idx), 3).
        first = tuple(slice(None) if hasattr(item, "dtype") else item for item in index)
        rest = tuple(item if hasattr(item, "dtype") or item is Ellipsis else slice(None)
                     for item in index if type(item) is not int)
        return getitem(getitem(x, first), rest)
    try:
        out = _getitem(x, index=index)
    except IndexError as exc:
        raise IndexError(f"{exc} (indexing a tensor of shape {x.shape})") from None
    if not _is_advanced(index):
        out._version = x._version  # a view: in-place writes to x show through it
    return out


# --- gather / scatter_add along one dim -------------------------------------------------------
def _along(xp, index, dim):
    """Full index arrays that address `index` values along `dim` and every other position."""
    grids = list(xp.ogrid[tuple(slice(0, s) for s in index.shape)])
    grids[dim] = index
    return tuple(grids)


@primitive("gather")
def _gather(xp, x, dim, index):
    return x[_along(xp, index, dim)]


@_gather.defvjp
def _gather_vjp(ctx, g):
    return _scatter_add(g, dim=ctx.attrs["dim"], index=ctx.attrs["index"],
                        shape=ctx.in_shapes[0])


@primitive("scatter_add")
def _scatter_add(xp, src, dim, index, shape):
    out = xp.zeros(shape, dtype=src.dtype)
    xp.scatter_add(out, _along(xp, index, dim), src)
    return out


@_scatter_add.defvjp
def _scatter_add_vjp(ctx, g):
    return _gather(g, dim=ctx.attrs["dim"], index=ctx.attrs["index"])


def _check_along(x, dim, index, op):
    if not isinstance(index, Tensor) or index.dtype.kind not in "iu":
        raise TypeError(f"{op}: index must be an integer Tensor, got "
                        f"{getattr(index, 'dtype', type(index).__name__)}")
    if index.ndim != x.ndim:
        raise RuntimeError(f"{op}: index has {index.ndim} dims but the tensor has {x.ndim} "
                           f"(shapes {index.shape} and {x.shape})")
    dim = normalize_dim(dim, x.ndim, op)
    for d, (i, s) in enumerate(zip(index.shape, x.shape)):
        if d != dim and i > s:
            raise RuntimeError(f"{op}: index shape {index.shape} is larger than the tensor's "
                               f"shape {x.shape} at dim {d}")
    data = index.data
    if data.size and (int(data.min()) < 0 or int(data.max()) >= x.shape[dim]):
        raise OpIndexError(f"{op}: index values must lie in [0, {x.shape[dim]}) along dim {dim} "
                           f"of shape {x.shape}; got values in [{int(data.min())}, "
                           f"{int(data.max())}]")
    return dim


def _fit(src, index, x, op):
    """src as a Tensor of index's shape: PyTorch reads the leading block of a larger src."""
    if not isinstance(src, Tensor):
        return from_array(x._backend.full(index.shape, src, dtype=x.dtype), x._backend)
    if src.ndim != index.ndim or any(s < i for s, i in zip(src.shape, index.shape)):
        raise RuntimeError(f"{op}: src of shape {src.shape} must have index's {index.ndim} dims "
                           f"and be at least as large as index {index.shape} in each")
    if src.shape != index.shape:
        src = src[tuple(slice(0, s) for s in index.shape)]
    return src if src.dtype == x.dtype else src.to(x.dtype)


@tensor_method
def gather(x, dim, index):
    """out[i][j] = x[i][index[i][j]] for dim=1 (torch.gather semantics, any number of dims)."""
    dim = _check_along(x, dim, index, "gather")
    return guard(_gather(x, dim=dim, index=index.data), index)


@tensor_method
def scatter_add(x, dim, index, src):
    """x plus src added at `index` along dim (repeated indices accumulate)."""
    dim = _check_along(x, dim, index, "scatter_add")
    src = _fit(src, index, x, "scatter_add")
    return guard(x + _scatter_add(src, dim=dim, index=index.data, shape=x.shape), index)


@tensor_method
def masked_fill(x, mask, value):
    """x with `value` wherever `mask` (broadcast to x) is True."""
    if not isinstance(mask, Tensor) or mask.dtype.kind != "b":
        raise TypeError(f"masked_fill: mask must be a bool Tensor, got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)}")
    return where(mask, value, x)


def one_hot(x, num_classes=-1):
    """int64 one-hot encoding with a new last dimension of size num_classes (no gradient)."""
    if x.dtype.kind not in "iu":
        raise TypeError(f"one_hot: expected an integer tensor of class indices, got {x.dtype}")
    xp = x._backend
    if num_classes < 0:
        num_classes = int(x.data.max()) + 1 if x.data.size else 0
    if x.data.size and (int(x.data.min()) < 0 or int(x.data.max()) >= num_classes):
        raise OpError(f"one_hot: class values must lie in [0, {num_classes}), got values in "
                      f"[{int(x.data.min())}, {int(x.data.max())}]")
    out = (x.data[..., None] == xp.arange(num_classes)).astype("int64")
    return from_array(out, xp)


def embedding(input, weight, padding_idx=None):
    """Rows of `weight` (num_embeddings, dim) picked by integer `input` -> input.shape + (dim,).

    Rows at `padding_idx` receive no gradient, as in PyTorch.
    """
    if not isinstance(input, Tensor) or input.dtype.kind not in "iu":
        raise TypeError(f"embedding: indices must be an integer Tensor, got "
                        f"{getattr(input, 'dtype', type(input).__name__)}")
    count = weight.shape[0]
    data = input.data
    # One reduction checks both ends: seen as unsigned, a negative id is larger than any count
    # (generate: 2 calls per token, where min and max took two).
    unsigned = data if data.dtype.kind == "u" else data.view(f"u{data.dtype.itemsize}")
    if data.size and int(unsigned.max()) >= count:
        raise IndexError(f"embedding: indices must lie in [0, {count}) for a table of shape "
                         f"{weight.shape}; got values in [{int(data.min())}, {int(data.max())}]")
    out = getitem(weight, input)
    if padding_idx is not None and weight.requires_grad:
        padding_idx = padding_idx % count
        out = where((input == padding_idx).unsqueeze(-1), out.detach(), out)
    return out
