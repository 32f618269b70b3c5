"""Adam and AdamW trajectories against PyTorch over 20 steps, through the fused kernel and the
array code; float32 all the way through."""
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import optim

CASES = {
    "Adam": dict(lr=0.05),
    "Adam-betas-eps": dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6),
    "Adam-l2": dict(lr=0.05, weight_decay=0.1),
    "Adam-amsgrad": dict(lr=0.05, weight_decay=0.1, amsgrad=True),
    "Adam-maximize": dict(lr=0.02, maximize=True),
    "AdamW": dict(lr=0.05, weight_decay=0.1),
    "AdamW-default": dict(lr=0.05),
    "AdamW-amsgrad": dict(lr=0.05, weight_decay=0.1, amsgrad=True),
    "AdamW-amsgrad-maximize": dict(lr=0.02, amsgrad=True, maximize=True),
    "AdamW-foreach-fused": dict(lr=0.05, foreach=True, fused=False, capturable=False),
    "AdamW-fused": dict(lr=0.05, fused=True),
}


@pytest.mark.parametrize("case", CASES)
def test_adam_matches_torch(same_trajectory, update_path, case):
    torch = pytest.importorskip("torch")
    name = case.split("-")[0]
    kwargs = CASES[case]
    same_trajectory(lambda w, b: getattr(optim, name)([w, b], **kwargs),
                    lambda w, b: getattr(torch.optim, name)([w, b], **kwargs))
    path, kernel_calls = update_path
    # AMSGrad has no fused kernel: it always runs the array code.
    expected = 40 if path == "kernel" and not kwargs.get("amsgrad") else 0
    assert len(kernel_calls) == expected  # 20 steps x 2 parameters


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_with_two_param_groups_matches_torch(same_trajectory, update_path, name):
    torch = pytest.importorskip("torch")

    def groups(w, b):  # decay the weight, not the bias; the bias also gets its own lr
        return [{"params": [w], "weight_decay": 0.2}, {"params": [b], "weight_decay": 0.0,
                                                        "lr": 0.01, "amsgrad": True}]

    same_trajectory(lambda w, b: getattr(optim, name)(groups(w, b), lr=0.05),
                    lambda w, b: getattr(torch.optim, name)(groups(w, b), lr=0.05))


def test_amsgrad_state_round_trips_through_a_checkpoint(tmp_path):
    w = nn.Parameter(tg.randn(3))
    opt = optim.AdamW([w], lr=0.1, amsgrad=True)
    for _ in range(3):
        opt.zero_grad()
        (w ** 2).sum().backward()
        opt.step()
    tg.save(opt.state_dict(), tmp_path / "opt.safetensors")
    opt2 = optim.AdamW([nn.Parameter(w.detach().clone())], lr=0.1, amsgrad=True)
    opt2.load_state_dict(tg.load(tmp_path / "opt.safetensors"))
    state = next(iter(opt2.state.values()))
    assert state["step"] == 3 and sorted(state) == ["exp_avg", "exp_avg_sq", "max_exp_avg_sq",
                                                    "step"]
    assert bool((state["max_exp_avg_sq"] >= state["exp_avg_sq"]).all())


def test_adamw_step_keeps_float32_everywhere(device):
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3))
    model.to(device)
    opt = optim.AdamW(model.parameters(), lr=1e-2, amsgrad=True)
    x, y = tg.randn(5, 4, device=device), tg.tensor([0, 1, 2, 1, 0], device=device)
    loss = nn.functional.cross_entropy(model(x), y)
    assert loss.dtype == tg.float32
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    for p in model.parameters():
        assert p.dtype == tg.float32 and p.grad.dtype == tg.float32
        state = opt.state[p]
        for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
            assert state[key].dtype == tg.float32 and state[key].device == p.device
        assert state["step"] == 1


def test_the_update_bumps_versions_and_refuses_grad_mode():
    w = nn.Parameter(tg.ones(2))
    w.grad = tg.ones(2)
    saved = w * w  # mul saves w for its backward (w * 2.0 would not, as in PyTorch)
    opt = optim.AdamW([w], lr=0.1)
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace|in place|version"):
        saved.sum().backward()
    m, v = opt.state[w]["exp_avg"], opt.state[w]["exp_avg_sq"]
    with pytest.raises(RuntimeError, match="adam_step_: a leaf Variable that requires grad"):
        tg.adam_step_(w, w.grad, m, v, step=2, lr=0.1)
    with pytest.raises(ValueError, match="adam_step_: every tensor must match the parameter"):
        with tg.no_grad():
            tg.adam_step_(w, w.grad, tg.zeros(3), v, step=2, lr=0.1)


def test_adam_validates_hyper_parameters():
    p = [nn.Parameter(tg.zeros(2))]
    with pytest.raises(ValueError, match=r"AdamW: betas must be two numbers in \[0, 1\)"):
        optim.AdamW(p, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Adam: lr, eps and weight_decay must be >= 0"):
        optim.Adam(p, eps=-1.0)
    with pytest.raises(NotImplementedError, match="AdamW: differentiable=True .* not supported"):
        optim.AdamW(p, differentiable=True)
