"""Compiled twins of the passes tensorgrad/ops/loss.py's cross_entropy makes over its (N, C)
logits: each row's max and sum of exponentials in the forward, the scaled softmax its VJP starts
from (benchmarks/: gpt_step, 2,048 rows of 256; bert_step's MLM head, 2,048 of 4,096). The array
code makes four passes and three temporaries for each; these make one, with the rows split over
the threads."""
import numpy
from numba import prange

from .attention import _row_max
from .exp import exp_nonpositive
from ..overrides import override
from .jit import rows_of, threaded
from .supports import floats


@threaded
def _max_and_sum_loop(x, top, total):
    for r in prange(x.shape[0]):
        row = x[r]
        m = _row_max(row, row.size)
        s = numpy.float32(0.0)  # in the rows' own type (widens for float64), as the array sum
        for j in range(row.size):
            s += exp_nonpositive(row[j] - m)
        top[r, 0] = m
        total[r, 0] = s


def max_and_sum_exp(logits):
    """(top, total), each (N, 1): the rows' max and sum of exp(logits - max), for (N, C) logits
    with C >= 1 (NaN and inf give NaN sums, as in the array code)."""
    rows = rows_of(logits, logits.shape[1])
    top = numpy.empty((rows.shape[0], 1), logits.dtype)
    total = numpy.empty_like(top)
    _max_and_sum_loop(rows, top, total)
    return top, total


@threaded
def _scaled_softmax_loop(x, top, total, scale, out):
    for r in prange(x.shape[0]):
        m, t, c = top[r, 0], total[r, 0], scale[r]
        for j in range(x.shape[1]):
            out[r, j] = exp_nonpositive(x[r, j] - m) / t * c  # p, then times the row's factor


def scaled_softmax(logits, top, total, scale):
    """softmax(logits) * scale[:, None] from the forward's (top, total), for (N, C) logits and a
    factor (N,) per row: a new array, in the logits' dtype."""
    rows = rows_of(logits, logits.shape[1])
    out = numpy.empty_like(rows)
    _scaled_softmax_loop(rows, top, total, scale.astype(logits.dtype, copy=False), out)
    return out


def _rows(logits, *rest):
    return logits.size > 0 and floats(logits)


override("cross_entropy.max_and_sum_exp", supports=_rows)(max_and_sum_exp)
override("cross_entropy.scaled_softmax", supports=_rows)(scaled_softmax)
