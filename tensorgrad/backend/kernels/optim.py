"""Compiled Adam/AdamW update: one pass over each parameter instead of about a dozen array
operations (benchmarks/: gpt_step, mlp_step). It computes in the parameter's dtype, as the array
code in tensorgrad.nn.optim does."""
import math

import numpy

from numba import prange

from ..overrides import override
from .jit import flat, threaded
from .supports import floats


@threaded
def _adam_loop(p, g, m, v, decay, l2, beta1, keep1, beta2, keep2, step_size, inv_bias2, eps):
    for i in prange(p.size):
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
    _adam_loop(param.reshape(-1), flat(grad), exp_avg.reshape(-1), exp_avg_sq.reshape(-1),
               kind(decay), kind(0.0 if decoupled else weight_decay), kind(beta1),
               kind(1.0 - beta1), kind(beta2), kind(1.0 - beta2),
               kind(lr / (1.0 - beta1 ** step)), kind(1.0 / math.sqrt(1.0 - beta2 ** step)),
               kind(eps))


@threaded
def _add_scaled_loop(y, x, alpha):
    for i in prange(y.size):
        y[i] += alpha * x[i]


def add_scaled_(y, x, alpha):
    """y += alpha * x in place, in one pass (NumPy takes two and a temporary: an SGD step's
    p.add_(grad, alpha=-lr); mlp_step). y C-contiguous, x of y's shape and dtype; alpha in
    their dtype."""
    _add_scaled_loop(y.reshape(-1), flat(x), y.dtype.type(alpha))
    return y


def _adam_supports(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, *rest):
    """Adam and AdamW without AMSGrad, on C-contiguous float arrays."""
    return (max_exp_avg_sq is None and floats(param, grad, exp_avg, exp_avg_sq)
            and param.flags.c_contiguous and exp_avg.flags.c_contiguous
            and exp_avg_sq.flags.c_contiguous)


@override("adam_step", supports=_adam_supports)
def adam_update(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, betas, eps, weight_decay,
                decoupled, step):
    adam_step(param, grad, exp_avg, exp_avg_sq, lr, betas, eps, weight_decay, decoupled, step)


def _same_array(y, x, alpha):
    return (floats(y, x) and y.flags.c_contiguous and isinstance(x, numpy.ndarray)
            and x.shape == y.shape and x.dtype == y.dtype)


override("add_scaled_", supports=_same_array)(add_scaled_)
