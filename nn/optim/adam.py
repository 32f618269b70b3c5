"""Adam (Kingma & Ba, 2015), its AMSGrad variant (Reddi et al., 2018), and AdamW (Loshchilov &
Hutter, 2019: decoupled weight decay)."""
import tensorgrad as tg

from .optimizer import Optimizer


class Adam(Optimizer):
    """With g = grad (-grad when maximize; + weight_decay * p: L2 regularisation folded into
    the gradient),
        m <- beta1 m + (1 - beta1) g,   v <- beta2 v + (1 - beta2) g^2
        p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
    amsgrad=True divides by the running maximum of v instead (state "max_exp_avg_sq").
    State per parameter: step (int), exp_avg (m) and exp_avg_sq (v) in the parameter's dtype.

    foreach=, fused= and capturable= are accepted for PyTorch compatibility and change nothing:
    the update is already fused into one kernel per parameter when the backend has one
    (tensorgrad.adam_step_). differentiable=True is not supported."""

    decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None):
        name = type(self).__name__
        if lr < 0 or eps < 0 or weight_decay < 0:
            raise ValueError(f"{name}: lr, eps and weight_decay must be >= 0, got lr={lr}, "
                             f"eps={eps}, weight_decay={weight_decay}")
        if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"{name}: betas must be two numbers in [0, 1), got {betas}")
        if differentiable:
            raise NotImplementedError(f"{name}: differentiable=True (autograd through the "
                                      "update) is not supported; the update runs under no_grad")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=bool(amsgrad),
                                      foreach=foreach, maximize=bool(maximize),
                                      capturable=bool(capturable), differentiable=False,
                                      fused=fused))

    def _update(self, param, grad, state, group):
        if not state:
            state["step"] = 0
            state["exp_avg"] = tg.zeros_like(param)
            state["exp_avg_sq"] = tg.zeros_like(param)
        if group["amsgrad"] and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = tg.zeros_like(param)
        state["step"] += 1
        tg.adam_step_(param, grad, state["exp_avg"], state["exp_avg_sq"], step=state["step"],
                      lr=group["lr"], betas=group["betas"], eps=group["eps"],
                      weight_decay=group["weight_decay"], decoupled=self.decoupled,
                      max_exp_avg_sq=state.get("max_exp_avg_sq") if group["amsgrad"] else None,
                      maximize=group["maximize"])


class AdamW(Adam):
    """Adam with decoupled weight decay: p <- p * (1 - lr * weight_decay) before the Adam step,
    so decay does not pass through the adaptive scaling. Put biases and norm weights in a group
    with weight_decay=0 to exclude them."""

    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused)
