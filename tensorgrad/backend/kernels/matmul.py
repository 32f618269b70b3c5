"""Compiled twins of the two passes around tensorgrad/ops/matmul.py's linear GEMMs: the bias
added to every row of the output, and the bias gradient, the column sums of the output's
gradient. Both split their rows over the threads, where NumPy's add and the BLAS's
matrix-vector product run on one (gpt_step and mlp_step at two threads)."""
import numpy
from numba import prange

from .. import threads
from ..overrides import override
from .jit import rows_of, threaded
from .supports import floats_over_grain


@threaded
def _add_to_rows_loop(out, bias):
    for r in prange(out.shape[0]):
        for j in range(out.shape[1]):
            out[r, j] += bias[j]


@override("linear.add_to_rows_", supports=floats_over_grain)
def add_to_rows_(out, bias):
    """out += bias, in place, for a C-contiguous (N, C) out and a (C,) bias of its dtype."""
    _add_to_rows_loop(out, bias)
    return out


@threaded
def _column_sums_loop(g, sums):
    rows, parts = g.shape[0], sums.shape[0]
    for part in prange(parts):
        # the part's sums apart from the shared array, written once: threads writing it contend
        total = numpy.zeros(g.shape[1], g.dtype)
        for r in range(part * rows // parts, (part + 1) * rows // parts):
            for j in range(g.shape[1]):
                total[j] += g[r, j]
        sums[part] = total


def column_sums(g):
    """g.sum(0) for a 2-D float array: each part of the rows summed by one thread, in g's dtype
    (as the BLAS's ones @ g summed them), the parts added at the end. None on one thread, where
    the BLAS's matrix-vector product is the faster (gpt_step)."""
    parts = min(threads.get_num_threads(), g.shape[0])
    if parts < 2:
        return None
    rows = rows_of(g, g.shape[1])
    sums = numpy.empty((parts, rows.shape[1]), g.dtype)
    _column_sums_loop(rows, sums)
    return sums.sum(0)


@override("linear.column_sums", supports=floats_over_grain)
def column_sums_or_decline(g):
    """column_sums, or NotImplemented on one thread (the reference's BLAS product then runs)."""
    sums = column_sums(g)
    return NotImplemented if sums is None else sums
