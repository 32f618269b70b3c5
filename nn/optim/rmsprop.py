"""RMSprop (Hinton's lecture 6e, 2012), with Graves' (2013) centered variant and momentum."""
import tensorgrad as tg

from .optimizer import Optimizer


class RMSprop(Optimizer):
    """PyTorch's RMSprop: with g = grad (-grad when maximize) + weight_decay * p,
        v <- alpha v + (1 - alpha) g^2
        centered: a <- alpha a + (1 - alpha) g,  d = sqrt(v - a^2) + eps;  else d = sqrt(v) + eps
        momentum > 0: b <- momentum b + g / d,  p <- p - lr b;  else p <- p - lr g / d
    State per parameter: step (int), square_avg (v), grad_avg (a, when centered) and
    momentum_buffer (b, when momentum > 0), in the parameter's dtype.

    foreach= and capturable= are accepted for PyTorch compatibility and change nothing.
    differentiable=True is not supported."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        if lr < 0 or eps < 0 or weight_decay < 0 or momentum < 0 or alpha < 0:
            raise ValueError(f"RMSprop: lr, alpha, eps, weight_decay and momentum must be >= 0, "
                             f"got lr={lr}, alpha={alpha}, eps={eps}, "
                             f"weight_decay={weight_decay}, momentum={momentum}")
        if differentiable:
            raise NotImplementedError("RMSprop: differentiable=True (autograd through the "
                                      "update) is not supported; the update runs under no_grad")
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=bool(centered),
                                      capturable=bool(capturable), foreach=foreach,
                                      maximize=bool(maximize), differentiable=False))

    def _update(self, param, grad, state, group):
        if not state:
            state["step"] = 0
            state["square_avg"] = tg.zeros_like(param)
        alpha = group["alpha"]
        state["step"] += 1
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        square_avg = state["square_avg"].mul_(alpha).add_(grad * grad, alpha=1 - alpha)
        if group["centered"]:
            grad_avg = state.setdefault("grad_avg", tg.zeros_like(param))
            grad_avg.mul_(alpha).add_(grad, alpha=1 - alpha)
            denom = (square_avg - grad_avg * grad_avg).sqrt() + group["eps"]
        else:
            denom = square_avg.sqrt() + group["eps"]
        if group["momentum"] > 0:
            buf = state.setdefault("momentum_buffer", tg.zeros_like(param))
            buf.mul_(group["momentum"]).add_(grad / denom)
            param.add_(buf, alpha=-group["lr"])
        else:
            param.add_(grad / denom, alpha=-group["lr"])
