"""RMSprop and Adagrad trajectories against PyTorch over 20 steps, with every argument."""
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import optim

CASES = {
    "RMSprop": dict(),
    "RMSprop-alpha-eps": dict(lr=0.005, alpha=0.9, eps=1e-6),
    "RMSprop-momentum": dict(lr=0.01, momentum=0.9),
    "RMSprop-centered": dict(lr=0.01, centered=True),
    "RMSprop-everything": dict(lr=0.01, alpha=0.95, momentum=0.5, centered=True,
                               weight_decay=0.1, maximize=True, foreach=False),
    "Adagrad": dict(lr=0.1),
    "Adagrad-decay": dict(lr=0.1, lr_decay=0.05, weight_decay=0.1),
    "Adagrad-accumulator": dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-6),
    "Adagrad-maximize": dict(lr=0.05, maximize=True, foreach=False),
}


@pytest.mark.parametrize("case", CASES)
def test_matches_torch(same_trajectory, case):
    torch = pytest.importorskip("torch")
    name, kwargs = case.split("-")[0], CASES[case]
    same_trajectory(lambda w, b: getattr(optim, name)([w, b], **kwargs),
                    lambda w, b: getattr(torch.optim, name)([w, b], **kwargs))


@pytest.mark.parametrize("name", ["RMSprop", "Adagrad"])
def test_two_param_groups_match_torch(same_trajectory, name):
    torch = pytest.importorskip("torch")

    def groups(w, b):
        return [{"params": [w], "weight_decay": 0.2}, {"params": [b], "lr": 0.03}]

    same_trajectory(lambda w, b: getattr(optim, name)(groups(w, b), lr=0.01),
                    lambda w, b: getattr(torch.optim, name)(groups(w, b), lr=0.01))


def test_state_holds_torchs_names_and_round_trips():
    torch = pytest.importorskip("torch")
    w = nn.Parameter(tg.ones(3))
    ours = optim.RMSprop([w], momentum=0.9, centered=True)
    (w * w).sum().backward()
    ours.step()
    t = torch.ones(3, requires_grad=True)
    theirs = torch.optim.RMSprop([t], momentum=0.9, centered=True)
    (t * t).sum().backward()
    theirs.step()
    assert set(ours.state_dict()["state"][0]) == set(theirs.state_dict()["state"][0])
    again = optim.RMSprop([nn.Parameter(tg.ones(3))], momentum=0.9, centered=True)
    again.load_state_dict(ours.state_dict())
    assert again.state_dict()["state"][0]["step"] == 1
    adagrad = optim.Adagrad([w], initial_accumulator_value=0.25)  # state exists before a step
    assert adagrad.state_dict()["state"][0]["sum"].tolist() == [0.25] * 3
    assert set(adagrad.state_dict()["state"][0]) == {"step", "sum"}


@pytest.mark.parametrize("make, message", [
    (lambda p: optim.RMSprop([p], lr=-1.0), "must be >= 0"),
    (lambda p: optim.RMSprop([p], differentiable=True), "differentiable=True"),
    (lambda p: optim.Adagrad([p], lr_decay=-0.1), "must be >= 0"),
    (lambda p: optim.Adagrad([{"params": [p], "momentum": 0.9}]), "unknown hyper-parameter"),
])
def test_bad_arguments_are_errors(make, message):
    with pytest.raises((ValueError, NotImplementedError), match=message):
        make(nn.Parameter(tg.ones(2)))
