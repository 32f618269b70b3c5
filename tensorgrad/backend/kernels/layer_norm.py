"""Compiled twins of tensorgrad/ops/layer_norm.py's layer norm and RMS norm, forward and VJP,
over the trailing dims as rows (benchmarks/: gpt_step, and decoding, where each call is one row
and NumPy's per-call cost dominates). The loops compute in float64 and store in the array's
dtype."""
import math

import numpy
from numba import prange

from .. import threads
from ..overrides import override
from .jit import new_array, rows_of, threaded
from .supports import floats


@threaded
def _norm_loop(x, weight, bias, eps, center, y, stats):
    # stats: (2, rows), each row's mean and 1/std (one argument less to unbox per call: in
    # decoding every call is one row, and Numba's dispatch is most of its cost)
    rows, cols = x.shape
    for r in prange(rows):
        mu = 0.0
        if center:
            for j in range(cols):
                mu += x[r, j]
            mu /= cols
        square = 0.0
        for j in range(cols):
            d = x[r, j] - mu
            square += d * d
        inv = 1.0 / math.sqrt(square / cols + eps)
        stats[0, r], stats[1, r] = mu, inv
        for j in range(cols):
            v = (x[r, j] - mu) * inv
            if weight is not None:
                v *= weight[j]
            if bias is not None:
                v += bias[j]
            y[r, j] = v


@threaded
def _norm_backward_loop(x, mean, rstd, weight, g, center, gx, sums):
    # gx = rstd (gxhat - mean(gxhat) - xhat mean(gxhat xhat)), gxhat = g * weight; RMS norm
    # (center False) has no mean(gxhat) term. sums: (parts, 2, cols), float64, each part's sums
    # over its rows of g * xhat (the weight's gradient) and of g (the bias's); the parts run
    # side by side, and the caller adds them up.
    rows, cols = x.shape
    parts = sums.shape[0]
    for part in prange(parts):
        # the part's running sums kept apart from the shared array, written to it once: summed
        # in place there, the loop took as long on two threads as on one (gpt_step)
        weight_sum = new_array((cols,), numpy.float64)
        bias_sum = new_array((cols,), numpy.float64)
        for j in range(cols):
            weight_sum[j] = bias_sum[j] = 0.0
        for r in range(part * rows // parts, (part + 1) * rows // parts):
            mu, inv = mean[r], rstd[r]
            total = 0.0
            dot = 0.0
            for j in range(cols):
                gh = g[r, j] * weight[j] if weight is not None else g[r, j]
                total += gh
                dot += gh * (x[r, j] - mu) * inv
            total = total / cols if center else 0.0
            dot /= cols
            for j in range(cols):
                xh = (x[r, j] - mu) * inv
                gh = g[r, j] * weight[j] if weight is not None else g[r, j]
                gx[r, j] = inv * (gh - total - xh * dot)
                weight_sum[j] += g[r, j] * xh
                bias_sum[j] += g[r, j]
        for j in range(cols):
            sums[part, 0, j], sums[part, 1, j] = weight_sum[j], bias_sum[j]


def norm_rows(x, weight, bias, eps, dims, center):
    """Layer norm (center=True) or RMS norm over the trailing `dims` of x: (y, mean, rstd), the
    statistics shaped as a keepdims reduction over dims (the mean is 0 for RMS norm)."""
    trailing = len(dims)
    if trailing == 1:  # the usual norm, over the last dim: weight and bias are vectors already
        cols = x.shape[-1]
    else:
        cols = math.prod(x.shape[-trailing:])
        weight, bias = _flat_vector(weight), _flat_vector(bias)
    rows = rows_of(x, cols)
    y = numpy.empty_like(rows)
    # mean and rstd, made in their final shape: in decoding every call is one row, and each
    # reshape or view costs as much as the loop over it (generate: 9 calls per token)
    stats = numpy.empty((2,) + x.shape[:-trailing] + (1,) * trailing, x.dtype)
    _norm_loop(rows, weight, bias, float(eps), center, y, stats.reshape(2, -1))
    return y.reshape(x.shape), stats[0], stats[1]


def _flat_vector(a):
    return a if a is None or a.ndim == 1 else a.reshape(-1)


def norm_rows_backward(x, mean, rstd, weight, g, dims, center, needs_weight, needs_bias):
    """(gx, gweight or None, gbias or None) of `norm_rows`; mean may be None for RMS norm."""
    cols = math.prod(x.shape[d] for d in dims)
    rows = rows_of(x, cols)
    if mean is None:
        mean = numpy.zeros(rows.shape[0], x.dtype)
    gx = numpy.empty_like(rows)
    parts = max(1, min(threads.get_num_threads(), rows.shape[0]))
    sums = numpy.empty((parts, 2, cols))
    _norm_backward_loop(rows, mean.reshape(-1), rstd.reshape(-1),
                        None if weight is None else weight.reshape(-1), rows_of(g, cols), center,
                        gx, sums)
    shape = tuple(x.shape[d] for d in dims)
    gweight, gbias = sums.sum(0).astype(x.dtype).reshape((2,) + shape)
    return gx.reshape(x.shape), gweight if needs_weight else None, gbias if needs_bias else None


@override("layer_norm", supports=floats)
def layer_norm(x, weight, bias, dims, eps):
    y, mean, rstd = norm_rows(x, weight, bias, eps, dims, center=True)
    return y, (mean, rstd)


@override("layer_norm.vjp", supports=floats)
def layer_norm_backward(x, mean, rstd, weight, g, dims, needs_weight, needs_bias):
    return norm_rows_backward(x, mean, rstd, weight, g, dims, True, needs_weight, needs_bias)


@override("rms_norm", supports=floats)
def rms_norm(x, weight, dims, eps):
    y, _, rstd = norm_rows(x, weight, None, eps, dims, center=False)
    return y, rstd


@override("rms_norm.vjp", supports=floats)
def rms_norm_backward(x, rstd, weight, g, dims, needs_weight):
    gx, gweight, _ = norm_rows_backward(x, None, rstd, weight, g, dims, False, needs_weight, False)
    return gx, gweight
