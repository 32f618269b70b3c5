"""Optimizer updates as in-place tensor ops: what tensorgrad.nn.optim runs for each parameter.

They change tensors in place the way Tensor's in-place methods do (refused on a leaf that
requires grad while grad mode is on, and the version counters are bumped, so a graph that saved
one of them reports the change at backward), and run the backend's fused kernel when it has one:
the AdamW update is one pass over memory instead of about a dozen NumPy calls (benchmarks/:
gpt_step's optimizer share).
"""
import math

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
    fused: None uses the backend's fused kernel when it has one (and the update is one it
    covers), False always runs the array code. Returns param."""
    tensors = (param, grad, exp_avg, exp_avg_sq) + (() if max_exp_avg_sq is None
                                                   else (max_exp_avg_sq,))
    _check(tensors, param)
    beta1, beta2 = betas
    for t in tensors[:1] + tensors[2:]:
        t._inplace("adam_step_")
    if maximize:
        grad = -grad
    kernels = None
    if fused is not False and max_exp_avg_sq is None:
        kernels = param._backend.kernels(param.data, grad.data, exp_avg.data, exp_avg_sq.data)
    if kernels is not None and all(t.data.flags.c_contiguous for t in (param, exp_avg,
                                                                        exp_avg_sq)):
        kernels.adam_step(param.data, grad.data, exp_avg.data, exp_avg_sq.data, lr,
                          (beta1, beta2), eps, weight_decay, decoupled, step)
        return param
    # The array code, in tensorgrad ops on the raw arrays' tensors (versions already bumped).
    p, m, v = (_alias(t) for t in (param, exp_avg, exp_avg_sq))
    if weight_decay and decoupled:
        p.mul_(1.0 - lr * weight_decay)
    elif weight_decay:
        grad = grad + weight_decay * p
    m.mul_(beta1).add_(grad, alpha=1.0 - beta1)
    v.mul_(beta2).add_(grad * grad, alpha=1.0 - beta2)
    if max_exp_avg_sq is not None:
        v = _alias(max_exp_avg_sq).copy_(max_exp_avg_sq.maximum(v))
    denom = v.sqrt() / math.sqrt(1.0 - beta2 ** step) + eps
    p.add_(m / denom, alpha=-lr / (1.0 - beta1 ** step))
    return param


def _alias(t):
    """A tensor on t's array with its own version counter: the array code's in-place steps
    then count as the one update already recorded on t."""
    return Tensor._constant(t.data, t._backend)


def _check(tensors, param):
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"adam_step_: expected Tensors, got {type(t).__name__}")
        if t.shape != param.shape or t.dtype != param.dtype or t.device != param.device:
            raise ValueError(f"adam_step_: every tensor must match the parameter ({param.dtype} "
                             f"{param.shape} on {param.device}), got {t.dtype} {t.shape} on "
                             f"{t.device}")
