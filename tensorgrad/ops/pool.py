"""Pooling over 1-3 spatial dims: max, average, adaptive average and adaptive max.

No new primitives. A max pool finds each window's winner on arrays and then *gathers* it, so its
gradient is gather's (a scatter-add onto the winners) to any order. An average pool sums im2col
columns and divides by PyTorch's divisor; an adaptive average pool is a product with one
averaging matrix per spatial dim (each window is a box, so the average separates by dims).
"""
import math

from ..creation import zeros
from ..errors import OpError
from ..tensor import from_array
from .conv import _im2col, ntuple


def _batched(input, spatial, op):
    """(x with a batch dim, whether it had none): pools take (N, C, *S) or (C, *S)."""
    if input.ndim not in (spatial + 1, spatial + 2):
        raise ValueError(f"{op}: expected a {spatial + 2}-D (N, C, *spatial) or "
                         f"{spatial + 1}-D (C, *spatial) input, got shape {input.shape}")
    return (input.unsqueeze(0), True) if input.ndim == spatial + 1 else (input, False)


def _windows(sizes, kernel_size, stride, padding, dilation, ceil_mode, spatial, op):
    """kernel, stride, dilation, (before, after) padding and window counts per dim, PyTorch's
    rules: stride defaults to the kernel; padding at most half the kernel; with ceil_mode the
    last window may hang over the end but must start inside the input or the left padding."""
    kernel = ntuple(kernel_size, spatial, "kernel_size", op)
    stride = kernel if stride is None or stride == [] else ntuple(stride, spatial, "stride", op)
    pads = ntuple(padding, spatial, "padding", op)
    dilation = ntuple(dilation, spatial, "dilation", op)
    if any(p > k // 2 for p, k in zip(pads, kernel)):
        raise ValueError(f"{op}: padding {pads} should be at most half of kernel_size {kernel}")
    if min(kernel + stride + dilation) < 1:
        raise ValueError(f"{op}: kernel_size, stride and dilation must be positive, got "
                         f"{kernel}, {stride}, {dilation}")
    counts, widths = [], []
    for size, k, s, p, d in zip(sizes, kernel, stride, pads, dilation):
        span = d * (k - 1) + 1
        reach = size + 2 * p - span
        if reach < 0:
            raise OpError(f"{op}: the kernel {kernel} (dilation {dilation}) does not fit the "
                             f"input of spatial size {tuple(sizes)} with padding {pads}")
        count = (-(-reach // s) if ceil_mode else reach // s) + 1
        if ceil_mode and (count - 1) * s >= size + p:
            count -= 1
        counts.append(count)
        # Right padding that makes exactly `count` windows (negative: trailing rows unused).
        widths.append((p, (count - 1) * s + span - size - p))
    return kernel, stride, dilation, tuple(widths), tuple(counts)


# --- max pooling: winners found on arrays, then gathered ---------------------------------------
def _winners(x, positions):
    """Flat spatial indices (N, C, *O) of each window's maximum.

    positions: per spatial dim an int array (O_i, K_i) of the coordinates a window reads; those
    outside [0, size) are padding and never win. Ties go to the first in row-major window order
    and NaN wins, as in PyTorch.
    """
    xp, data = x._backend, x.data
    sizes = data.shape[2:]
    flat, valid = 0, True
    spatial = len(sizes)
    for i, (pos, size) in enumerate(zip(positions, sizes)):
        # dims (O_1, ..., O_n, K_1, ..., K_n): O_i at axis i, K_i at axis spatial + i
        shape = [1] * (2 * spatial)
        shape[i], shape[spatial + i] = pos.shape
        pos = pos.reshape(shape)
        valid = valid & (pos >= 0) & (pos < size)
        flat = flat * size + xp.clip(pos, 0, size - 1)
    outs = flat.shape[:spatial]
    flat = flat.reshape(math.prod(outs), -1)  # (prod O, prod K)
    valid = valid.reshape(flat.shape)  # every dim took part, so it has the full shape
    candidates = data.reshape(data.shape[:2] + (math.prod(sizes),))[:, :, flat]  # (N, C, O, K)
    lowest = -xp.inf if data.dtype.kind == "f" else xp.iinfo(data.dtype).min
    candidates = xp.where(valid, candidates, lowest)
    best = candidates.argmax(axis=-1)  # (N, C, prod O)
    winners = flat[xp.arange(flat.shape[0]), best]  # the window's k-th position, per window
    return winners.reshape(data.shape[:2] + outs)


def _gather_winners(x, winners, return_indices):
    n, c = x.shape[:2]
    index = from_array(winners.astype(x._backend.int64, copy=False), x._backend)
    flat = (n, c, math.prod(x.shape[2:]))  # sizes spelled out: an empty batch is valid input
    picks = index.reshape(n, c, math.prod(index.shape[2:]))
    out = x.reshape(flat).gather(2, picks).reshape(index.shape)
    return (out, index) if return_indices else out


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, spatial,
              op):
    x, unbatched = _batched(input, spatial, op)
    kernel, stride, dilation, widths, counts = _windows(
        x.shape[2:], kernel_size, stride, padding, dilation, ceil_mode, spatial, op)
    xp = x._backend
    positions = [xp.arange(m)[:, None] * s - lo + xp.arange(k)[None, :] * d
                 for m, s, (lo, _), k, d in zip(counts, stride, widths, kernel, dilation)]
    result = _gather_winners(x, _winners(x, positions), return_indices)
    if unbatched:
        return tuple(r.squeeze(0) for r in result) if return_indices else result.squeeze(0)
    return result


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over sliding windows of (N, C, L) or (C, L); with return_indices also the int64 index
    of each maximum in the input's last dim."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     1, "max_pool1d")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over sliding windows of (N, C, H, W) or (C, H, W): (N, C, H_out, W_out); padding
    counts as -inf. return_indices: also the flat index (h * W + w) of each maximum."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     2, "max_pool2d")


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """max_pool2d with three spatial dims."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     3, "max_pool3d")


# --- average pooling ---------------------------------------------------------------------------
def _divisor_1d(xp, size, count, k, s, p, count_include_pad):
    """Per output position along one dim: how many elements its window averages (PyTorch's
    rule: padding counts when count_include_pad, the ceil_mode overhang never does)."""
    start = xp.arange(count) * s - p
    end = xp.minimum(start + k, size + p)
    if count_include_pad:
        return end - start
    return xp.minimum(end, size) - xp.maximum(start, 0)


def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override, spatial, op):
    x, unbatched = _batched(input, spatial, op)
    kernel, stride, dilation, widths, counts = _windows(
        x.shape[2:], kernel_size, stride, padding, 1, ceil_mode, spatial, op)
    n, c = x.shape[:2]
    cols = _im2col(x, kernel=kernel, dilation=dilation, padding=widths, stride=stride)
    sums = cols.reshape(n, c, math.prod(kernel), math.prod(counts)).sum(2).reshape((n, c) + counts)
    if divisor_override is not None:
        if divisor_override == 0:
            raise ValueError(f"{op}: divisor_override must not be zero")
        out = sums / divisor_override
    else:
        xp = x._backend
        divisor = 1
        for i, (size, m, k, s, (p, _)) in enumerate(zip(x.shape[2:], counts, kernel, stride,
                                                        widths)):
            along = _divisor_1d(xp, size, m, k, s, p, count_include_pad)
            divisor = divisor * along.reshape((-1,) + (1,) * (spatial - 1 - i))
        out = sums / from_array(xp.asarray(divisor, dtype=x.dtype), xp)
    return out.squeeze(0) if unbatched else out


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """Mean over sliding windows of (N, C, L) or (C, L)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1,
                     "avg_pool1d")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Mean over sliding windows of (N, C, H, W) or (C, H, W). Zero padding is counted in the
    divisor when count_include_pad; divisor_override replaces the divisor."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, 2, "avg_pool2d")


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """avg_pool2d with three spatial dims."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, 3, "avg_pool3d")


# --- adaptive pooling: output size given, windows [floor(i*L/O), ceil((i+1)*L/O)) ----------------
def _adaptive_sizes(x, output_size, spatial, op):
    sizes = (output_size,) * spatial if isinstance(output_size, int) or output_size is None \
        else tuple(output_size)
    if len(sizes) != spatial:
        raise ValueError(f"{op}: output_size must be an int or {spatial} ints (None keeps a "
                         f"size), got {output_size!r}")
    sizes = tuple(s if o is None else o for o, s in zip(sizes, x.shape[2:]))
    if min(sizes) < 1 or min(x.shape[2:]) < 1:
        raise ValueError(f"{op}: output_size {sizes} and the input's spatial sizes "
                         f"{x.shape[2:]} must be positive")
    return sizes


def _bounds(size, out):
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def _adaptive_avg(input, output_size, spatial, op):
    x, unbatched = _batched(input, spatial, op)
    xp = x._backend
    for i, out in enumerate(_adaptive_sizes(x, output_size, spatial, op)):
        dim = 2 + i
        size = x.shape[dim]
        if out == size:
            continue
        average = xp.zeros((size, out), dtype=x.dtype)  # column j averages window j
        for j, (lo, hi) in enumerate(_bounds(size, out)):
            average[lo:hi, j] = 1.0 / (hi - lo)
        matrix = from_array(average, xp)
        x = (x.movedim(dim, -1) @ matrix).movedim(-1, dim)  # (..., size) @ (size, out)
    return x.squeeze(0) if unbatched else x


def adaptive_avg_pool1d(input, output_size):
    """(N, C, L) or (C, L) averaged down (or up) to L_out = output_size windows."""
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    """(N, C, H, W) or (C, H, W) averaged to (H_out, W_out) = output_size (an int, a pair, None
    in a place keeps that size); output (1, 1) is a global average pool."""
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


def _adaptive_max(input, output_size, return_indices, spatial, op):
    x, unbatched = _batched(input, spatial, op)
    xp = x._backend
    positions = []
    for size, out in zip(x.shape[2:], _adaptive_sizes(x, output_size, spatial, op)):
        bounds = _bounds(size, out)
        widest = max(hi - lo for lo, hi in bounds)
        # a narrower window reads past its end; those reads are marked as padding (never win)
        pos = [[lo + k if lo + k < hi else size for k in range(widest)] for lo, hi in bounds]
        positions.append(xp.asarray(pos))
    result = _gather_winners(x, _winners(x, positions), return_indices)
    if unbatched:
        return tuple(r.squeeze(0) for r in result) if return_indices else result.squeeze(0)
    return result


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max over adaptive windows of (N, C, L) or (C, L)."""
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over adaptive windows of (N, C, H, W) or (C, H, W); indices as in max_pool2d."""
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


# --- max_unpool: each maximum put back where max_pool took it, zeros elsewhere -----------------
def _max_unpool(input, indices, kernel_size, stride, padding, output_size, spatial, op):
    x, unbatched = _batched(input, spatial, op)
    if indices.shape != input.shape or indices.dtype.kind not in "iu":
        raise OpError(f"{op}: expected integer indices of the input's shape {input.shape} (from "
                      f"max_pool with return_indices=True), got {indices.shape} {indices.dtype}")
    kernel = ntuple(kernel_size, spatial, "kernel_size", op)
    stride = kernel if stride is None else ntuple(stride, spatial, "stride", op)
    pads = ntuple(padding, spatial, "padding", op)
    default = tuple((n - 1) * s - 2 * p + k
                    for n, s, p, k in zip(x.shape[2:], stride, pads, kernel))
    size = default if output_size is None else tuple(output_size)[-spatial:]
    if len(size) != spatial or any(not d - s < o < d + s
                                   for o, d, s in zip(size, default, stride)):
        raise OpError(f"{op}: output_size {output_size} must give {spatial} sizes, each within "
                      f"one stride of {default} (stride {stride})")
    n, c = x.shape[:2]
    places = (indices.unsqueeze(0) if unbatched else indices).reshape(n, c, -1)
    out = zeros((n, c, math.prod(size)), dtype=x.dtype, device=x.device)
    out = out.scatter(2, places, x.reshape(n, c, -1)).reshape((n, c) + size)  # (N, C, *size)
    return out.squeeze(0) if unbatched else out


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """max_pool1d's partial inverse: (N, C, L) values and their indices -> (N, C, L_out), the
    values at their indices and zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1,
                       "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """max_pool2d's partial inverse: (N, C, H, W) and the flat indices max_pool2d returned ->
    (N, C, H_out, W_out), by default ((H - 1) * stride - 2 * padding + kernel, ...)."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2,
                       "max_unpool2d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """max_pool3d's partial inverse: max_unpool2d with one more spatial dimension."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3,
                       "max_unpool3d")
