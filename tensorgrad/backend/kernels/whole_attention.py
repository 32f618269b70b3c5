"""The whole-matrix attention path (tensorgrad/ops/attention.py `_attention` and `_whole_vjp`)
compiled whole over a batch of (T, E) matrices, for inputs with nothing masked but is_causal.

Why: the array code makes each step once for the whole batch: the scores of all B * H matrices
(gpt_step: 64 of 128 x 128, 4 MiB in float32), then the softmax over all of them, then P V. Each
step reads what the one before wrote after it has left the core's L2. Here one matrix at a time
goes through all the steps while its scores (64 KiB) stay in cache; the products are the same
MKL calls, made from compiled code (as kernels/tiled_attention.py does), between the same
softmax kernels (attention.py), and the loop runs without Python's lock.

The forward keeps P, which the VJP reads (as the array code does); the VJP rebuilds nothing.
Both take 3-D or 4-D q, k and v with the same batch dims (no broadcasting) whose matrices the
BLAS reads in place (mkl_blas.takes_row_major); the wrappers return None otherwise and the
caller runs the array code (tests/tensorgrad/test_attention_loops.py; benchmarks/: gpt_step).
"""
import numpy
from numba import prange

from .. import mkl_blas
from ..overrides import override
from .attention import _row_dots_loop, _softmax_backward_loop, _softmax_loop
from .jit import DTYPES, new_array, threaded
from .supports import floats
from .tiled_attention import _product

# one matrix's softmax and its VJP: the loop over the matrices is what the threads split
_softmax, _softmax_backward = _softmax_loop.serial, _softmax_backward_loop.serial
# no score is "removed" (the softmax kernel's lowest): NaN, which equals nothing; made once per
# dtype (generate_nocache: one attention call per layer and token)
_NO_SCORE_REMOVED = {dtype: dtype.type(numpy.nan) for dtype in DTYPES}


@threaded
def _forward_loop(q, k, v, causal, scale, out, p, unmasked, gemm):
    heads = q.shape[1]
    for m in prange(q.shape[0] * heads):
        b, h = m // heads, m % heads
        s = p[b, h]  # (Tq, Tk): the scores, then the probabilities in their place
        _product(gemm, q[b, h], False, k[b, h], True, s, 0.0)  # Q K^T
        _softmax(s, s.shape[0], causal, unmasked, scale)
        _product(gemm, s, False, v[b, h], False, out[b, h], 0.0)  # P V


@threaded
def _backward_loop(q, k, v, g, o, p, scale, dq, dk, dv, gemm):
    heads = q.shape[1]
    for m in prange(q.shape[0] * heads):
        b, h = m // heads, m % heads
        pi, gi, oi = p[b, h], g[b, h], o[b, h]
        if dv.size:
            _product(gemm, pi, True, gi, False, dv[b, h], 0.0)  # P^T dO
        if dq.size or dk.size:
            delta = new_array((q.shape[2],), q)
            ds = new_array(pi.shape, q)
            _row_dots_loop(gi, oi, delta)
            _product(gemm, gi, False, v[b, h], True, ds, 0.0)  # dO V^T
            _softmax_backward(ds, pi, delta, scale)  # dS * scale
            if dq.size:
                _product(gemm, ds, False, k[b, h], False, dq[b, h], 0.0)  # dS K
            if dk.size:
                _product(gemm, ds, True, q[b, h], False, dk[b, h], 0.0)  # dS^T Q


def whole_forward(q, k, v, causal, scale):
    """(out, p): softmax(q k^T * scale) v and the probabilities, for q (..., Tq, E), k (..., Tk,
    E), v (..., Tk, Ev) with one batch shape of one or two dims; causal: top-left, as is_causal.
    None when the BLAS, the layouts or a scale <= 0 (the softmax kernel's own case) rule it out."""
    gemm = _gemm_for(q, k, v)
    if gemm is None or not scale > 0:
        return None
    batch, tq, tk = q.shape[:-2], q.shape[-2], k.shape[-2]
    out = numpy.empty(batch + (tq, v.shape[-1]), q.dtype)
    p = numpy.empty(batch + (tq, tk), q.dtype)
    _forward_loop(*_four_dims(q, k, v), causal, q.dtype.type(scale), *_four_dims(out, p),
                  _NO_SCORE_REMOVED[q.dtype], gemm, work=_work(p, q))
    return out, p


def whole_backward(q, k, v, g, o, p, scale, needs_q, needs_k, needs_v):
    """(dq, dk, dv), None where not needed, from dO g and the forward's output o and
    probabilities p (read only); None when the BLAS or the layouts rule it out, as for
    whole_forward."""
    gemm = _gemm_for(q, k, v, g, o, p)
    if gemm is None:
        return None
    none = numpy.empty((0, 0, 0, 0), q.dtype)  # stands for a gradient not wanted (size 0)
    grads = [numpy.empty(x.shape, x.dtype) if needed else None
             for x, needed in ((q, needs_q), (k, needs_k), (v, needs_v))]
    _backward_loop(*_four_dims(q, k, v, g, o, p), q.dtype.type(scale),
                   *(none if d is None else _four_dims(d)[0] for d in grads), gemm,
                   work=_work(p, q))
    return tuple(grads)


def _work(p, q):
    """What decides whether the threads split the matrices: Q K^T's multiply-adds, where q's
    size alone would keep a sequence of a few hundred positions on one thread (generate_nocache
    at two threads)."""
    return p.size * q.shape[-1]


def _gemm_for(q, *arrays):
    """The address of MKL's gemm for these arrays, or None: they need one dtype, q's batch shape
    (one or two dims), aligned memory, and matrices the BLAS reads in place."""
    gemm = mkl_blas.gemm_address(q.dtype)
    if gemm is None or q.ndim not in (3, 4):
        return None
    for a in (q,) + arrays:
        if (a.shape[:-2] != q.shape[:-2] or a.dtype != q.dtype or a.size == 0
                or not mkl_blas.takes_row_major(a)):
            return None
    return gemm


def _four_dims(*arrays):
    """(B, H, T, E) views: a 3-D array gets a leading dim of 1."""
    return tuple(a if a.ndim == 4 else a[None] for a in arrays)


def _unmasked(q, k, v, bias, mask, causal, scale, dropout):
    return bias is None and mask is None and dropout is None and floats(q, k, v)


@override("attention.whole", supports=_unmasked)
def whole(q, k, v, bias, mask, causal, scale, dropout):
    return whole_forward(q, k, v, causal, scale) or NotImplemented


def _no_bias_gradient(q, k, v, dropout, scale, g, out, p, needs):
    return dropout is None and not needs[3] and floats(q, k, v, g)


@override("attention.whole_vjp", supports=_no_bias_gradient)
def whole_vjp(q, k, v, dropout, scale, g, out, p, needs):
    grads = whole_backward(q, k, v, g, out, p, scale, *needs[:3])
    return NotImplemented if grads is None else grads + (None,)
