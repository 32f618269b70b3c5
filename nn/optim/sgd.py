"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""
from .optimizer import Optimizer


class SGD(Optimizer):
    """PyTorch's SGD: with g = grad (-grad when maximize) + weight_decay * p,
        b <- momentum * b + (1 - dampening) * g      (b = g on the first step)
        p <- p - lr * (g + momentum * b if nesterov else b)
    and p <- p - lr * g when momentum is 0.

    foreach= and fused= are accepted for PyTorch compatibility and change nothing.
    differentiable=True is not supported."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError(f"SGD: lr, momentum and weight_decay must be >= 0, got lr={lr}, "
                             f"momentum={momentum}, weight_decay={weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: nesterov momentum needs momentum > 0 and dampening = 0")
        if differentiable:
            raise NotImplementedError("SGD: differentiable=True (autograd through the update) "
                                      "is not supported; the update runs under no_grad")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=bool(maximize), foreach=foreach,
                                      differentiable=False, fused=fused))

    def _update(self, param, grad, state, group):
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        momentum = group["momentum"]
        if momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.clone()
            else:
                buf.mul_(momentum).add_(grad, alpha=1.0 - group["dampening"])
            grad = grad + momentum * buf if group["nesterov"] else buf
        param.add_(grad, alpha=-group["lr"])
