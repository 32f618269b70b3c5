"""Fused CPU kernels compiled with Numba: each makes one pass over memory where the array code
makes several (one NumPy call per arithmetic step, each writing a temporary).

The NumPy backend hands this module out through `backend.kernels(*arrays)` when Numba is
installed (`pip install tensorgrad[fast]`) and TENSORGRAD_NUMBA is not 0; otherwise that returns
None and every op runs its array code, which is also what the CuPy backend runs. The tests run
both. What is here and why (benchmarks/): GPT-mini's tanh-GELU and layer norms, forward and
backward, its AdamW update and its embedding's gradient; and decoding, where every call is on a
single row and NumPy's per-call cost dominates.

Only float32 and float64 arrays are handled (`supports`). The norm and GELU loops compute in
float64 and store in the array's dtype, so float32 results stay float32; the Adam loop computes
in the parameter's dtype, as its array code does. Compiled code is cached on disk (cache=True),
so only the first process on a machine pays the compilation.
"""
import math

import numba
import numpy

# error_model="numpy": x / 0 is inf or nan as in the array code, and without a zero check per
# division the loops vectorise; "reassoc" lets sums vectorise too.
_jit = numba.njit(cache=True, nogil=True, error_model="numpy",
                  fastmath={"reassoc", "contract"})
_DTYPES = (numpy.dtype("float32"), numpy.dtype("float64"))


def supports(arrays):
    for a in arrays:
        if a is not None and a.dtype not in _DTYPES:
            return False
    return True
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715


# --- GELU, tanh form (GPT-2's) ----------------------------------------------------------------
# gelu(x) = x gate / 2 with gate = 1 + tanh(u), u = c (x + 0.044715 x^3). NumPy's own tanh is
# vectorised (several times faster than a compiled scalar tanh), so the forward is: u in one
# loop, tanh in place by NumPy, then gate and y in a second loop.
@_jit
def _gelu_argument(x, u, c, c3):
    for i in range(x.size):
        xi = x[i]
        u[i] = xi * (c + c3 * xi * xi)


@_jit
def _gelu_output(x, gate, y):
    for i in range(x.size):
        gate[i] += 1.0
        y[i] = 0.5 * x[i] * gate[i]


@_jit
def _gelu_backward_loop(x, gate, g, gx, c, c3):
    # d/dx = 0.5 (1 + t) (1 + x (1 - t) u'), t = gate - 1, u' = c + 3 c3 x^2
    for i in range(x.size):
        xi, gi = x[i], gate[i]
        gx[i] = 0.5 * gi * (1.0 + xi * (2.0 - gi) * (c + 3.0 * c3 * xi * xi)) * g[i]


def _flat(a):
    return numpy.ascontiguousarray(a).reshape(-1)


def gelu_tanh(x):
    """(y, gate) of `ops.elementwise._gelu` with approximate='tanh'."""
    flat = _flat(x)
    y, gate = numpy.empty_like(flat), numpy.empty_like(flat)
    _gelu_argument(flat, gate, _SQRT_2_OVER_PI, _SQRT_2_OVER_PI * _GELU_CUBIC)
    numpy.tanh(gate, out=gate)
    _gelu_output(flat, gate, y)
    return y.reshape(x.shape), gate.reshape(x.shape)


def gelu_tanh_backward(x, gate, g):
    """GELU's (tanh form) input gradient from the forward's gate and the output gradient g."""
    flat = _flat(x)
    gx = numpy.empty_like(flat)
    _gelu_backward_loop(flat, _flat(gate), _flat(g), gx, _SQRT_2_OVER_PI,
                        _SQRT_2_OVER_PI * _GELU_CUBIC)
    return gx.reshape(x.shape)


# --- layer norm and RMS norm over rows ------------------------------------------------------------
@_jit
def _norm_loop(x, weight, bias, eps, center, y, mean, rstd):
    rows, cols = x.shape
    for r in range(rows):
        mu = 0.0
        if center:
            for j in range(cols):
                mu += x[r, j]
            mu /= cols
        square = 0.0
        for j in range(cols):
            d = x[r, j] - mu
            square += d * d
        inv = 1.0 / math.sqrt(square / cols + eps)
        mean[r], rstd[r] = mu, inv
        for j in range(cols):
            v = (x[r, j] - mu) * inv
            if weight is not None:
                v *= weight[j]
            if bias is not None:
                v += bias[j]
            y[r, j] = v


