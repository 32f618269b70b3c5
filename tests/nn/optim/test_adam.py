"""Adam and AdamW trajectories against PyTorch over 20 steps; float32 all the way through."""
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import optim

CASES = {
    "Adam": dict(lr=0.05),
    "Adam-betas-eps": dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6),
    "Adam-l2": dict(lr=0.05, weight_decay=0.1),
    "AdamW": dict(lr=0.05, weight_decay=0.1),
    "AdamW-default": dict(lr=0.05),
}


@pytest.mark.parametrize("case", CASES)
def test_adam_matches_torch(same_trajectory, case):
    torch = pytest.importorskip("torch")
    name = case.split("-")[0]
    kwargs = CASES[case]
    same_trajectory(lambda w, b: getattr(optim, name)([w, b], **kwargs),
                    lambda w, b: getattr(torch.optim, name)([w, b], **kwargs))


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_with_two_param_groups_matches_torch(same_trajectory, name):
    torch = pytest.importorskip("torch")

    def groups(w, b):  # decay the weight, not the bias; the bias also gets its own lr
        return [{"params": [w], "weight_decay": 0.2}, {"params": [b], "weight_decay": 0.0,
                                                        "lr": 0.01}]

    same_trajectory(lambda w, b: getattr(optim, name)(groups(w, b), lr=0.05),
                    lambda w, b: getattr(torch.optim, name)(groups(w, b), lr=0.05))


def test_adamw_step_keeps_float32_everywhere(device):
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3))
    model.to(device)
    opt = optim.AdamW(model.parameters(), lr=1e-2)
    x, y = tg.randn(5, 4, device=device), tg.tensor([0, 1, 2, 1, 0], device=device)
    loss = nn.functional.cross_entropy(model(x), y)
    assert loss.dtype == tg.float32
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    for p in model.parameters():
        assert p.dtype == tg.float32 and p.grad.dtype == tg.float32
        state = opt.state[p]
        assert state["exp_avg"].dtype == tg.float32 and state["exp_avg_sq"].dtype == tg.float32
        assert state["exp_avg"].device == p.device and state["step"] == 1


def test_adam_validates_hyper_parameters():
    p = [nn.Parameter(tg.zeros(2))]
    with pytest.raises(ValueError, match=r"AdamW: betas must be two numbers in \[0, 1\)"):
        optim.AdamW(p, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Adam: lr, eps and weight_decay must be >= 0"):
        optim.Adam(p, eps=-1.0)
