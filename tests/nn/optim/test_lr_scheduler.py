"""Schedules: each learning-rate curve against its formula, and against torch's scheduler where
torch has the same one."""
import math

import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import optim
from tensorgrad.nn.optim import lr_scheduler as sched

BASE_LR = 0.5


def _optimizer(lr=BASE_LR, groups=1):
    return optim.SGD([{"params": [nn.Parameter(tg.zeros(1))]} for _ in range(groups)], lr=lr)


def _curve(scheduler, steps):
    """The lr each of the first `steps` optimizer steps uses (group 0)."""
    lrs = []
    for _ in range(steps):
        lrs.append(scheduler.optimizer.param_groups[0]["lr"])
        scheduler.optimizer.step()
        scheduler.step()
    return lrs


def _torch_curve(torch, make, steps, lr=BASE_LR):
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=lr)
    scheduler = make(opt)
    lrs = []
    for _ in range(steps):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        scheduler.step()
    return lrs


def test_warmup_constant_follows_its_formula():
    lrs = _curve(sched.WarmupConstantLR(_optimizer(), warmup_steps=4), 8)
    assert lrs == pytest.approx([BASE_LR * f for f in (0.25, 0.5, 0.75, 1, 1, 1, 1, 1)])
    assert _curve(sched.WarmupConstantLR(_optimizer()), 3) == [BASE_LR] * 3


def test_warmup_linear_follows_its_formula():
    lrs = _curve(sched.WarmupLinearLR(_optimizer(), warmup_steps=2, total_steps=6), 9)
    assert lrs == pytest.approx([BASE_LR * f for f in (0.5, 1, 1, 0.75, 0.5, 0.25, 0, 0, 0)])
    lrs = _curve(sched.WarmupLinearLR(_optimizer(), 0, 4, min_lr_ratio=0.2), 6)
    assert lrs == pytest.approx([BASE_LR * f for f in (1, 0.8, 0.6, 0.4, 0.2, 0.2)])


def test_warmup_cosine_follows_its_formula():
    warmup, total, floor = 3, 13, 0.1
    lrs = _curve(sched.WarmupCosineLR(_optimizer(), warmup, total, min_lr_ratio=floor), 16)
    expected = [BASE_LR * (s + 1) / warmup for s in range(warmup)]
    for s in range(warmup, 16):
        progress = min(1.0, (s - warmup) / (total - warmup))
        expected.append(BASE_LR * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))))
    assert lrs == pytest.approx(expected, rel=1e-12)
    assert lrs[warmup - 1] == lrs[warmup] == BASE_LR and lrs[-1] == pytest.approx(BASE_LR * floor)


@pytest.mark.parametrize("d_model", [None, 512])
def test_warmup_inverse_sqrt_is_the_transformer_schedule(d_model):
    warmup = 10
    lrs = _curve(sched.WarmupInverseSqrtLR(_optimizer(lr=2.0), warmup, d_model=d_model), 40)
    scale = d_model ** -0.5 if d_model else warmup ** 0.5
    expected = [2.0 * scale * min(n ** -0.5, n * warmup ** -1.5) for n in range(1, 41)]
    assert lrs == pytest.approx(expected, rel=1e-12)
    assert max(lrs) == lrs[warmup - 1]  # the peak is update number warmup_steps
    if d_model is None:
        assert max(lrs) == pytest.approx(2.0)


def test_lambda_lr_with_one_function_per_group():
    opt = _optimizer(groups=2)
    scheduler = sched.LambdaLR(opt, [lambda s: 0.5 ** s, lambda s: 1.0 / (s + 1)])
    for _ in range(3):
        scheduler.step()
    assert scheduler.get_last_lr() == pytest.approx([BASE_LR / 8, BASE_LR / 4])
    assert [g["lr"] for g in opt.param_groups] == scheduler.get_last_lr()
    with pytest.raises(ValueError, match="got 3 lr_lambdas for 2 parameter groups"):
        sched.LambdaLR(opt, [abs] * 3)


# --- the same curves from torch's schedulers -----------------------------------------------------
def test_lambda_lr_matches_torch():
    torch = pytest.importorskip("torch")
    fn = lambda s: 0.9 ** s + 0.1 * (s % 3)  # noqa: E731
    ours = _curve(sched.LambdaLR(_optimizer(), fn), 12)
    assert ours == pytest.approx(_torch_curve(torch, lambda o: torch.optim.lr_scheduler.LambdaLR(
        o, fn), 12), rel=1e-7)