@_jit
def _norm_backward_loop(x, mean, rstd, weight, g, center, gx, gweight, gbias):
    # gx = rstd (gxhat - mean(gxhat) - xhat mean(gxhat xhat)), gxhat = g * weight; RMS norm
    # (center False) has no mean(gxhat) term. gweight, gbias: float64 sums over the rows.
    rows, cols = x.shape
    for r in range(rows):
        mu, inv = mean[r], rstd[r]
        total = 0.0
        dot = 0.0
        for j in range(cols):
            gh = g[r, j] * weight[j] if weight is not None else g[r, j]
            total += gh
            dot += gh * (x[r, j] - mu) * inv
        total = total / cols if center else 0.0
        dot /= cols
        for j in range(cols):
            xh = (x[r, j] - mu) * inv
            gh = g[r, j] * weight[j] if weight is not None else g[r, j]
            gx[r, j] = inv * (gh - total - xh * dot)
            if gweight is not None:
                gweight[j] += g[r, j] * xh
            if gbias is not None:
                gbias[j] += g[r, j]


def _rows(a, cols):
    return _flat(a).reshape(-1, cols)


def norm(x, weight, bias, eps, dims, center):
    """Layer norm (center=True) or RMS norm over the trailing `dims` of x: (y, mean, rstd), the
    statistics shaped as a keepdims reduction over dims (the mean is 0 for RMS norm)."""
    trailing = len(dims)
    rows = _rows(x, math.prod(x.shape[-trailing:]))
    y = numpy.empty(x.shape, x.dtype)
    stats = numpy.empty((2,) + x.shape[:-trailing] + (1,) * trailing, x.dtype)  # mean, rstd
    _norm_loop(rows, None if weight is None else weight.reshape(-1),
               None if bias is None else bias.reshape(-1), float(eps), center,
               y.reshape(rows.shape), stats[0].reshape(-1), stats[1].reshape(-1))
    return y, stats[0], stats[1]


def norm_backward(x, mean, rstd, weight, g, dims, center, needs_weight, needs_bias):
    """(gx, gweight or None, gbias or None) of `norm`; mean may be None for RMS norm."""
    cols = math.prod(x.shape[d] for d in dims)
    rows = _rows(x, cols)
    if mean is None:
        mean = numpy.zeros(rows.shape[0], x.dtype)
    gx = numpy.empty_like(rows)
    gweight = numpy.zeros(cols) if needs_weight else None
    gbias = numpy.zeros(cols) if needs_bias else None
    _norm_backward_loop(rows, mean.reshape(-1), rstd.reshape(-1),
                        None if weight is None else weight.reshape(-1), _rows(g, cols), center,
                        gx, gweight, gbias)
    shape = tuple(x.shape[d] for d in dims)
    return (gx.reshape(x.shape),
            None if gweight is None else gweight.astype(x.dtype).reshape(shape),
            None if gbias is None else gbias.astype(x.dtype).reshape(shape))


# --- attention's row softmax ---------------------------------------------------------------------
# Over the (..., Tq, Tk) scores of the whole-matrix attention path: one loop takes each row's max
# (over the keys a causal query may see) off the row and sets the hidden keys to -inf, NumPy's
# vectorised exp runs in place, a second loop divides by the row sums: three passes where the
# array code (mask, max, subtract, exp, sum, scale) makes six.
@_jit
def _softmax_shift_loop(s, queries, causal):
    rows, cols = s.shape
    for r in range(rows):
        stop = min(cols, r % queries + 1) if causal else cols  # query i sees keys j <= i
        if stop == 0:
            continue
        top = s[r, 0]
        for j in range(1, stop):
            if s[r, j] > top:
                top = s[r, j]
        for j in range(stop):
            s[r, j] -= top
        for j in range(stop, cols):
            s[r, j] = -math.inf


