"""Resizing: torch.nn.functional.interpolate (nearest, nearest-exact, linear, bilinear, bicubic,
trilinear, area).

Every mode resamples one spatial dim at a time (each is separable). Nearest modes pick source
elements with an index (so inf and NaN stay where they are); the others multiply the dim by a
constant (out, in) resampling matrix, built on arrays from PyTorch's source-coordinate rules,
which makes the gradient (the transposed matrix) and every higher derivative come for free.
"""
import math

from ..tensor import from_array
from .operands import require_float
from .pool import _adaptive_avg

_MODES = {"nearest": None, "nearest-exact": None, "area": None, "linear": 1, "bilinear": 2,
          "bicubic": 2, "trilinear": 3}
_CUBIC_A = -0.75  # the cubic convolution constant PyTorch (and OpenCV) use


def _output_sizes(x, size, scale_factor, spatial):
    sizes = x.shape[2:]
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    if size is not None:
        out = (size,) * spatial if isinstance(size, int) else tuple(size)
        if len(out) != spatial:
            raise ValueError(f"interpolate: size must be an int or {spatial} ints for input of "
                             f"shape {x.shape}, got {size!r}")
        return out, None
    scales = (scale_factor,) * spatial if isinstance(scale_factor, (int, float)) \
        else tuple(scale_factor)
    if len(scales) != spatial:
        raise ValueError(f"interpolate: scale_factor must be a number or {spatial} numbers for "
                         f"input of shape {x.shape}, got {scale_factor!r}")
    return tuple(math.floor(s * f) for s, f in zip(sizes, scales)), scales


def _scale(size, out, factor, align_corners):
    """Source distance per output step (PyTorch's area_pixel_compute_scale)."""
    if align_corners:
        return (size - 1) / (out - 1) if out > 1 else 0.0
    return 1.0 / factor if factor is not None else size / out


def _nearest_index(xp, size, out, factor, exact):
    # PyTorch computes these in float32; doing the same keeps the rare rounding ties equal.
    scale = xp.float32(1.0 / factor) if factor is not None else xp.float32(size) / xp.float32(out)
    position = xp.arange(out, dtype=xp.float32) + (xp.float32(0.5) if exact else 0)
    return xp.minimum(xp.floor(position * scale).astype(xp.int64), size - 1)


def _resampling_matrix(xp, size, out, factor, align_corners, cubic, dtype):
    """(size, out): column j holds the weights output j gives its source elements."""
    scale = _scale(size, out, factor, align_corners)
    target = xp.arange(out, dtype=xp.float64)
    source = target * scale if align_corners else scale * (target + 0.5) - 0.5
    matrix = xp.zeros((size, out), dtype=xp.float64)
    columns = xp.arange(out)
    if cubic:  # four taps at floor-1 ... floor+2, edges repeated
        start = xp.floor(source)
        t = source - start
        a = _CUBIC_A
        near = lambda s: ((a + 2) * s - (a + 3)) * s * s + 1  # noqa: E731  |s| <= 1
        far = lambda s: ((a * s - 5 * a) * s + 8 * a) * s - 4 * a  # noqa: E731  1 < |s| < 2
        for offset, weight in ((-1, far(t + 1)), (0, near(t)), (1, near(1 - t)),
                               (2, far(2 - t))):
            rows = xp.clip(start.astype(xp.int64) + offset, 0, size - 1)
            xp.scatter_add(matrix, (rows, columns), weight)
    else:  # two taps, the source clamped at 0 (align_corners=False can go below it)
        source = xp.maximum(source, 0.0)
        low = xp.minimum(xp.floor(source).astype(xp.int64), size - 1)
        high = xp.minimum(low + 1, size - 1)
        frac = source - low
        xp.scatter_add(matrix, (low, columns), 1.0 - frac)
        xp.scatter_add(matrix, (high, columns), frac)
    return matrix.astype(dtype)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of (N, C, *spatial) to `size`, or by `scale_factor`.

    mode: 'nearest' (PyTorch's floor rule), 'nearest-exact', 'linear' (3-D input), 'bilinear'
    or 'bicubic' (4-D), 'trilinear' (5-D), 'area' (adaptive average pooling). align_corners
    (linear modes only): map the corner pixels' centres onto each other. With scale_factor the
    coordinates use 1 / scale_factor unless recompute_scale_factor, as in PyTorch.
    """
    if mode not in _MODES:
        raise ValueError(f"interpolate: mode must be one of {tuple(_MODES)}, got {mode!r}")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    spatial = input.ndim - 2
    if spatial < 1 or (_MODES[mode] is not None and _MODES[mode] != spatial):
        wanted = f"{_MODES[mode] + 2}-D" if _MODES[mode] else "3-D to 5-D"
        raise ValueError(f"interpolate: mode={mode!r} expects {wanted} input (N, C, *spatial), "
                         f"got shape {input.shape}")
    linear = mode in ("linear", "bilinear", "bicubic", "trilinear")
    # PyTorch resizes uint8 images with bilinear and bicubic too: each pass rounds back to uint8
    image = input.dtype.kind == "u" and input.dtype.itemsize == 1 and spatial == 2 and linear
    if mode != "nearest" and mode != "nearest-exact" and not image:
        require_float(input, "interpolate")
    if align_corners is not None and not linear:
        raise ValueError(f"interpolate: align_corners only goes with the linear and cubic "
                         f"modes, got mode={mode!r}")
    outs, factors = _output_sizes(input, size, scale_factor, spatial)
    if min(outs) < 1:
        raise ValueError(f"interpolate: output size {outs} must be positive")
    if recompute_scale_factor or factors is None:
        factors = (None,) * spatial
    if mode == "area":
        return _adaptive_avg(input, outs, spatial, "interpolate")
    x, xp = input, input._backend
    passes = list(enumerate(zip(outs, factors)))
    for i, (out, factor) in reversed(passes) if image else passes:  # images: width first
        dim, length = 2 + i, x.shape[2 + i]
        if mode.startswith("nearest"):
            index = _nearest_index(xp, length, out, factor, mode == "nearest-exact")
            x = x[(slice(None),) * dim + (from_array(index, xp),)]
            continue
        dtype = x.dtype if not image else xp.float32
        matrix = from_array(_resampling_matrix(xp, length, out, factor, bool(align_corners),
                                                     mode == "bicubic", dtype), xp)
        y = x.to(dtype) if image else x
        x = (y.movedim(dim, -1) @ matrix).movedim(-1, dim)  # (..., length) @ (length, out)
        if image:  # rounded each pass as PyTorch's integer kernel (its values may differ by 1)
            x = (x + 0.5).floor().clamp(0, 255).to(input.dtype)
    return x
