"""Rearranging elements, as in PyTorch: roll, rot90, diagonals, sliding windows, repeats, the
stacking helpers and grids. All composites of the shape and indexing primitives (reshape,
permute, expand, cat, flip, getitem, index_add), so their gradients need no code of their own."""
import math

from .. import backend as _backends
from ..creation import zeros
from ..errors import OpError
from ..tensor import Tensor, from_array, tensor_method
from .index import _index_add, getitem
from .operands import normalize_dim, result_dtype
from .shape import _sizes, cat, flip, movedim, pad, reshape, stack, transpose


def _along(dim, item):
    """An index tuple applying `item` to dim and taking everything before it."""
    return (slice(None),) * dim + (item,)


# --- rolls and rotations ----------------------------------------------------------------------
@tensor_method
def roll(x, shifts, dims=None):
    """Shift elements along dims, wrapping around; with dims=None the flattened tensor is rolled
    and the shape restored."""
    if dims is None:
        if not isinstance(shifts, int):
            if len(shifts) != 1:
                raise OpError(f"roll: without dims, shifts must be one number, got {shifts}")
            shifts, = shifts
        return roll(x.reshape(-1), shifts, 0).reshape(x.shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts {shifts} and dims {dims} must have the same length")
    if x.ndim == 0:
        raise IndexError("roll: a 0-d tensor has no dims to roll along (leave dims out)")
    for shift, dim in zip(shifts, dims):
        dim = normalize_dim(dim, x.ndim, "roll")
        size = x.shape[dim]
        shift = shift % size if size else 0
        if shift:  # the last `shift` elements move to the front
            x = cat([x.narrow(dim, size - shift, shift), x.narrow(dim, 0, size - shift)], dim)
    return x


@tensor_method
def rot90(x, k=1, dims=(0, 1)):
    """Rotate by 90 degrees k times in the plane of dims, from the first towards the second."""
    if len(dims) != 2 or x.ndim < 2:
        raise RuntimeError(f"rot90: needs two dims of a tensor with at least 2, got dims {dims} "
                           f"for shape {x.shape}")
    d0, d1 = (normalize_dim(d, x.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"rot90: dims must differ, got {dims}")
    k %= 4
    if k == 1:
        return transpose(flip(x, d1), d0, d1)
    if k == 2:
        return flip(x, (d0, d1))
    if k == 3:
        return flip(transpose(x, d0, d1), d1)
    return x


@tensor_method
def fliplr(x):
    """Reverse the columns (dim 1) of a tensor with at least 2 dims."""
    if x.ndim < 2:
        raise RuntimeError(f"fliplr: needs at least 2 dims, got shape {x.shape}")
    return flip(x, 1)


@tensor_method
def flipud(x):
    """Reverse the rows (dim 0) of a tensor with at least 1 dim."""
    if x.ndim < 1:
        raise RuntimeError("fliplr: needs at least 1 dim, got a 0-d tensor")
    return flip(x, 0)


# --- transposes under other names ---------------------------------------------------------------
swapaxes = tensor_method(transpose, "swapaxes")
swapdims = tensor_method(transpose, "swapdims")
moveaxis = tensor_method(movedim, "moveaxis")


@tensor_method
def t(x):
    """Transpose a 2-D tensor; 0-d and 1-D tensors come back as they are, as in PyTorch."""
    if x.ndim > 2:
        raise RuntimeError(f"t: expects a tensor with at most 2 dims, got shape {x.shape}; use "
                           "transpose or mT")
    return transpose(x, 0, 1) if x.ndim == 2 else x


# --- diagonals ----------------------------------------------------------------------------------
def _diagonal_positions(xp, rows, cols, offset):
    """Row and column indices of the diagonal `offset` of a (rows, cols) matrix."""
    start_row, start_col = max(-offset, 0), max(offset, 0)
    length = max(min(rows - start_row, cols - start_col), 0)
    steps = xp.arange(length)
    return steps + start_row, steps + start_col


@tensor_method
def diagonal(x, offset=0, dim1=0, dim2=1):
    """The diagonal of the (dim1, dim2) planes, appended as the last dim (offset > 0: above)."""
    d1, d2 = normalize_dim(dim1, x.ndim, "diagonal"), normalize_dim(dim2, x.ndim, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal: dim1 and dim2 must differ, got {dim1} and {dim2}")
    planes = movedim(x, (d1, d2), (-2, -1))  # (..., rows, cols)
    rows, cols = _diagonal_positions(x._backend, *planes.shape[-2:], offset)
    # (..., length)
    return getitem(planes, (Ellipsis, from_array(rows, x._backend), from_array(cols, x._backend)))


@tensor_method
def diag_embed(x, offset=0, dim1=-2, dim2=-1):
    """The last dim of x placed on diagonal `offset` of new (dim1, dim2) planes, zeros elsewhere."""
    if x.ndim == 0:
        raise RuntimeError("diag_embed: expects at least 1 dim, got a 0-d tensor")
    ndim = x.ndim + 1
    d1, d2 = normalize_dim(dim1, ndim, "diag_embed"), normalize_dim(dim2, ndim, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diag_embed: dim1 and dim2 must differ, got {dim1} and {dim2}")
    size = x.shape[-1] + abs(offset)
    rows, cols = _diagonal_positions(x._backend, size, size, offset)
    planes = _index_add(x, shape=x.shape[:-1] + (size, size), index=(Ellipsis, rows, cols))
    return movedim(planes, (-2, -1), (d1, d2))


@tensor_method
def diag(x, diagonal=0):
    """1-D -> the square matrix with x on diagonal `diagonal`; 2-D -> that diagonal as 1-D."""
    if x.ndim == 1:
        return diag_embed(x, diagonal)
    if x.ndim == 2:
        return globals()["diagonal"](x, diagonal)
    raise RuntimeError(f"diag: expects a 1-D or 2-D tensor, got shape {x.shape}")


def _triangle_indices(row, col, offset, device, lower):
    backend = _backends.get_backend(device)
    keep = backend.tri(row, col, offset, dtype=bool) if lower else \
        ~backend.tri(row, col, offset - 1, dtype=bool)
    out = backend.stack(backend.nonzero(keep)).astype("int64")  # row-major order, as PyTorch
    return from_array(out.reshape(2, -1), backend)


def tril_indices(row, col, offset=0, dtype=None, device=None):
    """(2, N) int64 coordinates of the lower triangle (j <= i + offset) of a (row, col) matrix."""
    out = _triangle_indices(row, col, offset, device, True)
    return out if dtype is None else out.to(dtype)


def triu_indices(row, col, offset=0, dtype=None, device=None):
    """(2, N) int64 coordinates of the upper triangle (j >= i + offset) of a (row, col) matrix."""
    out = _triangle_indices(row, col, offset, device, False)
    return out if dtype is None else out.to(dtype)


# --- windows and repeats ------------------------------------------------------------------------
def unfold(x, dimension, size, step):  # a Tensor method only: F.unfold is im2col, another op
    """Tensor.unfold: every window of `size` elements taken `step` apart along `dimension`;
    that dim becomes the window count and the window is a new last dim (a copy, not a view)."""
    dim = normalize_dim(dimension, x.ndim, "unfold")
    length = x.shape[dim] if x.ndim else 1
    if size > length or step <= 0 or size < 0:
        raise RuntimeError(f"unfold: windows of size {size} and step {step} do not fit dim {dim} "
                           f"of size {length} (shape {x.shape})")
    if x.ndim == 0:
        return x.reshape(1)
    xp = x._backend
    count = (length - size) // step + 1
    starts = xp.arange(count)[:, None] * step
    windows = from_array(starts + xp.arange(size)[None, :], x._backend)  # (count, size)
    return movedim(getitem(x, _along(dim, windows)), dim + 1, -1)


tensor_method(unfold)


@tensor_method
def unflatten(x, dim, sizes):
    """Split dim into `sizes` (one may be -1)."""
    dim = normalize_dim(dim, x.ndim, "unflatten")
    sizes = tuple(sizes)
    if -1 in sizes:
        known = math.prod(s for s in sizes if s != -1)
        sizes = tuple(x.shape[dim] // known if s == -1 and known else s for s in sizes)
    if math.prod(sizes) != x.shape[dim]:
        raise RuntimeError(f"unflatten: sizes {sizes} do not multiply to {x.shape[dim]}, the size "
                           f"of dim {dim} of shape {x.shape}")
    return reshape(x, x.shape[:dim] + sizes + x.shape[dim + 1:])


@tensor_method
def repeat_interleave(x, repeats=None, dim=None, output_size=None):
    """Each element (or slice along dim) repeated `repeats` times in a row: an int or one count
    per element. repeat_interleave(counts) alone gives arange repeated by the counts."""
    if repeats is None:  # torch.repeat_interleave(repeats)
        repeats, x = x, from_array(x._backend.arange(x.numel()), x._backend)
    if dim is None:
        x, dim = x.reshape(-1), 0
    dim = normalize_dim(dim, x.ndim, "repeat_interleave")
    xp = x._backend
    size = x.shape[dim] if x.ndim else 1
    counts = repeats.data.reshape(-1) if isinstance(repeats, Tensor) else repeats
    if isinstance(repeats, Tensor) and counts.size not in (1, size):
        raise RuntimeError(f"repeat_interleave: repeats has {counts.size} entries but dim {dim} "
                           f"has size {size}")
    if xp.any(xp.asarray(counts) < 0):
        raise RuntimeError("repeat_interleave: repeats must be non-negative")
    picks = from_array(xp.repeat(xp.arange(size), counts), x._backend)
    if output_size is not None and picks.numel() != output_size:
        raise RuntimeError(f"repeat_interleave: output_size {output_size} but the repeats give "
                           f"{picks.numel()}")
    return getitem(x.reshape(1) if x.ndim == 0 else x, _along(dim, picks))


@tensor_method
def tile(x, dims):
    """repeat with fewer sizes allowed: missing leading sizes count as 1."""
    dims = tuple(dims)
    return x.repeat(*((1,) * (x.ndim - len(dims)) + dims))


# --- promotion to more dims and the stacking helpers ----------------------------------------------
def _at_least(tensors, ndim, place):
    tensors = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) \
        else tensors
    out = tuple(x if x.ndim >= ndim else reshape(x, place(x.shape)) for x in tensors)
    return out[0] if len(out) == 1 else out


def atleast_1d(*tensors):
    return _at_least(tensors, 1, lambda s: (1,))


def atleast_2d(*tensors):
    """0-d -> (1, 1); (n,) -> (1, n)."""
    return _at_least(tensors, 2, lambda s: (1,) * (2 - len(s)) + s)


def atleast_3d(*tensors):
    """0-d -> (1, 1, 1); (n,) -> (1, n, 1); (m, n) -> (m, n, 1), as PyTorch (and NumPy)."""
    return _at_least(tensors, 3, lambda s: (1, 1, 1) if not s else (1,) + s + (1,)
                     if len(s) == 1 else s + (1,))


def _as_tuple(tensors):
    return atleast_1d(*tensors) if len(tensors) > 1 else (atleast_1d(*tensors),)


def hstack(tensors):
    """cat along dim 1 (dim 0 for 1-D tensors)."""
    tensors = _as_tuple(tensors)
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    """cat of the atleast_2d tensors along dim 0."""
    tensors = atleast_2d(*tensors)
    return cat(tensors if isinstance(tensors, tuple) else (tensors,), 0)


row_stack = vstack


def dstack(tensors):
    """cat of the atleast_3d tensors along dim 2."""
    tensors = atleast_3d(*tensors)
    return cat(tensors if isinstance(tensors, tuple) else (tensors,), 2)


def column_stack(tensors):
    """0-d and 1-D tensors become columns, then hstack."""
    return hstack([x.reshape(-1, 1) if x.ndim <= 1 else x for x in tensors])


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids of 1-D (or 0-d) tensors; indexing='xy' swaps the first two dims."""
    tensors = tuple(_sizes(tensors))
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    if not tensors or any(x.ndim > 1 for x in tensors):
        raise RuntimeError(f"meshgrid: expects 0-d or 1-D tensors, got shapes "
                           f"{[x.shape for x in tensors]}")
    flat = [x.reshape(-1) for x in tensors]
    shape = [x.shape[0] for x in flat]
    if indexing == "xy" and len(flat) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, x in enumerate(flat):
        axis = (1 - i if i < 2 else i) if indexing == "xy" and len(flat) >= 2 else i
        spot = [1] * len(flat)
        spot[axis] = -1
        out.append(x.reshape(spot).expand(shape))
    return tuple(out)


def cartesian_prod(*tensors):
    """Every combination of the 1-D tensors' elements as rows, (N, k); one tensor: itself."""
    if len(tensors) == 1:
        return tensors[0]
    return stack([g.reshape(-1) for g in meshgrid(*tensors, indexing="ij")], 1)


@tensor_method
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """n-th forward difference along dim, after joining prepend and append there (they need
    input's rank and its sizes off dim). Bool tensors give `!=` of neighbours, as in PyTorch."""
    if input.ndim == 0:
        raise RuntimeError("diff: expected a tensor of at least one dimension, got a 0-d one")
    if n < 0:
        raise RuntimeError(f"diff: order n must be non-negative, got {n}")
    dim = normalize_dim(dim, input.ndim, "diff")
    if n == 0:  # torch returns the input itself, prepend and append not joined
        return input
    parts = [t for t in (prepend, input, append) if t is not None]
    for t in parts:
        if t.ndim != input.ndim:
            raise RuntimeError(f"diff: prepend/append must have the input's {input.ndim} "
                               f"dimensions, got shape {t.shape} for input {input.shape}")
    x = cat(parts, dim) if len(parts) > 1 else input
    for _ in range(n):
        length = x.shape[dim]
        if length == 0:
            break
        later, earlier = x.narrow(dim, 1, length - 1), x.narrow(dim, 0, length - 1)
        x = later != earlier if x.dtype.kind == "b" else later - earlier
    return x


def block_diag(*tensors):
    """A block-diagonal matrix of the given 0-, 1- or 2-D tensors (a 0-d one is 1x1, a 1-D one
    a row), zeros elsewhere; dtypes are promoted as in PyTorch."""
    blocks = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"block_diag: input {i} must have 2 or fewer dimensions, got "
                               f"shape {t.shape}")
        blocks.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not blocks:
        return zeros(1, 0)
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = result_dtype(dtype, b.dtype)
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        right = width - left - b.shape[1]
        rows.append(pad(b.to(dtype), (left, right)))
        left += b.shape[1]
    return cat(rows, 0)
