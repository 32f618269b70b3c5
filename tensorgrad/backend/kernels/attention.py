"""Compiled twins of the row softmax inside tensorgrad/ops/attention.py (the whole-matrix path),
of the tiled path's online-softmax steps and of the softmax part of its VJP (benchmarks/:
attention, gpt_step)."""
import math

import numpy
from numba import prange

from ..overrides import override
from .exp import exp_nonpositive
from .jit import flat, jit, rows_of, threaded
from .supports import floats


# --- the whole-matrix path's row softmax --------------------------------------------------------
# Over the (..., Tq, Tk) scores of the whole-matrix attention path, one row at a time while it is
# in L1: its max (over the keys a causal query may see), exp of the shifted scores and their sum,
# then the division; the hidden keys get 0. The array code (mask, max, subtract, exp, sum, scale)
# makes six passes over memory; this makes one (gpt_step).
@threaded
def _softmax_loop(s, queries, causal, lowest, scale):
    rows, cols = s.shape
    for r in prange(rows):
        _softmax_row(s[r], min(cols, r % queries + 1) if causal else cols, lowest, scale)


@jit
def _softmax_row(row, stop, lowest, scale):
    """One row of _softmax_loop, seeing keys j < stop (query i sees keys j <= i)."""
    top = _row_max(row, stop)
    if top == lowest:  # every key removed by a mask: the row attends to nothing
        row[:] = 0.0
        return
    # summed in the rows' own type (this float32 zero widens when they are float64): a float64
    # sum of float32 values vectorises at half the width
    total = numpy.float32(0.0)
    for j in range(stop):
        e = exp_nonpositive((row[j] - top) * scale)
        row[j] = e
        total += e
    inv = numpy.float32(1.0) / total
    for j in range(stop):
        row[j] *= inv
    for j in range(stop, row.size):
        row[j] = 0.0


@jit
def _row_max(row, stop):
    """max(row[:stop]) for stop >= 1. The compiler does not vectorise a running max, and one
    running max is a chain of dependent comparisons; here each step folds eight values as a tree
    first (attention T=4096). A NaN
    may be skipped here, but the exp of the row passes it on."""
    top = row[0]
    whole = stop - stop % 8
    for j in range(0, whole, 8):
        top = _larger(top, _larger(_larger(_larger(row[j], row[j + 1]),
                                           _larger(row[j + 2], row[j + 3])),
                                   _larger(_larger(row[j + 4], row[j + 5]),
                                           _larger(row[j + 6], row[j + 7]))))
    for j in range(whole, stop):
        top = _larger(top, row[j])
    return top


@jit
def _larger(a, b):
    return a if a > b else b


def softmax_rows(scores, causal, masked=False, scale=1.0):
    """Row softmax of attention scores (..., Tq, Tk) times `scale`, in place when they are
    C-contiguous; causal: query i sees keys j <= i (top-left, as is_causal), the others get
    probability 0. masked: a mask set removed scores to the dtype's lowest value, and a row
    with nothing else becomes 0 (ops/attention.py's rule for fully masked rows). A positive
    scale comes in with the exp, where a separate multiply would cost a pass and a NumPy call
    (generate)."""
    queries, keys = scores.shape[-2:]
    rows = rows_of(scores, keys)
    if rows.size:
        if not scale > 0:  # then the max of the scaled scores is not the scaled max
            rows *= scale
            scale = 1.0
        # a lowest no score equals when nothing was masked (not even -inf, from inf inputs)
        lowest = numpy.finfo(scores.dtype).min if masked else numpy.nan
        _softmax_loop(rows, queries, causal, scores.dtype.type(lowest), scores.dtype.type(scale))
    return rows.reshape(scores.shape)


# --- one query against every cached key (decoding) -----------------------------------------
# The scores, their softmax and the weighted sum of the values for each matrix's single query in
# one pass over its keys and values, where the array code makes two batched matrix-vector
# products (NumPy's loop over the matrices) and a softmax call (generate_user, 4 calls a token).
@threaded
def _one_query_loop(k, q, v, scale, out, p):
    for h in prange(k.shape[0]):
        # a cache's view is row-major matrix by matrix: typed so here (a view, not a copy), the
        # loops over a key's or value's elements vectorise
        keys, values, query, acc, row = (numpy.ascontiguousarray(k[h]),
                                         numpy.ascontiguousarray(v[h]), q[h], out[h], p[h])
        for j in range(keys.shape[0]):
            s = numpy.float32(0.0)  # widens to the inputs' type, as in _softmax_loop
            for e in range(query.size):
                s += query[e] * keys[j, e]
            row[j] = s
        _softmax_row(row, row.size, numpy.nan, scale)  # nan: no key was masked
        acc[:] = 0.0
        for j in range(values.shape[0]):
            weight = row[j]
            for e in range(acc.size):
                acc[e] += weight * values[j, e]


def one_query(q, k, v, scale):
    """(out, p) of attention for one query per matrix, q (..., 1, E), over every key of k
    (..., Tk, E) and v (..., Tk, Ev), the leading dims equal: out (..., 1, Ev) and the
    probabilities p (..., 1, Tk). k and v are read in place (a cache's views)."""
    lead, keys = q.shape[:-2], k.shape[-2]
    out = numpy.empty(lead + (1, v.shape[-1]), q.dtype)
    p = numpy.empty(lead + (1, keys), q.dtype)
    # q made row-major (a few values) so that only k and v's layouts pick a compiled variant
    _one_query_loop(k.reshape((-1,) + k.shape[-2:]), rows_of(q, q.shape[-1]),
                    v.reshape((-1,) + v.shape[-2:]), q.dtype.type(scale),
                    out.reshape(-1, v.shape[-1]), p.reshape(-1, keys))
    return out, p


