"""Compiled twins of the row softmax inside tensorgrad/ops/attention.py (the whole-matrix path
with no mask or bias), of the tiled path's row shift and of the softmax part of its VJP
(benchmarks/: attention, gpt_step)."""
import math

import numpy

from .jit import flat, jit


# --- the whole-matrix path's row softmax --------------------------------------------------------
# Over the (..., Tq, Tk) scores of the whole-matrix attention path: one loop takes each row's max
# (over the keys a causal query may see) off the row and sets the hidden keys to -inf, NumPy's
# vectorised exp runs in place, a second loop divides by the row sums: three passes where the
# array code (mask, max, subtract, exp, sum, scale) makes six.
@jit
def _softmax_shift_loop(s, queries, causal, scale):
    rows, cols = s.shape
    for r in range(rows):
        stop = min(cols, r % queries + 1) if causal else cols  # query i sees keys j <= i
        if stop == 0:
            continue
        if scale != 1.0:  # one query's scores (generate); the whole-matrix path passes 1
            for j in range(stop):
                s[r, j] *= scale
        top = s[r, 0]
        for j in range(1, stop):
            if s[r, j] > top:
                top = s[r, j]
        for j in range(stop):
            s[r, j] -= top
        for j in range(stop, cols):
            s[r, j] = -math.inf


@jit
def _softmax_scale_loop(s):
    rows, cols = s.shape
    for r in range(rows):
        total = 0.0
        for j in range(cols):
            total += s[r, j]
        inv = 1.0 / total
        for j in range(cols):
            s[r, j] *= inv


def softmax_rows(scores, causal, scale=1.0):
    """Row softmax of attention scores (..., Tq, Tk) times `scale`, in place when they are
    C-contiguous; causal: query i sees keys j <= i (top-left, as is_causal), the others get
    probability 0. The scale is applied here, before the row max, where a separate multiply
    would cost a NumPy call and a temporary (generate: 1.5 us of a decoding query's ~20)."""
    queries, keys = scores.shape[-2:]
    rows = numpy.ascontiguousarray(scores).reshape(-1, keys)
    if rows.size:
        _softmax_shift_loop(rows, queries, causal, float(scale))
        numpy.exp(rows, out=rows)
        _softmax_scale_loop(rows)
    return rows.reshape(scores.shape)


@jit
def _softmax_backward_loop(ds, p, delta):
    rows, cols = ds.shape
    for r in range(rows):
        d = delta[r]
        for j in range(cols):
            ds[r, j] = p[r, j] * (ds[r, j] - d)


def softmax_rows_backward(dp, p, delta):
    """dS = P * (dP - delta) for dp and p of one shape (..., Tq, Tk) and delta (..., Tq, 1):
    the softmax part of attention's VJP in one pass, in place over dp when it is C-contiguous."""
    keys = dp.shape[-1]
    rows = flat(dp).reshape(-1, keys)
    _softmax_backward_loop(rows, flat(p).reshape(-1, keys), flat(delta))
    return rows.reshape(dp.shape)


# --- the tiled path's causal mask and row shift ------------------------------------------
@jit
def _subtract_rows_loop(s, top):
    rows, cols = s.shape
    for r in range(rows):
        m = top[r, 0]
        for j in range(cols):
            s[r, j] -= m


@jit
def _hide_future_loop(s, queries, offset, lowest):
    rows, cols = s.shape
    for r in range(rows):
        for j in range(max(0, r % queries + offset + 1), cols):
            s[r, j] = lowest


def hide_future_(scores, offset, lowest):
    """Under is_causal, set the scores (..., Tq, Tk) of keys after their query to `lowest`, in
    place; C-contiguous scores, whose query i is key i + offset. Building the comparison array
    and copying through it takes 5x as long (attention T=4096)."""
    _hide_future_loop(scores.reshape(-1, scores.shape[-1]), scores.shape[-2], offset, lowest)
    return scores


def subtract_rows_(scores, top):
    """scores (rows, keys) -= top (rows, 1), in place: a block of scores shifted by its rows'
    running max (forward) or log-sum-exp (backward). NumPy's broadcast subtract takes 2.5x as
    long over a 256 x 1024 block (attention T=4096)."""
    _subtract_rows_loop(scores, top)
    return scores
