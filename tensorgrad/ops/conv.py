"""Convolution through im2col: `unfold` / `fold` (im2col / col2im), conv1d/2d/3d and their
transposes.

im2col copies every kernel window of the input into a column, so a convolution is one matrix
product with the flattened weight; col2im is its adjoint (it adds each column back onto the
windows it came from). The two primitives are each other's VJP, so any order of derivative of a
convolution written with them is exact. `conv` is a fused primitive for speed (the forward keeps
its columns for the weight gradient and the VJP runs on arrays; benchmarks/: conv2d); it names
the im2col + matmul composite, which the engine differentiates under create_graph.
"""
import itertools
import math

from ..autograd import primitive
from ..errors import OpError
from ..tensor import from_array
from .operands import promote, require_float


# --- argument handling shared with pooling --------------------------------------------------------
def ntuple(value, n, name, op):
    """An int or a sequence of n ints as a tuple of n ints."""
    values = (value,) * n if isinstance(value, int) else tuple(value)
    if len(values) != n or not all(isinstance(v, int) and not isinstance(v, bool)
                                   for v in values):
        raise ValueError(f"{op}: {name} must be an int or a sequence of {n} ints, got {value!r}")
    return values


def window_counts(sizes, kernel, dilation, padding, stride, op):
    """How many windows fit along each spatial dim; padding is (before, after) per dim."""
    counts = []
    for size, k, d, (lo, hi), s in zip(sizes, kernel, dilation, padding, stride):
        span = d * (k - 1) + 1
        if size + lo + hi < span:
            raise OpError(f"{op}: the kernel (size {kernel}, dilation {dilation}) does not fit "
                             f"the padded input: spatial size {tuple(sizes)} with padding "
                             f"{padding}")
        counts.append((size + lo + hi - span) // s + 1)
    return tuple(counts)


def pad_array(xp, x, padding, value=0.0):
    """x with (before, after) widths on its trailing dims; a negative width crops instead."""
    lead = x.ndim - len(padding)
    crop = tuple(slice(max(-lo, 0), x.shape[lead + i] - max(-hi, 0))
                 for i, (lo, hi) in enumerate(padding))
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        x = x[(slice(None),) * lead + crop]
    widths = ((0, 0),) * lead + tuple((max(lo, 0), max(hi, 0)) for lo, hi in padding)
    if any(lo or hi for lo, hi in widths):
        x = xp.pad(x, widths, mode="constant", constant_values=value)
    return x


def windows(xp, x, kernel, dilation, stride, counts):
    """A strided view (N, C, *kernel, *counts) of x's windows (no copy)."""
    steps = x.strides[2:]
    shape = x.shape[:2] + tuple(kernel) + tuple(counts)
    strides = (x.strides[:2] + tuple(st * d for st, d in zip(steps, dilation))
               + tuple(st * s for st, s in zip(steps, stride)))
    return xp.lib.stride_tricks.as_strided(x, shape, strides)


# --- im2col / col2im on arrays --------------------------------------------------------------------
def _im2col_array(xp, x, kernel, dilation, padding, stride):
    """(N, C, *S) -> (N, C * prod(kernel), L) columns, L = the number of windows."""
    counts = window_counts(x.shape[2:], kernel, dilation, padding, stride, "im2col")
    view = windows(xp, pad_array(xp, x, padding), kernel, dilation, stride, counts)
    n, c = x.shape[:2]
    return xp.ascontiguousarray(view).reshape(n, c * math.prod(kernel), math.prod(counts))


def _col2im_array(xp, cols, size, kernel, dilation, padding, stride):
    """The adjoint of _im2col_array: (N, C * prod(kernel), L) -> (N, C, *size), every column
    entry added back where it was read from."""
    counts = window_counts(size, kernel, dilation, padding, stride, "col2im")
    n, c = cols.shape[0], cols.shape[1] // math.prod(kernel)
    # The padded canvas; with a negative `after` width (conv_transpose's output_padding) the
    # output reaches past the last window, so the canvas is as long as the output needs.
    canvas = tuple(max(s + lo + hi, lo + s) for s, (lo, hi) in zip(size, padding))
    out = xp.zeros((n, c) + canvas, dtype=cols.dtype)
    cols = cols.reshape((n, c) + tuple(kernel) + counts)
    every = (slice(None), slice(None))
    # One strided add per kernel offset: prod(kernel) vectorised passes, no per-window loop.
    for offset in itertools.product(*(range(k) for k in kernel)):
        target = tuple(slice(o * d, o * d + (m - 1) * s + 1, s)
                       for o, d, m, s in zip(offset, dilation, counts, stride))
        out[every + target] += cols[every + offset]
    crop = tuple(slice(lo, lo + s) for s, (lo, _) in zip(size, padding))
    return out[every + crop]


@primitive("im2col")
def _im2col(xp, x, kernel, dilation, padding, stride):
    return _im2col_array(xp, x, kernel, dilation, padding, stride)


@_im2col.defvjp
def _im2col_vjp(ctx, g):
    return _col2im(g, size=ctx.in_shapes[0][2:], **ctx.attrs)


@primitive("col2im")
def _col2im(xp, cols, size, kernel, dilation, padding, stride):
    return _col2im_array(xp, cols, size, kernel, dilation, padding, stride)


@_col2im.defvjp
def _col2im_vjp(ctx, g):
    a = ctx.attrs
    return _im2col(g, kernel=a["kernel"], dilation=a["dilation"], padding=a["padding"],
                   stride=a["stride"])


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.unfold (im2col): every kernel window of a (N, C, H, W) or (C, H, W)
    input as a column, giving (N, C * kh * kw, L) with L the number of windows."""
    if input.ndim not in (3, 4):
        raise ValueError(f"unfold: expected a (N, C, H, W) or (C, H, W) input, got shape "
                         f"{input.shape}")
    x = input.unsqueeze(0) if input.ndim == 3 else input
    kernel = ntuple(kernel_size, 2, "kernel_size", "unfold")
    pads = ntuple(padding, 2, "padding", "unfold")
    cols = _im2col(x, kernel=kernel, dilation=ntuple(dilation, 2, "dilation", "unfold"),
                   padding=tuple((p, p) for p in pads), stride=ntuple(stride, 2, "stride",
                                                                      "unfold"))
    return cols.squeeze(0) if input.ndim == 3 else cols


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.fold (col2im), unfold's adjoint: columns (N, C * kh * kw, L) or
    (C * kh * kw, L) summed back into a (N, C, *output_size) image (overlaps add up)."""
    kernel = ntuple(kernel_size, 2, "kernel_size", "fold")
    size = ntuple(output_size, 2, "output_size", "fold")
    dilation, stride = ntuple(dilation, 2, "dilation", "fold"), ntuple(stride, 2, "stride", "fold")
    pads = tuple((p, p) for p in ntuple(padding, 2, "padding", "fold"))
    if input.ndim not in (2, 3):
        raise ValueError(f"fold: expected (N, C * prod(kernel_size), L) or "
                         f"(C * prod(kernel_size), L) columns, got shape {input.shape}")
    cols = input.unsqueeze(0) if input.ndim == 2 else input
    blocks = math.prod(window_counts(size, kernel, dilation, pads, stride, "fold"))
    if cols.shape[1] % math.prod(kernel) or cols.shape[2] != blocks:
        raise ValueError(f"fold: columns of shape {input.shape} do not fit kernel_size {kernel} "
                         f"and output_size {size}: expected dim -2 divisible by "
                         f"{math.prod(kernel)} and {blocks} blocks in dim -1")
    out = _col2im(cols, size=size, kernel=kernel, dilation=dilation, padding=pads, stride=stride)
    return out.squeeze(0) if input.ndim == 2 else out


# --- convolution ----------------------------------------------------------------------------------
def _conv_composite(x, weight, bias, stride, padding, dilation, groups):
    """The convolution in tensorgrad ops: im2col, then one (batched over groups) matmul."""
    n, o = x.shape[0], weight.shape[0]
    kernel = weight.shape[2:]
    counts = window_counts(x.shape[2:], kernel, dilation, padding, stride, "conv")
    cols = _im2col(x, kernel=kernel, dilation=dilation, padding=padding, stride=stride)
    # sizes spelled out rather than -1 throughout: an empty batch is valid input
    cols = cols.reshape(n, groups, cols.shape[1] // groups, math.prod(counts))  # (N, G, CK, L)
    w = weight.reshape(groups, o // groups, -1)  # (G, O/G, C/G * K)
    out = (w @ cols).reshape((n, o) + counts)  # (G, O/G, CK) @ (N, G, CK, L) -> (N, G, O/G, L)
    if bias is not None:
        out = out + bias.reshape((o,) + (1,) * len(counts))
    return out


@primitive("conv", saves="all", saves_extra=True, composite=_conv_composite)
def _conv(xp, x, weight, bias, stride, padding, dilation, groups):
    n, o = x.shape[0], weight.shape[0]
    kernel = weight.shape[2:]
    # The columns are kept for the weight gradient: the copy is made once per step.
    cols = _im2col_array(xp, x, kernel, dilation, padding, stride)  # (N, C * K, L)
    counts = window_counts(x.shape[2:], kernel, dilation, padding, stride, "conv")
    if groups == 1:
        out = xp.matmul(weight.reshape(o, -1), cols)  # (O, CK) @ (N, CK, L) -> (N, O, L)
    else:  # (G, O/G, CK/G) @ (N, G, CK/G, L) -> (N, G, O/G, L)
        out = xp.matmul(weight.reshape(groups, o // groups, -1),
                        cols.reshape(n, groups, cols.shape[1] // groups, cols.shape[2]))
    out = out.reshape((n, o) + counts)
    if bias is not None:
        out += bias.reshape((o,) + (1,) * len(counts))
    return out, cols


@_conv.defvjp
def _conv_vjp(ctx, g):
    x, weight, _ = ctx.inputs
    a, xp, cols = ctx.attrs, ctx.backend, ctx.extra
    groups, (n, o) = a["groups"], g.shape[:2]
    g3 = g.data.reshape(n, groups, o // groups, cols.shape[2])  # (N, G, O/G, L)
    gx = gw = gb = None
    if ctx.needs_grad[0]:
        w3 = weight.data.reshape(groups, o // groups, -1)  # (G, O/G, CK/G)
        gcols = xp.matmul(w3.swapaxes(-1, -2), g3)  # (G, CK, O/G) @ (N, G, O/G, L) -> (N, G, CK, L)
        gx = from_array(_col2im_array(xp, gcols.reshape(cols.shape), x.shape[2:],
                                            weight.shape[2:], a["dilation"], a["padding"],
                                            a["stride"]), xp)
    if ctx.needs_grad[1]:
        cols_t = cols.reshape(n, groups, cols.shape[1] // groups, cols.shape[2]).swapaxes(
            -1, -2)  # (N, G, L, CK)
        gw = xp.matmul(g3, cols_t).sum(axis=0)  # (N, G, O/G, L) @ (N, G, L, CK), summed over N
        gw = from_array(gw.reshape(weight.shape), xp)
    if ctx.needs_grad[2]:
        gb = from_array(g3.sum(axis=(0, 3)).reshape(o), xp)
    return gx, gw, gb


def _operands(input, weight, bias, spatial, op):
    """Batched (x, weight, bias) of one float dtype, and whether the input was unbatched."""
    require_float(input, op)
    if weight.ndim != spatial + 2:
        raise ValueError(f"{op}: expected a weight with {spatial + 2} dimensions, got shape "
                         f"{weight.shape}")
    if input.ndim not in (spatial + 1, spatial + 2):
        raise ValueError(f"{op}: expected a batched ({spatial + 2}-D) or unbatched "
                         f"({spatial + 1}-D) input, got shape {input.shape}")
    unbatched = input.ndim == spatial + 1
    x = input.unsqueeze(0) if unbatched else input
    if x.dtype != weight.dtype:
        x, weight = promote(x, weight)
    if bias is not None and bias.dtype != weight.dtype:
        bias = bias.to(weight.dtype)
    return x, weight, bias, unbatched


def _conv_nd(input, weight, bias, stride, padding, dilation, groups, spatial, op):
    x, weight, bias, unbatched = _operands(input, weight, bias, spatial, op)
    stride, dilation = ntuple(stride, spatial, "stride", op), ntuple(dilation, spatial,
                                                                     "dilation", op)
    kernel, o, c = weight.shape[2:], weight.shape[0], x.shape[1]
    if groups < 1 or c % groups or o % groups or weight.shape[1] * groups != c:
        raise ValueError(f"{op}: input with {c} channels and weight of shape {weight.shape} do "
                         f"not fit groups={groups} (expected weight (out_channels, "
                         f"in_channels / groups, *kernel) with both channel counts divisible "
                         f"by groups)")
    if bias is not None and bias.shape != (o,):
        raise ValueError(f"{op}: bias must have shape ({o},), got {bias.shape}")
    if padding == "valid":
        pads = ((0, 0),) * spatial
    elif padding == "same":
        if any(s != 1 for s in stride):
            raise ValueError(f"{op}: padding='same' needs stride 1, got stride {stride}")
        # PyTorch puts the odd extra element of an even kernel's padding after.
        totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
        pads = tuple((t // 2, t - t // 2) for t in totals)
    elif isinstance(padding, str):
        raise ValueError(f"{op}: padding must be 'valid', 'same', an int or {spatial} ints, got "
                         f"{padding!r}")
    else:
        pads = tuple((p, p) for p in ntuple(padding, spatial, "padding", op))
    out = _conv(x, weight, bias, stride=stride, padding=pads, dilation=dilation, groups=groups)
    return out.squeeze(0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation, as PyTorch). input (N, C_in, L) or (C_in, L);
    weight (C_out, C_in / groups, k); bias (C_out,); padding an int, 'valid' or 'same'.
    Returns (N, C_out, L_out)."""
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution. input (N, C_in, H, W) or (C_in, H, W); weight (C_out, C_in / groups,
    kh, kw); bias (C_out,); stride/padding/dilation an int or a pair, padding also 'valid' or
    'same'. Returns (N, C_out, H_out, W_out)."""
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution: conv2d's arguments with one more spatial dimension."""
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


# --- transposed convolution: the input gradient of a convolution, as an op of its own -------------
def _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups, dilation,
                       spatial, op):
    x, weight, bias, unbatched = _operands(input, weight, bias, spatial, op)
    stride, dilation = ntuple(stride, spatial, "stride", op), ntuple(dilation, spatial,
                                                                     "dilation", op)
    pads = ntuple(padding, spatial, "padding", op)
    extra = ntuple(output_padding, spatial, "output_padding", op)
    kernel, c = weight.shape[2:], x.shape[1]
    if groups < 1 or c % groups or weight.shape[0] != c:
        raise ValueError(f"{op}: input with {c} channels needs a weight of shape (in_channels, "
                         f"out_channels / groups, *kernel) with in_channels = {c} divisible by "
                         f"groups={groups}, got {weight.shape}")
    for e, s, d in zip(extra, stride, dilation):
        if e < 0 or e >= max(s, d):
            raise ValueError(f"{op}: output_padding {extra} must be smaller than stride {stride} "
                             f"or dilation {dilation}")
    o = weight.shape[1] * groups
    if bias is not None and bias.shape != (o,):
        raise ValueError(f"{op}: bias must have shape ({o},), got {bias.shape}")
    n, sizes = x.shape[0], x.shape[2:]
    size = tuple((s - 1) * t - 2 * p + d * (k - 1) + e + 1
                 for s, t, p, d, k, e in zip(sizes, stride, pads, dilation, kernel, extra))
    if min(size) < 1:
        raise ValueError(f"{op}: the output size {size} is not positive (input {x.shape}, "
                         f"kernel {kernel}, stride {stride}, padding {pads})")
    w = weight.reshape(groups, c // groups, -1).mT  # (G, O/G * K, C/G)
    blocks = math.prod(sizes)
    cols = w @ x.reshape(n, groups, c // groups, blocks)  # (G, OK, C/G) @ (N, G, C/G, L)
    # output_padding positions lie past the last window: a negative `after` width.
    out = _col2im(cols.reshape(n, o * math.prod(kernel), blocks), size=size, kernel=kernel,
                  dilation=dilation, padding=tuple((p, p - e) for p, e in zip(pads, extra)),
                  stride=stride)
    if bias is not None:
        out = out + bias.reshape((o,) + (1,) * spatial)
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """1-D transposed convolution (conv1d's input gradient). input (N, C_in, L) or (C_in, L);
    weight (C_in, C_out / groups, k). Returns (N, C_out, L_out) with
    L_out = (L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1."""
    return _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups,
                              dilation, 1, "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-D transposed convolution. input (N, C_in, H, W) or (C_in, H, W); weight
    (C_in, C_out / groups, kh, kw). Returns (N, C_out, H_out, W_out), each size as in
    conv_transpose1d."""
    return _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups,
                              dilation, 2, "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-D transposed convolution: conv_transpose2d's arguments with one more spatial
    dimension."""
    return _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups,
                              dilation, 3, "conv_transpose3d")
