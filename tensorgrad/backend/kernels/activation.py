"""Compiled twins of tensorgrad/ops/activation.py's ReLU and GELU (both forms), forward and VJP
(benchmarks/: mlp_step, gpt_step, vit_step, bert_step)."""
import math

import numpy
from numba import prange

from ..overrides import override
from .exp import exp, exp_nonpositive
from .jit import DTYPES, flat, threaded
from .supports import floats

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715


# --- ReLU ------------------------------------------------------------------------------------
# One loop each where NumPy's maximum(x, 0) and g * (x > 0) go through a casting loop (mlp_step).
_ZERO = numpy.float32(0.0)  # a float32 zero keeps float32 loops in float32 (float64 widens it)


@threaded
def _relu_loop(x, y):
    for i in prange(x.size):
        xi = x[i]
        y[i] = _ZERO if xi <= _ZERO else xi  # NaN is not <= 0: it stays NaN, as in torch


@threaded
def _relu_backward_loop(x, g, gx):
    for i in prange(x.size):
        gx[i] = g[i] if x[i] > _ZERO else _ZERO


@override("relu", supports=floats)
def relu(x):
    """max(x, 0), NaN kept."""
    xs = flat(x)
    y = numpy.empty_like(xs)
    _relu_loop(xs, y)
    return y.reshape(x.shape)


@override("relu.vjp", supports=floats)
def relu_backward(x, g):
    """ReLU's input gradient: g where x > 0, else 0."""
    gx = numpy.empty(x.size, g.dtype)
    _relu_backward_loop(flat(x), flat(g), gx)
    return gx.reshape(x.shape)


# --- GELU, tanh form (GPT-2's) ----------------------------------------------------------------
# gelu(x) = x gate / 2 with gate = 1 + tanh(u), u = c (x + 0.044715 x^3). Written as
# gate = 2 / (1 + exp(-2u)) it takes one compiled exp (exp.py, vectorised), so the forward is one
# loop, not three around NumPy's tanh (gpt_step), and the
# gate keeps its relative precision where it is near 0 (large negative x), where 1 + tanh
# cancels. Computed in the array's own type, as the array code is.
_ONE, _TWO, _HALF = numpy.float32(1.0), numpy.float32(2.0), numpy.float32(0.5)


@threaded
def _gelu_tanh_loop(x, gate, y, c, c3):
    for i in prange(x.size):
        xi = x[i]
        u = xi * (c + c3 * xi * xi)
        gi = _TWO / (_ONE + exp(-_TWO * u))
        gate[i] = gi
        y[i] = _HALF * xi * gi


@threaded
def _gelu_backward_loop(x, gate, g, gx, c, c3):
    # d/dx = 0.5 (1 + t) (1 + x (1 - t) u'), t = gate - 1, u' = c + 3 c3 x^2
    for i in prange(x.size):
        xi, gi = x[i], gate[i]
        gx[i] = 0.5 * gi * (1.0 + xi * (2.0 - gi) * (c + 3.0 * c3 * xi * xi)) * g[i]


# u's two constants in each dtype, made once: over a decoded token's one row, making them at
# every call costs about as much as the loop (generate_user)
_TANH_CONSTANTS = {dtype: (dtype.type(_SQRT_2_OVER_PI), dtype.type(_SQRT_2_OVER_PI * _GELU_CUBIC))
                   for dtype in DTYPES}


def gelu_tanh(x):
    """(y, gate) of `ops.activation._gelu` with approximate='tanh'."""
    xs = flat(x)
    y, gate = numpy.empty_like(xs), numpy.empty_like(xs)
    _gelu_tanh_loop(xs, gate, y, *_TANH_CONSTANTS[xs.dtype])
    return y.reshape(x.shape), gate.reshape(x.shape)


def gelu_tanh_backward(x, gate, g):
    """GELU's (tanh form) input gradient from the forward's gate and the output gradient g."""
    xs = flat(x)
    gx = numpy.empty_like(xs)
    _gelu_backward_loop(xs, flat(gate), flat(g), gx, _SQRT_2_OVER_PI,
                        _SQRT_2_OVER_PI * _GELU_CUBIC)
    return gx.reshape(x.shape)


