"""exp(x) for use inside compiled loops, in a form the compiler vectorises.

A compiled loop that calls math.exp makes one libm call per value, and NumPy's vectorised exp
would cost one more pass over memory between two compiled loops. `exp` below is plain
arithmetic, which LLVM turns into SIMD code, so a kernel can take a row's max, exponentiate and
sum it while the row is in L1 (attention, gpt_step). float32 only; float64 (gradient checks)
keeps math.exp, exact.

The float32 method is the classic one (Cody & Waite's range reduction, Cephes' expf polynomial):
x = k ln2 + f with integer k and |f| <= ln2 / 2, so exp(x) = 2^k exp(f); exp(f) is a degree-7
polynomial and 2^k is built directly in the exponent bits of two floats, 2^(k/2) 2^(k - k/2)
(one would overflow at the top of the range). Relative error within about
1 ulp of the true exp (tests/tensorgrad/test_kernels.py). Below the smallest normal result it
returns 0 (NumPy would return a subnormal), above float32's range inf, and NaN stays NaN.

`exp_nonpositive` is the same exp for arguments <= 0: a softmax's x - max, the GELU gradient's
-x^2/2. There 2^k needs no split (k <= 0) and nothing overflows, which leaves 23 of the 35
vector instructions per eight values (attention T=4096: the online softmax step and the VJP's
rebuilt probabilities).
"""
import math

import numpy
from numba import types
from numba.extending import overload, register_jitable

_LOG2E = numpy.float32(1 / math.log(2))
# ln 2 in two parts: k * _LN2_HI is exact for |k| < 2^8, so f = x - k ln2 keeps its low bits
_LN2_HI = numpy.float32(0.693359375)
_LN2_LO = numpy.float32(-2.12194440e-4)
_LOWEST = numpy.float32(-87.33654)  # log of the smallest normal float32
_HIGHEST = numpy.float32(88.72283)  # log of the largest float32
_COEFFICIENTS = tuple(numpy.float32(c) for c in (  # exp(f) = 1 + f + f^2 (c0 f^5 + ... + c5)
    1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
    5.0000001201e-1))
_INF = numpy.float32(numpy.inf)
_ZERO = numpy.float32(0.0)
_ONE = numpy.float32(1.0)
_HALF = numpy.float32(0.5)
_BIAS = numpy.int32(127)  # float32's exponent bias
_MANTISSA_BITS = numpy.int32(23)


def exp(x):
    """exp of a float scalar; called from compiled code, where the overload below applies."""
    return math.exp(x)


@register_jitable(inline="always")
def _power_of_two(k):
    """2^k as a float32, for integer -126 <= k <= 127: k + 127 in the exponent bits."""
    return numpy.int32((k + _BIAS) << _MANTISSA_BITS).view(numpy.float32)


@register_jitable(inline="always")
def _exp_parts(v):
    """exp(v) as p 2^k: the integer k and the polynomial p = exp(v - k ln2), for v in range."""
    k = numpy.floor(v * _LOG2E + _HALF)
    f = v - k * _LN2_HI - k * _LN2_LO
    c0, c1, c2, c3, c4, c5 = _COEFFICIENTS
    p = ((((c0 * f + c1) * f + c2) * f + c3) * f + c4) * f + c5
    return p * f * f + f + _ONE, numpy.int32(k)


@register_jitable(inline="always")
def _exp32(x):
    p, k = _exp_parts(min(max(x, _LOWEST), _HIGHEST))  # k, 2^k in range; the ends fixed below
    k_low = k >> 1
    y = p * _power_of_two(k_low) * _power_of_two(k - k_low)
    y = _ZERO if x < _LOWEST else y
    y = _INF if x > _HIGHEST else y
    return x if x != x else y  # NaN in, NaN out


def exp_nonpositive(x):
    """exp(x) for x <= 0 (a positive x is taken as 0: callers pass a value minus a max) or NaN;
    called from compiled code, where the overload below applies."""
    return math.exp(0.0 if x > 0.0 else x)


@register_jitable(inline="always")
def _exp32_nonpositive(x):
    v = _ZERO if x > _ZERO else x  # written so that a NaN passes (min() would drop it)
    p, k = _exp_parts(_LOWEST if v < _LOWEST else v)  # -126 <= k <= 0: one power of two
    y = p * _power_of_two(k)
    return _ZERO if x < _LOWEST else y


@overload(exp, inline="always")
def _exp_for(x):
    if x == types.float32:
        return _exp32
    return lambda x: math.exp(x)


@overload(exp_nonpositive, inline="always")
def _exp_nonpositive_for(x):
    if x == types.float32:
        return _exp32_nonpositive
    return lambda x: math.exp(0.0 if x > 0.0 else x)
