"""Adam (Kingma & Ba, 2015) and AdamW (Loshchilov & Hutter, 2019: decoupled weight decay)."""
import math

import tensorgrad as tg

from .optimizer import Optimizer


class Adam(Optimizer):
    """With g = grad (+ weight_decay * p: L2 regularisation folded into the gradient),
        m <- beta1 m + (1 - beta1) g,   v <- beta2 v + (1 - beta2) g^2
        p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
    State per parameter: step (int), exp_avg (m) and exp_avg_sq (v) in the parameter's dtype."""

    decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        name = type(self).__name__
        if lr < 0 or eps < 0 or weight_decay < 0:
            raise ValueError(f"{name}: lr, eps and weight_decay must be >= 0, got lr={lr}, "
                             f"eps={eps}, weight_decay={weight_decay}")
        if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"{name}: betas must be two numbers in [0, 1), got {betas}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay))

    def _update(self, param, grad, state, group):
        lr, (beta1, beta2), wd = group["lr"], group["betas"], group["weight_decay"]
        if not state:
            state["step"] = 0
            state["exp_avg"] = tg.zeros_like(param)
            state["exp_avg_sq"] = tg.zeros_like(param)
        state["step"] += 1
        step, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
        kernels = param._backend.kernels(param.data, grad.data, m.data, v.data)
        if kernels is not None and all(t.data.flags.c_contiguous for t in (param, m, v)):
            # The whole update in one pass (tensorgrad/backend/cpu_kernels.py), in place, so
            # recorded as Tensor's in-place methods record theirs.
            for t in (param, m, v):
                t._inplace("adam_step")
            kernels.adam_step(param.data, grad.data, m.data, v.data, lr, (beta1, beta2),
                              group["eps"], wd, self.decoupled, step)
            return
        if wd and self.decoupled:
            param.mul_(1.0 - lr * wd)
        elif wd:
            grad = grad + wd * param
        m.mul_(beta1).add_(grad, alpha=1.0 - beta1)
        v.mul_(beta2).add_(grad * grad, alpha=1.0 - beta2)
        denom = v.sqrt() / math.sqrt(1.0 - beta2 ** step) + group["eps"]
        param.add_(m / denom, alpha=-lr / (1.0 - beta1 ** step))


class AdamW(Adam):
    """Adam with decoupled weight decay: p <- p * (1 - lr * weight_decay) before the Adam step,
    so decay does not pass through the adaptive scaling. Put biases and norm weights in a group
    with weight_decay=0 to exclude them."""

    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
