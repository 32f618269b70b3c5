"""Compiled twin of tensorgrad/ops/activation.py's tanh-GELU (forward and VJP), for GPT-2's MLP
(benchmarks/: gpt_step). The loops compute in float64 and store in the array's dtype."""
import math

import numpy

from .jit import flat, jit

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715


# --- GELU, tanh form (GPT-2's) ----------------------------------------------------------------
# gelu(x) = x gate / 2 with gate = 1 + tanh(u), u = c (x + 0.044715 x^3). NumPy's own tanh is
# vectorised (several times faster than a compiled scalar tanh), so the forward is: u in one
# loop, tanh in place by NumPy, then gate and y in a second loop.
@jit
def _gelu_argument(x, u, c, c3):
    for i in range(x.size):
        xi = x[i]
        u[i] = xi * (c + c3 * xi * xi)


@jit
def _gelu_output(x, gate, y):
    for i in range(x.size):
        gate[i] += 1.0
        y[i] = 0.5 * x[i] * gate[i]


@jit
def _gelu_backward_loop(x, gate, g, gx, c, c3):
    # d/dx = 0.5 (1 + t) (1 + x (1 - t) u'), t = gate - 1, u' = c + 3 c3 x^2
    for i in range(x.size):
        xi, gi = x[i], gate[i]
        gx[i] = 0.5 * gi * (1.0 + xi * (2.0 - gi) * (c + 3.0 * c3 * xi * xi)) * g[i]


def gelu_tanh(x):
    """(y, gate) of `ops.activation._gelu` with approximate='tanh'."""
    xs = flat(x)
    y, gate = numpy.empty_like(xs), numpy.empty_like(xs)
    _gelu_argument(xs, gate, _SQRT_2_OVER_PI, _SQRT_2_OVER_PI * _GELU_CUBIC)
    numpy.tanh(gate, out=gate)
    _gelu_output(xs, gate, y)
    return y.reshape(x.shape), gate.reshape(x.shape)


def gelu_tanh_backward(x, gate, g):
    """GELU's (tanh form) input gradient from the forward's gate and the output gradient g."""
    xs = flat(x)
    gx = numpy.empty_like(xs)
    _gelu_backward_loop(xs, flat(gate), flat(g), gx, _SQRT_2_OVER_PI,
                        _SQRT_2_OVER_PI * _GELU_CUBIC)
    return gx.reshape(x.shape)