def test_linear_decay_matches_torch_linear_lr():
    torch = pytest.importorskip("torch")
    ours = _curve(sched.WarmupLinearLR(_optimizer(), 0, 10, min_lr_ratio=0.1), 14)
    theirs = _torch_curve(torch, lambda o: torch.optim.lr_scheduler.LinearLR(
        o, start_factor=1.0, end_factor=0.1, total_iters=10), 14)
    assert ours == pytest.approx(theirs, rel=1e-6)


def test_warmup_matches_torch_linear_lr():
    torch = pytest.importorskip("torch")
    ours = _curve(sched.WarmupConstantLR(_optimizer(), warmup_steps=5), 9)
    theirs = _torch_curve(torch, lambda o: torch.optim.lr_scheduler.LinearLR(
        o, start_factor=1 / 5, end_factor=1.0, total_iters=4), 9)
    assert ours == pytest.approx(theirs, rel=1e-6)


def test_cosine_matches_torch_cosine_annealing():
    torch = pytest.importorskip("torch")
    ours = _curve(sched.WarmupCosineLR(_optimizer(), 0, 12, min_lr_ratio=0.2), 12)
    theirs = _torch_curve(torch, lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(
        o, T_max=12, eta_min=0.2 * BASE_LR), 12)
    assert ours == pytest.approx(theirs, rel=1e-6)


def test_warmup_cosine_matches_torch_sequential_lr():
    torch = pytest.importorskip("torch")
    ours = _curve(sched.WarmupCosineLR(_optimizer(), 4, 14), 14)

    def make(o):
        warm = torch.optim.lr_scheduler.LinearLR(o, start_factor=1 / 4, total_iters=3)
        cosine = torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10)
        return torch.optim.lr_scheduler.SequentialLR(o, [warm, cosine], milestones=[4])

    assert ours == pytest.approx(_torch_curve(torch, make, 14), rel=1e-6, abs=1e-12)


# --- composing and resuming ----------------------------------------------------------------------
def test_schedules_drive_every_group_of_any_optimizer():
    p, q = nn.Parameter(tg.zeros(1)), nn.Parameter(tg.zeros(1))
    opt = optim.AdamW([{"params": [p], "lr": 1.0}, {"params": [q], "lr": 0.1}])
    scheduler = sched.WarmupConstantLR(opt, warmup_steps=2)
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([0.5, 0.05])
    assert [g["initial_lr"] for g in opt.param_groups] == [1.0, 0.1]
    scheduler.step()
    assert scheduler.get_last_lr() == pytest.approx([1.0, 0.1])


def test_state_dict_resumes_the_curve_whatever_the_loading_order():
    full = _curve(sched.WarmupCosineLR(_optimizer(), 3, 10), 10)
    opt = _optimizer()
    scheduler = sched.WarmupCosineLR(opt, 3, 10)
    _curve(scheduler, 4)
    saved, saved_opt = scheduler.state_dict(), opt.state_dict()
    assert saved["last_epoch"] == 4 and "optimizer" not in saved
    opt2 = _optimizer()
    opt2.load_state_dict(saved_opt)  # optimizer first, then a fresh scheduler resets the lr ...
    resumed = sched.WarmupCosineLR(opt2, 3, 10)
    resumed.load_state_dict(saved)  # ... and loading the scheduler puts it back
    assert _curve(resumed, 6) == full[4:]


def test_lambda_lr_state_dict_leaves_out_functions():
    saved = sched.LambdaLR(_optimizer(), lambda s: 1.0).state_dict()
    assert "lr_lambdas" not in saved and saved["last_epoch"] == 0


def test_schedule_arguments_are_checked():
    with pytest.raises(ValueError, match=r"total_steps \(5\) must exceed warmup_steps \(5\)"):
        sched.WarmupCosineLR(_optimizer(), 5, 5)
    with pytest.raises(ValueError, match="warmup_steps must be > 0"):
        sched.WarmupInverseSqrtLR(_optimizer(), 0)
    with pytest.raises(KeyError, match="initial_lr"):
        sched.WarmupConstantLR(_optimizer(), 2, last_epoch=3)
