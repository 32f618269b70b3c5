"""The tiled attention path's block loops (tensorgrad/ops/attention.py `_tiled` and `_tiled_vjp`)
compiled whole, over a batch of (T, E) matrices with nothing masked but is_causal.

Why: the array code makes 7 to 12 Python calls per block of scores, and each block product is a
ctypes call into MKL (argument conversion, array addresses), all of it holding Python's lock.
Here the same loop runs compiled and without the lock: its products are the same MKL calls made
from compiled code, between the same online-softmax kernels (attention.py), so the results match
the array code's (tests/tensorgrad/test_attention_loops.py; benchmarks/: attention T=4096, 1 and
2 threads).

The loop over the batch's matrices is a prange (`@threaded`): they split over the OpenMP threads
that run MKL and the other kernels, as the whole-matrix path's do (whole_attention.py). The array
code hands them to tensorgrad's own pool of Python threads (threads.map_matrices), which waited
on the OpenMP threads, spinning for a while after each parallel region: at two threads a forward
just past one tile ran slower than on one thread (benchmarks/: generate_nocache).

Both take the address of the BLAS's cblas_?gemm (mkl_blas.gemm_address) and arrays the BLAS reads
in place as row-major matrices (mkl_blas.takes_row_major), with at most three batch dims
(grouped-query attention's); the wrappers say None otherwise and the caller runs the array code.
"""
import math

import numpy
from numba import prange

from .. import mkl_blas
from ..overrides import override
from . import blas
from .attention import (_exp_shifted_loop, _hide_future_loop, _online_step_loop, _row_dots_loop,
                        _softmax_backward_loop)
from .jit import jit, matrix_view, new_array, threaded
from .supports import floats

_softmax_backward = _softmax_backward_loop.serial  # a block's: the threads split the matrices

_NO_TRANS, _TRANS = 111, 112  # CBLAS's enum values