def _one_query_supported(q, k, v, scale):
    return (q.shape[:-2] == k.shape[:-2] == v.shape[:-2] and k.shape[-2] > 0 and scale > 0
            and q.dtype == k.dtype == v.dtype and floats(q, k, v))


override("attention.one_query", supports=_one_query_supported)(one_query)


@jit
def _row_dots_loop(g, o, delta):
    """delta[r] = rowsum(g[r] * o[r]) for 2-D g and o: FlashAttention's delta, rowsum(dO * O),
    for the compiled loops' VJPs (tiled_attention.py, whole_attention.py)."""
    for r in range(g.shape[0]):
        d = numpy.float32(0.0)  # widens to the rows' type, as in _softmax_loop
        for j in range(g.shape[1]):
            d += g[r, j] * o[r, j]
        delta[r] = d


@threaded
def _softmax_backward_loop(ds, p, delta, scale):
    rows, cols = ds.shape
    for r in prange(rows):
        d = delta[r]
        for j in range(cols):
            ds[r, j] = p[r, j] * (ds[r, j] - d) * scale


def softmax_rows_backward(dp, p, delta, scale=1.0):
    """dS = P * (dP - delta), times `scale`, for dp and p of one shape (..., Tq, Tk) and delta
    (..., Tq, 1): the softmax part of attention's VJP in one pass, in place over dp when it is
    C-contiguous. The scale is the scores' (dQ and dK are products with dS * scale): applied
    here, it costs no pass of its own (gpt_step)."""
    keys = dp.shape[-1]
    rows = rows_of(dp, keys)
    _softmax_backward_loop(rows, rows_of(p, keys), flat(delta), dp.dtype.type(scale))
    return rows.reshape(dp.shape)


# --- the tiled path's causal mask and row shift ------------------------------------------
@jit
def _hide_future_loop(s, queries, offset, lowest):
    rows, cols = s.shape
    for r in range(rows):
        for j in range(max(0, r % queries + offset + 1), cols):
            s[r, j] = lowest


def hide_future_(scores, offset, lowest):
    """Under is_causal, set the scores (..., Tq, Tk) of keys after their query to `lowest`, in
    place; C-contiguous scores, whose query i is key i + offset. Building the comparison array
    and copying through it is slower (attention T=4096)."""
    _hide_future_loop(scores.reshape(-1, scores.shape[-1]), scores.shape[-2], offset, lowest)
    return scores


@jit
def _online_step_loop(s, top, acc, total):
    for r in range(s.shape[0]):
        row = s[r]
        m = max(top[r, 0], _row_max(row, row.size))
        if m > top[r, 0]:  # what earlier blocks added up was relative to the old max
            # one value a row: the C library's exp (a second inlined copy of the vectorised
            # one in this loop makes Numba warn about its own SSA form)
            shrink = math.exp(top[r, 0] - m)
            for j in range(acc.shape[1]):
                acc[r, j] *= shrink
            total[r, 0] *= shrink
            top[r, 0] = m
        added = numpy.float32(0.0)  # in the rows' own type, as in _softmax_loop
        for j in range(row.size):
            e = exp_nonpositive(row[j] - m)
            row[j] = e
            added += e
        total[r, 0] += added


def online_step_(scores, top, acc, total):
    """One step of the online softmax over a (rows, keys) block of scores, all in place: each
    row's running max `top` (rows, 1) is raised to cover the block, what the earlier blocks
    summed, `acc` (rows, Ev) and `total` (rows, 1), is rescaled to the new max, the block
    becomes exp(scores - max) and its row sums are added to `total`. The array code takes ten
    calls and as many passes; this is one pass, and one call holding Python's lock instead of
    ten (attention T=4096, 1 and 2 threads)."""
    _online_step_loop(scores, top, acc, total)


@jit
def _exp_shifted_loop(s, shift):
    for r in range(s.shape[0]):
        m = shift[r, 0]
        for j in range(s.shape[1]):
            s[r, j] = exp_nonpositive(s[r, j] - m)


def exp_shifted_(scores, shift):
    """scores (rows, keys) = exp(scores - shift), shift (rows, 1), in place: the VJP rebuilding
    a block of probabilities from the rows' log-sum-exps, in one pass where NumPy takes two
    (attention T=4096)."""
    _exp_shifted_loop(scores, shift)
    return scores


def _contiguous_floats(s, *rest, **kwargs):
    return floats(s, *rest) and s.flags.c_contiguous


@override("attention.hide_future_", supports=_contiguous_floats)
def hide_future_block_(s, rows, cols, lowest):
    hide_future_(s, rows.start - cols.start, lowest)
    return s


override("attention.online_step_", supports=floats)(online_step_)
override("attention.exp_shifted_", supports=floats)(exp_shifted_)


@override("attention.softmax_rows_", supports=floats)
def softmax_rows_masked_(s, causal, masked, scale):
    return softmax_rows(s, causal, masked, scale)


def _same_shapes_no_dropout(dp, p, delta, dropout, scale):
    return dropout is None and dp.shape == p.shape and floats(dp, p, delta)


@override("attention.softmax_backward_", supports=_same_shapes_no_dropout)
def softmax_backward_(dp, p, delta, dropout, scale):
    return softmax_rows_backward(dp, p, delta, scale)
