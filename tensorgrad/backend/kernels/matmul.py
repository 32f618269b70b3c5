"""The CPU backend's large 2-D products called from compiled code, its Linear forward (backend
`linear`: one row, or the bias and MKL's GEMM in one call), and compiled twins of the two
passes around ops/matmul.py's linear GEMMs: the bias added to every row of the output, and the
bias gradient, the column sums of the output's gradient. Both split their rows over the
threads, where NumPy's add and the BLAS's matrix-vector product run on one (gpt_step and
mlp_step at two threads)."""
import numpy
from numba import prange

from .. import aligned, mkl_blas, threads
from ..overrides import override
from . import blas
from .jit import jit, new_array, rows_of, threaded
from .supports import floats_over_grain

_NO_TRANS, _TRANS = 111, 112  # CBLAS's enum values


@jit
def _gemm_call(gemm, trans_a, trans_b, m, n, k, a, lda, b, ldb, out):
    blas.gemm(gemm, trans_a, trans_b, m, n, k, 1.0, a, lda, b, ldb, 0.0, out, n)


def gemm(a, b):
    """a @ b for 2-D arrays, as mkl_blas.matmul computes it (the same MKL routine and arguments)
    but called from compiled code, without ctypes' conversion of 14 arguments and
    three array addresses at every call (benchmarks/: generate_nocache, mlp_step); None where
    MKL does not take it (the backend then runs NumPy's)."""
    planned = mkl_blas.gemm_2d(a, b)
    if planned is None:
        return None
    # Each array goes in for its address only, as a C-contiguous array (a column-major one as
    # its transpose, which starts at the same address): one compiled variant per dtype. Rows
    # further apart than their length (a slice) take the ctypes call.
    a_in, b_in = _c_contiguous(a), _c_contiguous(b)
    if a_in is None or b_in is None:
        return mkl_blas.matmul(a, b)
    address, trans_a, lda, trans_b, ldb = planned
    (m, k), n = a.shape, b.shape[1]
    out = aligned.product_out(m, n, k, a.dtype)
    _gemm_call(address, trans_a, trans_b, m, n, k, a_in, lda, b_in, ldb, out)
    return out


def _c_contiguous(a):
    """a, or its transpose, as a C-contiguous array; None when neither is."""
    if a.flags.c_contiguous:
        return a
    return a.T if a.flags.f_contiguous else None


@jit
def _one_row_linear(x, weight, bias, out):
    # four of weight's rows at a time, so that each element of x is read once for four sums
    n, k = weight.shape
    zero = x.dtype.type(0)
    j = 0
    while j < n:
        if j + 4 <= n:
            s0 = s1 = s2 = s3 = zero
            for i in range(k):
                xi = x[0, i]
                s0 += xi * weight[j, i]
                s1 += xi * weight[j + 1, i]
                s2 += xi * weight[j + 2, i]
                s3 += xi * weight[j + 3, i]
            out[0, j], out[0, j + 1], out[0, j + 2], out[0, j + 3] = s0, s1, s2, s3
            j += 4
        else:
            s0 = zero
            for i in range(k):
                s0 += x[0, i] * weight[j, i]
            out[0, j] = s0
            j += 1
    if bias is not None:
        for j in range(n):
            out[0, j] += bias[j]


@jit
def _linear_rows(gemm, x, weight, bias, out):
    # out starts as the bias in every row and the GEMM adds x weight^T to it (beta = 1), as
    # PyTorch's addmm does: no pass over the output of its own for the bias
    m, k = x.shape
    n = weight.shape[0]
    for r in range(m):
        for j in range(n):
            out[r, j] = bias[j]
    blas.gemm(gemm, _NO_TRANS, _TRANS, m, n, k, 1.0, x, k, weight, k, 1.0, out, n)


def linear(x, weight, bias):
    """x @ weight.T + bias (bias may be None) for a 2-D x (N, in) and a weight (out, in) of x's
    float dtype, or None: the backend's matmul then chooses the product's path, and the bias
    loop follows.

    One row, with a row-major weight: compiled dot products, the bias added in the same call,
    where the BLAS's matrix-vector product and a second pass for the bias were the slower
    (decoding a token: generate_user). More rows, row-major, with a bias, where MKL takes the
    product (mkl_blas.linear_address): the bias and MKL's GEMM in one compiled call
    (generate_nocache at two threads)."""
    if x.shape[0] == 1:
        if not (x.flags.c_contiguous and weight.flags.c_contiguous):
            return None
        out = numpy.empty((1, weight.shape[0]), x.dtype)
        _one_row_linear(x, weight, bias, out)
        return out
    if bias is None or not bias.flags.c_contiguous:
        return None
    address = mkl_blas.linear_address(x, weight)
    if address is None:
        return None
    # made here: a compiled function returning an array it made loads far slower from the
    # cache at a process's first call (cold_start)
    out = aligned.product_out(x.shape[0], weight.shape[0], x.shape[1], x.dtype)
    _linear_rows(address, x, weight, bias, out)
    return out


@threaded
def _add_to_rows_loop(out, bias):
    for r in prange(out.shape[0]):
        for j in range(out.shape[1]):
            out[r, j] += bias[j]


def add_to_rows_(out, bias):
    """out += bias, in place, for a C-contiguous (N, C) out and a (C,) bias of its dtype. At
    every size: NumPy's broadcast add is the slower from one row to thousands (benchmarks/:
    generate_nocache, generate_user)."""
    _add_to_rows_loop(out, bias)
    return out


@threaded
def _column_sums_loop(g, sums):
    rows, parts = g.shape[0], sums.shape[0]
    for part in prange(parts):
        # the part's sums apart from the shared array, written once: threads writing it contend
        total = new_array((g.shape[1],), g)
        for j in range(g.shape[1]):
            total[j] = 0.0
        for r in range(part * rows // parts, (part + 1) * rows // parts):
            for j in range(g.shape[1]):
                total[j] += g[r, j]
        for j in range(g.shape[1]):
            sums[part, j] = total[j]


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