@_jit
def _softmax_scale_loop(s):
    rows, cols = s.shape
    for r in range(rows):
        total = 0.0
        for j in range(cols):
            total += s[r, j]
        inv = 1.0 / total
        for j in range(cols):
            s[r, j] *= inv


def softmax_rows(scores, causal):
    """Row softmax of attention scores (..., Tq, Tk), in place when they are C-contiguous;
    causal: query i sees keys j <= i (top-left, as is_causal), the others get probability 0."""
    queries, keys = scores.shape[-2:]
    rows = _flat(scores).reshape(-1, keys)
    if rows.size:
        _softmax_shift_loop(rows, queries, causal)
        numpy.exp(rows, out=rows)
        _softmax_scale_loop(rows)
    return rows.reshape(scores.shape)


@_jit
def _softmax_backward_loop(ds, p, delta):
    rows, cols = ds.shape
    for r in range(rows):
        d = delta[r]
        for j in range(cols):
            ds[r, j] = p[r, j] * (ds[r, j] - d)


def softmax_backward(dp, p, delta):
    """dS = P * (dP - delta) for dp and p of one shape (..., Tq, Tk) and delta (..., Tq, 1):
    the softmax part of attention's VJP in one pass, in place over dp when it is C-contiguous."""
    keys = dp.shape[-1]
    rows = _flat(dp).reshape(-1, keys)
    _softmax_backward_loop(rows, _flat(p).reshape(-1, keys), _flat(delta))
    return rows.reshape(dp.shape)


# --- scatter-add of rows (the gradient of an embedding lookup) ----------------------------------
@_jit
def _scatter_rows_loop(target, rows, values):
    count = target.shape[0]
    for i in range(rows.size):
        r = rows[i]
        if r < 0:
            r += count
        if r < 0 or r >= count:
            raise IndexError("scatter_add: row index out of range")
        for j in range(values.shape[1]):
            target[r, j] += values[i, j]


def scatter_add_rows(target, rows, values):
    """target[rows] += values with repeated rows accumulated: rows an integer array indexing
    target's first dimension, values of shape rows.shape + target.shape[1:]. NumPy's add.at
    does the same several times slower (benchmarks/: the token embedding's gradient)."""
    cols = math.prod(target.shape[1:])
    _scatter_rows_loop(target.reshape(target.shape[0], cols), _flat(rows),
                       _flat(values).reshape(rows.size, cols))


# --- Adam / AdamW -------------------------------------------------------------------------------
@_jit
def _adam_loop(p, g, m, v, decay, l2, beta1, keep1, beta2, keep2, step_size, inv_bias2, eps):
    for i in range(p.size):
        pi = p[i]
        gi = g[i] + l2 * pi
        mi = beta1 * m[i] + keep1 * gi
        vi = beta2 * v[i] + keep2 * gi * gi
        m[i] = mi
        v[i] = vi
        p[i] = pi * decay - step_size * mi / (math.sqrt(vi) * inv_bias2 + eps)


def adam_step(param, grad, exp_avg, exp_avg_sq, lr, betas, eps, weight_decay, decoupled, step):
    """One Adam (decoupled=False: L2 folded into the gradient) or AdamW step, in place on the
    C-contiguous arrays param, exp_avg and exp_avg_sq, in one pass instead of about a dozen
    (tensorgrad.nn.optim.Adam gives the formulas). The scalars take the parameter's dtype, so
    float32 parameters are updated in float32 arithmetic, as the array code does."""
    kind = param.dtype.type
    beta1, beta2 = betas
    decay = 1.0 - lr * weight_decay if decoupled else 1.0
    _adam_loop(param.reshape(-1), _flat(grad), exp_avg.reshape(-1), exp_avg_sq.reshape(-1),
               kind(decay), kind(0.0 if decoupled else weight_decay), kind(beta1),
               kind(1.0 - beta1), kind(beta2), kind(1.0 - beta2),
               kind(lr / (1.0 - beta1 ** step)), kind(1.0 / math.sqrt(1.0 - beta2 ** step)),
               kind(eps))
