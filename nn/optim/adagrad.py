"""Adagrad (Duchi, Hazan and Singer, 2011): each coordinate's step shrinks with the sum of its
squared gradients."""
import tensorgrad as tg

from .optimizer import Optimizer


class Adagrad(Optimizer):
    """PyTorch's Adagrad: with g = grad (-grad when maximize) + weight_decay * p, at step t,
        s <- s + g^2   (s starts at initial_accumulator_value)
        p <- p - lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps)
    State per parameter: step (int) and sum (s), in the parameter's dtype, created with the
    parameter group as PyTorch does.

    foreach= and fused= are accepted for PyTorch compatibility and change nothing.
    differentiable=True is not supported; sparse gradients do not exist in tensorgrad."""

    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0,
                 initial_accumulator_value=0.0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):
        if lr < 0 or lr_decay < 0 or weight_decay < 0 or initial_accumulator_value < 0 \
                or eps < 0:
            raise ValueError(f"Adagrad: lr, lr_decay, weight_decay, initial_accumulator_value "
                             f"and eps must be >= 0, got lr={lr}, lr_decay={lr_decay}, "
                             f"weight_decay={weight_decay}, "
                             f"initial_accumulator_value={initial_accumulator_value}, eps={eps}")
        if differentiable:
            raise NotImplementedError("Adagrad: differentiable=True (autograd through the "
                                      "update) is not supported; the update runs under no_grad")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, foreach=foreach, maximize=bool(maximize),
                                      differentiable=False, fused=fused))

    def add_param_group(self, group):
        super().add_param_group(group)
        group = self.param_groups[-1]
        for p in group["params"]:
            self.state[p] = {"step": 0,
                             "sum": tg.full_like(p, group["initial_accumulator_value"])}

    def _update(self, param, grad, state, group):
        state["step"] += 1
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        lr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        state["sum"].add_(grad * grad)
        param.add_(grad / (state["sum"].sqrt() + group["eps"]), alpha=-lr)
