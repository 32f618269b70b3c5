"""SGD trajectories against torch.optim.SGD over 20 steps (foreach=/fused= accepted, no effect)."""
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import optim

CASES = {
    "plain": dict(lr=0.1),
    "momentum": dict(lr=0.05, momentum=0.9),
    "dampening": dict(lr=0.05, momentum=0.9, dampening=0.3),
    "nesterov": dict(lr=0.05, momentum=0.9, nesterov=True),
    "weight_decay": dict(lr=0.1, momentum=0.5, weight_decay=0.1),
    "maximize": dict(lr=0.05, momentum=0.9, weight_decay=0.1, maximize=True),
    "foreach-fused": dict(lr=0.05, momentum=0.9, foreach=True, fused=False),
    "fused": dict(lr=0.05, momentum=0.9, fused=True),
}


@pytest.mark.parametrize("case", CASES)
def test_sgd_matches_torch(same_trajectory, case):
    torch = pytest.importorskip("torch")
    kwargs = CASES[case]
    same_trajectory(lambda w, b: optim.SGD([w, b], **kwargs),
                    lambda w, b: torch.optim.SGD([w, b], **kwargs))


def test_sgd_with_two_param_groups_matches_torch(same_trajectory):
    torch = pytest.importorskip("torch")

    def groups(w, b):
        return [{"params": [w], "weight_decay": 0.1}, {"params": [b], "lr": 0.02}]

    same_trajectory(lambda w, b: optim.SGD(groups(w, b), lr=0.1, momentum=0.9),
                    lambda w, b: torch.optim.SGD(groups(w, b), lr=0.1, momentum=0.9))


def test_sgd_validates_hyper_parameters():
    p = [nn.Parameter(tg.zeros(2))]
    with pytest.raises(ValueError, match="nesterov momentum needs momentum > 0"):
        optim.SGD(p, nesterov=True)
    with pytest.raises(ValueError, match="lr, momentum and weight_decay must be >= 0"):
        optim.SGD(p, lr=-1.0)
    with pytest.raises(NotImplementedError, match="SGD: differentiable=True .* not supported"):
        optim.SGD(p, differentiable=True)
