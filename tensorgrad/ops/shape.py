"""Shape primitives (reshape, permute, expand, cat, pad, flip) and the composites built on them."""
import functools
import math

from ..autograd import primitive, untracked_view
from ..backend import as_dtype
from ..errors import OpError
from ..tensor import _numpy_names, from_array, tensor_method
from .select import where
from .operands import normalize_dim, result_dtype


def _sizes(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


# --- reshape ----------------------------------------------------------------------------------
@primitive("reshape", view=True)
def _reshape(xp, x, shape):
    return x.reshape(shape)


@_reshape.defvjp
def _reshape_vjp(ctx, g):
    return g.reshape(ctx.in_shapes[0])


@tensor_method
def reshape(x, *shape):
    """The same elements in a new shape; one dimension may be -1 (inferred). A view of x where
    its strides allow one, else a copy."""
    data = x.data
    requested = shape = _sizes(shape)
    size = data.size
    if -1 in shape:  # inferred from the others; a second -1 or a 0 beside it stays invalid
        free = shape.index(-1)
        known = math.prod(shape[:free] + shape[free + 1:])
        if known > 0 and size % known == 0:
            shape = shape[:free] + (size // known,) + shape[free + 1:]
    if shape == data.shape:
        return x
    if math.prod(shape) != size or min(shape, default=0) < 0:
        raise RuntimeError(f"reshape: cannot view a tensor of shape {x.shape} ({size} elements) "
                           f"as shape {requested}")
    if x.requires_grad:
        return _reshape(x, shape=shape)
    # nothing to record: the array's view, without the primitive call (generate_user: 16 a token)
    return untracked_view(x, data.reshape(shape))


@tensor_method
def view(x, *shape_or_dtype):
    """x.view(shape): reshape, but always a view, as in PyTorch: where x's strides allow none
    (a transposed matrix flattened, say) it raises and names reshape. x.view(dtype)
    reinterprets the bits as another dtype (no gradient, shares memory): the last dim scales by
    the ratio of the item sizes."""
    if len(shape_or_dtype) == 1 and not isinstance(shape_or_dtype[0], (int, tuple, list)):
        return _view_dtype(x, dtype=as_dtype(shape_or_dtype[0]))
    out = reshape(x, *shape_or_dtype)
    data = x.data
    # a C-contiguous array always reshapes to a view; otherwise NumPy's and CuPy's reshape copy
    # exactly where PyTorch's view refuses, and a copy shares no memory with its source
    if (out is not x and data.size and not data.flags.c_contiguous
            and not x._backend.may_share_memory(out.data, data)):
        raise RuntimeError(f"view: shape {_sizes(shape_or_dtype)} is not compatible with the "
                           f"size and strides of the input (shape {x.shape}, strides "
                           f"{x.stride()}): at least one dimension spans two contiguous "
                           "subspaces; use .reshape(...) instead")
    return out


@primitive("view_dtype", differentiable=False, view=True)
def _view_dtype(xp, x, dtype):
    if x.ndim == 0 and dtype.itemsize != x.dtype.itemsize:
        raise RuntimeError(f"view: a 0-d {x.dtype} tensor cannot be viewed as {dtype} (a "
                           "different item size needs a last dim)")
    return (x if x.flags.c_contiguous else xp.ascontiguousarray(x)).view(dtype)


@tensor_method
def view_as(x, other):
    return reshape(x, other.shape)


reshape_as = tensor_method(view_as, "reshape_as")


@tensor_method
def flatten(x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return reshape(x, 1)
    start, end = normalize_dim(start_dim, x.ndim, "flatten"), normalize_dim(end_dim, x.ndim,
                                                                           "flatten")
    shape = x.shape
    return reshape(x, shape[:start] + (-1,) + shape[end + 1:])


@tensor_method
def squeeze(x, dim=None):
    """Drop size-1 dimensions (all of them, or only `dim`, an int or tuple)."""
    if dim is None:
        dims = {i for i, s in enumerate(x.shape) if s == 1}
    else:
        dims = {normalize_dim(d, x.ndim, "squeeze")
                for d in ((dim,) if isinstance(dim, int) else dim)}
        dims = {d for d in dims if x.ndim and x.shape[d] == 1}  # a 0-d tensor stays as it is
    return reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in dims))


@tensor_method
def unsqueeze(x, dim):
    dim = normalize_dim(dim, x.ndim + 1, "unsqueeze")
    return reshape(x, x.shape[:dim] + (1,) + x.shape[dim:])


# --- permute / transpose --------------------------------------------------------------------------
@primitive("permute", view=True)
def _permute(xp, x, dims):
    return x.transpose(dims)


@_permute.defvjp
def _permute_vjp(ctx, g):
    dims = ctx.attrs["dims"]
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return g.permute(*inverse)


@tensor_method
def permute(x, *dims):
    dims = tuple(normalize_dim(d, x.ndim, "permute") for d in _sizes(dims))
    if sorted(dims) != list(range(x.ndim)):
        raise RuntimeError(f"permute: dims {dims} are not a permutation of the {x.ndim} "
                           f"dimensions of a tensor of shape {x.shape}")
    if dims == tuple(range(x.ndim)):
        return x
    if x.requires_grad:
        return _permute(x, dims=dims)
    return untracked_view(x, x.data.transpose(dims))  # nothing to record, as reshape's


@tensor_method
def transpose(x, dim0, dim1):
    ndim = x.data.ndim
    d0, d1 = normalize_dim(dim0, ndim, "transpose"), normalize_dim(dim1, ndim, "transpose")
    if d0 == d1:
        return x
    if not x.requires_grad:  # nothing to record, as reshape's (generate_user: 16 a token)
        return untracked_view(x, x.data.swapaxes(d0, d1))
    dims = list(range(ndim))
    dims[d0], dims[d1] = d1, d0
    return _permute(x, dims=tuple(dims))


@tensor_method
def movedim(x, source, destination):
    """Move dim `source` to position `destination` (or several: two sequences of one length)."""
    many = not isinstance(source, int)
    source = tuple(source) if many else (source,)
    destination = tuple(destination) if many else (destination,)
    if len(source) != len(destination):
        raise RuntimeError(f"movedim: source {source} and destination {destination} must have "
                           "the same length")
    source = [normalize_dim(d, x.ndim, "movedim") for d in source]
    destination = [normalize_dim(d, x.ndim, "movedim") for d in destination]
    if len(set(source)) != len(source) or len(set(destination)) != len(destination):
        raise RuntimeError(f"movedim: repeated dims in {source} or {destination}")
    rest = iter(d for d in range(x.ndim) if d not in source)
    placed = dict(zip(destination, source))
    return permute(x, *(placed[i] if i in placed else next(rest) for i in range(x.ndim)))


# --- expand ---------------------------------------------------------------------------------------
@primitive("expand", view=True)
def _expand(xp, x, shape):
    return xp.broadcast_to(x, shape)


@_expand.defvjp
def _expand_vjp(ctx, g):
    return g  # the engine sums the gradient back down to the input's shape


@tensor_method
def expand(x, *sizes):
    """Broadcast to a larger shape without copying; -1 keeps a dimension's size."""
    sizes = _sizes(sizes)
    lead = len(sizes) - x.ndim
    if lead < 0:
        raise RuntimeError(f"expand: the target shape {sizes} has fewer dimensions than the "
                           f"tensor's shape {x.shape}")
    shape = tuple(x.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    for i, s in enumerate(x.shape):
        if s != 1 and s != shape[i + lead]:
            raise RuntimeError(f"expand: cannot expand shape {x.shape} to {sizes}: dimension {i} "
                               f"has size {s}, which is neither 1 nor {shape[i + lead]}")
    if shape == x.shape:
        return x
    return _expand(x, shape=shape)


@tensor_method
def expand_as(x, other):
    return expand(x, other.shape)


@tensor_method
def broadcast_to(x, shape):
    return expand(x, tuple(shape))


@tensor_method
def repeat(x, *sizes):
    """Tile x: repeat(2, 3) on shape (a, b) gives (2a, 3b), as torch.Tensor.repeat."""
    sizes = _sizes(sizes)
    if len(sizes) < x.ndim:
        raise RuntimeError(f"repeat: needs at least {x.ndim} sizes for shape {x.shape}, "
                           f"got {sizes}")
    shape = (1,) * (len(sizes) - x.ndim) + x.shape
    spread = x.reshape(tuple(d for s in shape for d in (1, s)))
    tiled = spread.expand(tuple(d for r, s in zip(sizes, shape) for d in (r, s)))
    return tiled.reshape(tuple(r * s for r, s in zip(sizes, shape)))


# --- cat / stack / split ------------------------------------------------------------------------
@primitive("cat")
def _cat(xp, *arrays, dim):
    return xp.concatenate(arrays, axis=dim)


@_cat.defvjp
def _cat_vjp(ctx, g):
    dim, offset, grads = ctx.attrs["dim"], 0, []
    for shape, needed in zip(ctx.in_shapes, ctx.needs_grad):
        size = shape[dim]
        grads.append(g.narrow(dim, offset, size) if needed else None)
        offset += size
    return tuple(grads)


@_numpy_names
def cat(tensors, dim=0):
    """Join tensors along an existing dimension."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat: expected a non-empty sequence of tensors")
    first = tensors[0]
    dim = normalize_dim(dim, first.ndim, "cat")
    shape = first.shape
    for i, t in enumerate(tensors):
        other = t.shape
        if len(other) != len(shape) or other[:dim] != shape[:dim] or \
                other[dim + 1:] != shape[dim + 1:]:
            shapes = ", ".join(str(u.shape) for u in tensors)
            raise RuntimeError(f"cat: tensors must match in every dimension but dim {dim}; got "
                               f"shapes {shapes} (tensor {i} differs)")
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        dtype = functools.reduce(result_dtype, dtypes)
        tensors = [t if t.dtype == dtype else t.to(dtype) for t in tensors]
    if len(tensors) == 1:
        return tensors[0]
    return _cat(*tensors, dim=dim)


concat = concatenate = cat  # torch's aliases


@_numpy_names
def stack(tensors, dim=0):
    """Join same-shaped tensors along a new dimension."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack: expected a non-empty sequence of tensors")
    shapes = {t.shape for t in tensors}
    if len(shapes) != 1:
        raise RuntimeError(f"stack: expects tensors of one shape, got {[t.shape for t in tensors]}")
    dim = normalize_dim(dim, tensors[0].ndim + 1, "stack")
    return cat([unsqueeze(t, dim) for t in tensors], dim)


@tensor_method
def narrow(x, dim, start, length):
    """x sliced to [start, start + length) along dim (a view)."""
    dim = normalize_dim(dim, x.ndim, "narrow")
    index = (slice(None),) * dim + (slice(start, start + length),)
    return x[index]


@tensor_method
def select(x, dim, index):
    """x indexed at `index` along dim, that dim removed (a view): x[:, index] for dim 1."""
    dim = normalize_dim(dim, x.ndim, "select")
    if not -x.shape[dim] <= index < x.shape[dim]:
        raise IndexError(f"select: index {index} is out of range for dim {dim} of size "
                         f"{x.shape[dim]}")
    return x[(slice(None),) * dim + (index,)]


@tensor_method
def split(x, split_size_or_sections, dim=0):
    """Pieces of `split_size` along dim (the last may be smaller), or of the given sizes."""
    dim = normalize_dim(dim, x.ndim, "split")
    size = x.shape[dim]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0:
            raise ValueError(f"split: split_size must be positive, got {step}")
        sections = [min(step, size - start) for start in range(0, size, step)] or [0]
    else:
        sections = list(split_size_or_sections)
        if sum(sections) != size:
            raise RuntimeError(f"split: sizes {sections} do not add up to {size}, the size of "
                               f"dim {dim} of shape {x.shape}")
    out, start, lead = [], 0, (slice(None),) * dim
    # as narrow(x, dim, start, length), without re-checking dim; with no gradient to record,
    # the pieces are array views, one getitem call less each (generate_user: q, k, v)
    data = None if x.requires_grad else x.data
    for length in sections:
        index = lead + (slice(start, start + length),)
        out.append(x[index] if data is None else untracked_view(x, data[index]))
        start += length
    return tuple(out)


@tensor_method
def chunk(x, chunks, dim=0):
    """Split into `chunks` pieces of ceil(size / chunks) (the last may be smaller)."""
    size = x.shape[normalize_dim(dim, x.ndim, "chunk")]
    return split(x, max(-(-size // chunks), 1), dim)


@tensor_method
def unbind(x, dim=0):
    dim = normalize_dim(dim, x.ndim, "unbind")
    return tuple(squeeze(piece, dim) for piece in split(x, 1, dim))


# --- pad / flip -----------------------------------------------------------------------------------
@primitive("pad")
def _pad(xp, x, widths, value):
    return xp.pad(x, widths, mode="constant", constant_values=value)


@_pad.defvjp
def _pad_vjp(ctx, g):
    index = tuple(slice(before, g.shape[i] - after)
                  for i, (before, after) in enumerate(ctx.attrs["widths"]))
    return g[index]


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(x, pad, mode="constant", value=None):
    """torch.nn.functional.pad: `pad` lists (before, after) widths starting from the LAST
    dimension, so pad=(1, 2) pads the last dim by 1 before and 2 after; a negative width crops.

    mode: 'constant' (fill with `value`, default 0), 'reflect' (mirror, not repeating the edge;
    widths below the dim's size), 'replicate' (repeat the edge), 'circular' (wrap around; widths
    at most the dim's size). PyTorch takes the non-constant modes on the last 1-3 dims only;
    here they work on any number of dims.
    """
    pad = tuple(pad)
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"pad: mode must be one of {_PAD_MODES}, got {mode!r}")
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ValueError(f"pad: expected an even number of widths, at most 2 per dimension "
                         f"({2 * x.ndim} for shape {x.shape}), got {pad}")
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if mode != "constant" and value is not None:
        raise ValueError(f"pad: a fill value only goes with mode='constant', got mode={mode!r}")
    for d, (before, after) in enumerate(widths):
        if x.shape[d] + before + after < 0:
            raise ValueError(f"pad: widths {(before, after)} crop dim {d} of shape {x.shape} "
                             f"below size 0")
    # PyTorch's two readings of a negative width: reflect and replicate pad the whole dim and
    # drop positions; constant and circular crop first and pad what is left.
    if mode != "reflect" and mode != "replicate" and any(b < 0 or a < 0 for b, a in widths):
        x = x[tuple(slice(max(-b, 0), x.shape[d] - max(-a, 0))
                    for d, (b, a) in enumerate(widths))]
        widths = [(max(b, 0), max(a, 0)) for b, a in widths]
    if mode == "constant":
        if not any(b or a for b, a in widths):
            return x
        return _pad(x, widths=tuple(widths), value=0.0 if value is None else value)
    for d, (before, after) in enumerate(widths):
        if before or after:
            x = x[(slice(None),) * d + (_pad_index(x, d, before, after, mode),)]
    return x


def _pad_index(x, dim, before, after, mode):
    """Which source element each position of the padded dim reads, as an index tensor; a
    negative width starts or ends inside the dim."""
    xp, size = x._backend, x.shape[dim]
    limit = size - 1 if mode == "reflect" else size if mode == "circular" else None
    if size == 0 and size + before + after:
        raise OpError(f"pad: mode={mode!r} cannot pad dim {dim} of shape {x.shape}: it is "
                      "empty")
    if limit is not None and max(before, after) > limit:
        raise OpError(f"pad: mode={mode!r} needs widths of at most {limit} for dim {dim} of "
                      f"size {size} (shape {x.shape}), got {(before, after)}")
    position = xp.arange(-before, size + after)
    if mode == "reflect":  # ... 2 1 | 0 1 2 ... n-1 | n-2 n-3 ...
        position = xp.abs(position)
        position = xp.where(position > size - 1, 2 * (size - 1) - position, position)
    elif mode == "replicate":
        position = xp.clip(position, 0, size - 1)
    else:
        position = position % size
    return from_array(position, xp)


@primitive("flip")
def _flip(xp, x, dims):
    return xp.flip(x, axis=dims)


@_flip.defvjp
def _flip_vjp(ctx, g):
    return g.flip(ctx.attrs["dims"])


@tensor_method
def flip(x, *args, dims=None):
    """Reverse the order along dims: x.flip(0, 1), x.flip((0, 1)) or flip(x, dims=[0, 1])."""
    if (dims is None) == (not args):
        raise TypeError("flip() takes the dims once: x.flip(0, 1), x.flip((0, 1)) or "
                        f"flip(x, dims=(0, 1)); got {args} and dims={dims}")
    dims = _sizes(args) if dims is None else dims
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    dims = tuple(normalize_dim(d, x.ndim, "flip") for d in dims)
    return _flip(x, dims=dims) if x.ndim else x.clone()  # 0-d: dim 0 / -1 name x itself


# --- triangles ------------------------------------------------------------------------------------
def _triangle(x, diagonal, lower):
    if x.ndim < 2:
        raise RuntimeError(f"{'tril' if lower else 'triu'}: needs at least 2 dimensions, got "
                           f"shape {x.shape}")
    xp = x._backend
    rows, cols = x.shape[-2:]
    keep = xp.tri(rows, cols, diagonal, dtype=bool) if lower else \
        ~xp.tri(rows, cols, diagonal - 1, dtype=bool)
    zero = from_array(xp.zeros((), x.dtype), xp)  # a Python 0 would make bool int64
    return where(from_array(keep, xp), x, zero)


@tensor_method
def tril(x, diagonal=0):
    """Keep the lower triangle (j <= i + diagonal) of the last two dims, zero the rest."""
    return _triangle(x, diagonal, True)


@tensor_method
def triu(x, diagonal=0):
    """Keep the upper triangle (j >= i + diagonal) of the last two dims, zero the rest."""
    return _triangle(x, diagonal, False)


def broadcast_shapes(*shapes):
    """The shape that all `shapes` broadcast to (an int counts as a 1-D shape), as a tuple."""
    result = []
    for shape in shapes:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if any(n < 0 for n in shape):
            raise RuntimeError(f"broadcast_shapes: sizes must be non-negative, got {shape}")
        padded = [1] * (len(shape) - len(result)) + result
        for i, n in enumerate(shape[::-1], 1):
            have = padded[-i]
            if have != n and 1 not in (have, n):
                raise RuntimeError(f"broadcast_shapes: shapes {list(shapes)} cannot be broadcast "
                                   f"together (size {have} against {n} at dim {-i})")
            padded[-i] = n if have == 1 else have
        result = padded
    return tuple(result)


def broadcast_tensors(*tensors):
    """Expand every tensor to their common broadcast shape (views; gradients sum back)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t if t.shape == shape else expand(t, shape) for t in tensors)