@jit
def _product(gemm, a, transpose_a, b, transpose_b, out, beta):
    """out = A @ B + beta * out through the BLAS's GEMM at address `gemm`, A = a.T if
    transpose_a else a (B likewise): 2-D arrays with unit column strides, read in place."""
    m, n = out.shape
    inner = a.shape[0] if transpose_a else a.shape[1]
    blas.gemm(gemm, _TRANS if transpose_a else _NO_TRANS, _TRANS if transpose_b else _NO_TRANS,
              m, n, inner, 1.0, a, a.strides[0] // a.itemsize, b, b.strides[0] // b.itemsize,
              beta, out, out.strides[0] // out.itemsize)


@jit
def _scaled_rows(q, start, stop, scale, into):
    """into[:stop - start] = q[start:stop] * scale: the block's queries, scaled once."""
    rows = into[:stop - start]
    for r in range(stop - start):
        for j in range(q.shape[1]):
            rows[r, j] = q[start + r, j] * scale
    return rows


@jit
def _scores(gemm, q_rows, k, start, stop, first, causal, buffer, lowest):
    """The (r, c) block of scores q_rows k[first:stop]^T in the start of `buffer`, the keys after
    each query (query start + i is key start + i) set to `lowest` under is_causal."""
    rows, cols = q_rows.shape[0], stop - first
    s = matrix_view(buffer, rows, cols)
    _product(gemm, q_rows, False, k[first:stop], True, s, 0.0)
    if causal and start + 1 - first < cols:  # only a diagonal block has a future
        _hide_future_loop(s, rows, start - first, lowest)
    return s


@jit
def _forward_loop(gemm, q, k, v, causal, scale, out, lse, tile, key_tile, lowest):
    tq, tk, ev = q.shape[0], k.shape[0], v.shape[1]
    q_buffer = new_array((tile, q.shape[1]), q.dtype)
    buffer = new_array((tile * key_tile,), q.dtype)
    top = new_array((tile, 1), q.dtype)  # the rows' running max
    acc = new_array((tile, ev), q.dtype)  # P V so far
    total = new_array((tile, 1), q.dtype)  # rowsum P so far
    for start in range(0, tq, tile):
        stop = min(start + tile, tq)
        q_rows = _scaled_rows(q, start, stop, scale, q_buffer)
        rows = stop - start
        top_r, acc_r, total_r = top[:rows], acc[:rows], total[:rows]
        top_r[:] = lowest
        acc_r[:] = 0.0
        total_r[:] = 0.0
        visible = min(tk, stop) if causal else tk
        for first in range(0, visible, key_tile):
            last = min(first + key_tile, visible)
            s = _scores(gemm, q_rows, k, start, last, first, causal, buffer, lowest)
            _online_step_loop(s, top_r, acc_r, total_r)
            _product(gemm, s, False, v[first:last], False, acc_r, 1.0)  # += (r, c) @ (c, Ev)
        for r in range(rows):
            # nothing visible: the row outputs 0 times what it summed (a NaN passes, as in the
            # array code)
            dead = top_r[r, 0] == lowest
            inv = (0.0 if dead else 1.0) / total_r[r, 0]
            for j in range(ev):
                out[start + r, j] = acc_r[r, j] * inv
            lse[start + r, 0] = math.inf if dead else top_r[r, 0] + math.log(total_r[r, 0])


@jit
def _backward_loop(gemm, q, k, v, g, o, lse, causal, scale, dq, dk, dv, tile, key_tile, lowest):
    tq, tk = q.shape[0], k.shape[0]
    q_buffer = new_array((tile, q.shape[1]), q.dtype)
    p_buffer = new_array((tile * key_tile,), q.dtype)
    ds_buffer = new_array((tile * key_tile,), q.dtype)
    delta = new_array((tile,), q.dtype)
    one = numpy.float32(1.0)  # dS unscaled (widens with float64): its products take scaled Q
    for start in range(0, tq, tile):
        stop = min(start + tile, tq)
        q_rows = _scaled_rows(q, start, stop, scale, q_buffer)  # dQ is scaled once, by the caller
        g_rows = g[start:stop]
        _row_dots_loop(g_rows, o[start:stop], delta)
        visible = min(tk, stop) if causal else tk
        for first in range(0, visible, key_tile):
            last = min(first + key_tile, visible)
            p = _scores(gemm, q_rows, k, start, last, first, causal, p_buffer, lowest)
            _exp_shifted_loop(p, lse[start:stop])
            if dv.size:
                _product(gemm, p, True, g_rows, False, dv[first:last], 1.0)  # += P^T dO
            if dq.size or dk.size:
                ds = matrix_view(ds_buffer, p.shape[0], p.shape[1])
                _product(gemm, g_rows, False, v[first:last], True, ds, 0.0)  # dO V^T
                _softmax_backward(ds, p, delta, one)
                if dq.size:
                    _product(gemm, ds, False, k[first:last], False, dq[start:stop], 1.0)
                if dk.size:
                    _product(gemm, ds, True, q_rows, False, dk[first:last], 1.0)  # dS^T (scale Q)


@jit
def _at(index, size):
    """The index into a batch dim of this size: a broadcast (size-1) dim has only 0."""
    return index if size > 1 else 0


@jit
def _matrix(a, i, j, m):
    """Matrix (i, j, m) of a (B, H, G, T, E) array whose batch dims may be broadcast (size 1)."""
    return a[_at(i, a.shape[0]), _at(j, a.shape[1]), _at(m, a.shape[2])]


@threaded
def _forward_matrices(gemm, q, k, v, out, lse, causal, scale, tile, key_tile, lowest):
    heads, groups = out.shape[1], out.shape[2]
    for n in prange(out.shape[0] * heads * groups):
        i, j, m = n // (heads * groups), n // groups % heads, n % groups
        _forward_loop(gemm, _matrix(q, i, j, m), _matrix(k, i, j, m), _matrix(v, i, j, m),
                      causal, scale, out[i, j, m], lse[i, j, m], tile, key_tile, lowest)


@threaded
def _backward_matrices(gemm, q, k, v, g, o, lse, causal, scale, dq, dk, dv, tile, key_tile,
                       lowest):
    heads, groups = g.shape[1], g.shape[2]
    for n in prange(g.shape[0] * heads * groups):
        i, j, m = n // (heads * groups), n // groups % heads, n % groups
        _backward_loop(gemm, _matrix(q, i, j, m), _matrix(k, i, j, m), _matrix(v, i, j, m),
                       g[i, j, m], o[i, j, m], lse[i, j, m], causal, scale, _matrix(dq, i, j, m),
                       _matrix(dk, i, j, m), _matrix(dv, i, j, m), tile, key_tile, lowest)


def tiled_forward(q, k, v, causal, scale, tile, key_tile):
    """(out, lse), the tiled forward of q (..., Tq, E), k (..., Tk, E) and v (..., Tk, Ev),
    whose batch dims (at most three: grouped-query attention's (B, H_kv, G)) broadcast against
    each other: the output (..., Tq, Ev) and the rows' log-sum-exps (..., Tq, 1). None when the
    BLAS, the layouts or more batch dims rule it out."""
    batch = numpy.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    gemm = mkl_blas.gemm_address(q.dtype)
    if gemm is None or len(batch) > 3 or not all(map(mkl_blas.takes_row_major, (q, k, v))):
        return None
    out = numpy.empty(batch + (q.shape[-2], v.shape[-1]), q.dtype)
    lse = numpy.empty(batch + (q.shape[-2], 1), q.dtype)
    _forward_matrices(gemm, *_five_dims(q, k, v, out, lse), causal, q.dtype.type(scale), tile,
                      key_tile, numpy.finfo(q.dtype).min, work=_work(batch, q, k))
    return out, lse


def tiled_backward(q, k, v, g, o, lse, causal, scale, needs_q, needs_k, needs_v, tile,
                   key_tile):
    """(dq, dk, dv), the tiled VJP from dO g and the forward's output o and lse, for inputs as
    tiled_forward takes them (None where a gradient is not wanted), each with the whole batch's
    dims, as the array code gives them; None when the BLAS, the layouts or more batch dims rule
    it out."""
    batch = g.shape[:-2]
    gemm = mkl_blas.gemm_address(q.dtype)
    if gemm is None or len(batch) > 3 or not all(map(mkl_blas.takes_row_major,
                                                     (q, k, v, g, o, lse))):
        return None
    grads = [numpy.zeros(batch + x.shape[-2:], x.dtype) if needed else None
             for x, needed in ((q, needs_q), (k, needs_k), (v, needs_v))]
    none = numpy.empty((1, 1, 1, 0, 1), q.dtype)  # a gradient not wanted: each matrix's is empty
    dq, dk, dv = (none if d is None else _five_dims(d)[0] for d in grads)
    _backward_matrices(gemm, *_five_dims(q, k, v, g, o, lse), causal, q.dtype.type(scale), dq,
                       dk, dv, tile, key_tile, numpy.finfo(q.dtype).min, work=_work(batch, q, k))
    if grads[0] is not None:
        grads[0] *= q.dtype.type(scale)  # the loop leaves dQ / scale, as the array code's
    return tuple(grads)


def _five_dims(*arrays):
    """(B, H, G, T, E) views of arrays with at most three batch dims: size-1 dims put in front."""
    return tuple(a.reshape((1,) * (5 - a.ndim) + a.shape) for a in arrays)


def _work(batch, q, k):
    """Q K^T's multiply-adds over the batch, which decide whether the threads split it."""
    return math.prod(batch) * q.shape[-2] * k.shape[-2] * q.shape[-1]


def _unmasked(q, k, v, bias, mask, *rest):
    return bias is None and mask is None and floats(q, k, v)


@override("attention.tiled", supports=_unmasked)
def tiled(q, k, v, bias, mask, causal, scale, tile, key_tile):
    return tiled_forward(q, k, v, causal, scale, tile, key_tile) or NotImplemented


def _unmasked_vjp(q, k, v, bias, mask, causal, scale, g, *rest):
    return bias is None and mask is None and floats(q, k, v, g)


@override("attention.tiled_vjp", supports=_unmasked_vjp)
def tiled_vjp(q, k, v, bias, mask, causal, scale, g, out, lse, needs, tile, key_tile):
    grads = tiled_backward(q, k, v, g, out, lse, causal, scale, *needs[:3], tile, key_tile)
    return NotImplemented if grads is None else grads + (None,)