# --- GELU, exact (erf) form (BERT's, ViT's) ------------------------------------------------------
# gelu(x) = x gate / 2 with gate = 1 + erf(x / sqrt 2). A libm erf per element is slow
# (vit_step, bert_step), so in float32 the gate comes from a rational function that vectorises:
# erf(z) ~ z P(z^2) / Q(z^2) on |z| < 3.92 (past it erf is 1 to float32 precision), fitted to
# SciPy's erf by iterated linear least squares (max abs error 2.2e-8, under float32's ulp of 1:
# tests/tensorgrad/test_kernels.py checks it). float64 keeps math.erf, exact to double
# round-off (the gradient checks run in float64).
_ERF_LIMIT = 3.92
_ERF_P = (1.1283790552253103, 0.19115272084165716, 0.05285993334027934, 0.0038026478483671167,
          0.00028659408079468934, 2.0548745644868064e-06)
_ERF_Q = (1.0, 0.5027366959727533, 0.11442985082379807, 0.015040371076280954,
          0.0011732890457925261, 3.8233030576412866e-05)
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@threaded
def _gelu_erf_rational(x, gate, y):
    p, q = _ERF_P, _ERF_Q
    for i in prange(x.size):
        xi = x[i]
        z = xi * _SQRT_HALF
        s = z * z
        num = p[0] + s * (p[1] + s * (p[2] + s * (p[3] + s * (p[4] + s * p[5]))))
        den = q[0] + s * (q[1] + s * (q[2] + s * (q[3] + s * (q[4] + s * q[5]))))
        erf = z * num / den
        # saturated exactly, so that gelu(-inf) is nan and a large negative x gives 0 as the
        # composite does; NaN fails both tests and stays NaN
        if z >= _ERF_LIMIT:
            erf = 1.0
        elif z <= -_ERF_LIMIT:
            erf = -1.0
        gate[i] = 1.0 + erf
        y[i] = 0.5 * xi * gate[i]


@threaded
def _gelu_erf_exact(x, gate, y):
    for i in prange(x.size):
        gate[i] = 1.0 + math.erf(x[i] * _SQRT_HALF)
        y[i] = 0.5 * x[i] * gate[i]


@threaded
def _gelu_erf_backward_loop(x, gate, g, gx, half, inv_sqrt_2pi):
    # d/dx x Phi(x) = Phi(x) + x phi(x), Phi = gate / 2, phi(x) = exp(-x^2 / 2) / sqrt(2 pi),
    # with the compiled exp (exp.py: one loop where NumPy's exp took a pass of its own)
    for i in prange(x.size):
        xi = x[i]
        gx[i] = (half * gate[i] + xi * exp_nonpositive(-half * xi * xi) * inv_sqrt_2pi) * g[i]


def gelu_erf(x):
    """(y, gate) of `ops.activation._gelu` with approximate='none'."""
    xs = flat(x)
    y, gate = numpy.empty_like(xs), numpy.empty_like(xs)
    if xs.dtype == numpy.float32:
        _gelu_erf_rational(xs, gate, y)
    else:
        _gelu_erf_exact(xs, gate, y)
    return y.reshape(x.shape), gate.reshape(x.shape)


def gelu_erf_backward(x, gate, g):
    """GELU's (exact form) input gradient from the forward's gate and the output gradient g."""
    xs = flat(x)
    gx = numpy.empty_like(xs)  # apart from the inputs: in place over one, the loop won't vectorise
    _gelu_erf_backward_loop(xs, flat(gate), flat(g), gx, xs.dtype.type(0.5),
                            xs.dtype.type(_INV_SQRT_2PI))
    return gx.reshape(x.shape)


@override("gelu", supports=floats)
def gelu(x, approximate):
    """(y, gate) of either form in one compiled pass (gpt_step; exact form: vit_step, bert_step)."""
    return gelu_tanh(x) if approximate == "tanh" else gelu_erf(x)


@override("gelu.vjp", supports=floats)
def gelu_backward(x, gate, g, approximate):
    """GELU's input gradient in either form."""
    return (gelu_tanh_backward if approximate == "tanh" else gelu_erf_backward)(x, gate, g)
