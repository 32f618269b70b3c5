"""Optimizer updates as in-place tensor ops: what tensorgrad.nn.optim runs for each parameter.

They change tensors in place the way Tensor's in-place methods do (refused on a leaf that
requires grad while grad mode is on, and the version counters are bumped, so a graph that saved
one of them reports the change at backward). The update itself is overridable: the CPU
backend's compiled AdamW makes one pass over memory instead of about a dozen (gpt_step's
optimizer share).
"""
import math

from ..backend.overrides import overridable
from ..tensor import Tensor


def adam_step_(param, grad, exp_avg, exp_avg_sq, *, step, lr, betas=(0.9, 0.999), eps=1e-8,
               weight_decay=0.0, decoupled=False, max_exp_avg_sq=None, maximize=False,
               fused=None):
    """One Adam step (decoupled=True: AdamW), in place on param, exp_avg (m), exp_avg_sq (v)
    and, for AMSGrad, max_exp_avg_sq (the running maximum of v). With g = grad (-grad when
    maximize) and t = step (counted from 1):
        decoupled:  p <- p (1 - lr wd)          else:  g <- g + wd p
        m <- beta1 m + (1 - beta1) g,   v <- beta2 v + (1 - beta2) g^2,   vmax <- max(vmax, v)
        p <- p - lr / (1 - beta1^t) * m / (sqrt(v or vmax) / sqrt(1 - beta2^t) + eps)
    fused: None uses the backend's compiled override when it has one (and the update is one it
    covers), False always runs the reference. Returns param."""
    tensors = (param, grad, exp_avg, exp_avg_sq) + (() if max_exp_avg_sq is None
                                                   else (max_exp_avg_sq,))
    _check(tensors, param)
    for t in tensors[:1] + tensors[2:]:
        t._inplace("adam_step_")
    if maximize:
        grad = -grad
    update = _adam_update if fused is not False else _adam_update.reference
    update(param._backend, param.data, grad.data, exp_avg.data, exp_avg_sq.data,
           None if max_exp_avg_sq is None else max_exp_avg_sq.data, lr, betas, eps,
           weight_decay, decoupled, step)
    return param


@overridable("adam_step")
def _adam_update(xp, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, betas, eps,
                 weight_decay, decoupled, step):
    """The update on the arrays, in place (the formulas above)."""
    beta1, beta2 = betas
    if weight_decay and decoupled:
        param *= 1.0 - lr * weight_decay
    elif weight_decay:
        grad = grad + weight_decay * param
    exp_avg *= beta1
    exp_avg += (1.0 - beta1) * grad
    exp_avg_sq *= beta2
    exp_avg_sq += (1.0 - beta2) * (grad * grad)
    v = exp_avg_sq
    if max_exp_avg_sq is not None:
        v = xp.maximum(max_exp_avg_sq, v, out=max_exp_avg_sq)
    denom = xp.sqrt(v) / math.sqrt(1.0 - beta2 ** step) + eps
    param -= (lr / (1.0 - beta1 ** step)) * (exp_avg / denom)


def _check(tensors, param):
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"adam_step_: expected Tensors, got {type(t).__name__}")
        if t.shape != param.shape or t.dtype != param.dtype or t.device != param.device:
            raise ValueError(f"adam_step_: every tensor must match the parameter ({param.dtype} "
                             f"{param.shape} on {param.device}), got {t.dtype} {t.shape} on "
                             f"{t.device}")
