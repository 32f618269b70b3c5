"""Schedules: tensorgrad's Warmup* curves against their formulas and torch's equivalents; PyTorch's
schedulers (built by the same code against both libraries) against torch's over 100 steps with
three parameter groups, resumed with last_epoch and through state_dict, chained, sequenced."""
import math

import numpy as np
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


def test_noam_is_the_papers_formula():
    """lr=1 under NoamLR(512, 4000): update n uses 512^-0.5 min(n^-0.5, n 4000^-1.5)."""
    lrs = _curve(sched.NoamLR(_optimizer(lr=1.0), d_model=512), 12000)
    for n in (1, 2, 100, 3999, 4000, 4001, 8000, 12000):
        assert lrs[n - 1] == pytest.approx(512 ** -0.5 * min(n ** -0.5, n * 4000 ** -1.5),
                                           rel=1e-12)
    assert max(lrs) == lrs[3999] == pytest.approx(7.0e-4, rel=0.01)
    assert sched.NoamLR(_optimizer(lr=2.0), 64, warmup_steps=10).get_last_lr() == \
        pytest.approx([2.0 * 64 ** -0.5 * 10 ** -1.5])


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


# --- PyTorch's schedulers, built with the same code against both libraries -----------------------
GROUP_LRS = (0.5, 0.1, 0.03)

# Each builds one scheduler (or a list of them, all stepped: chaining) from a scheduler module,
# ours or torch.optim.lr_scheduler, so the same keywords run against both; `kw` passes
# last_epoch when resuming.
CASES = {
    "StepLR": lambda S, o, **kw: S.StepLR(o, 7, gamma=0.5, **kw),
    "StepLR default gamma": lambda S, o, **kw: S.StepLR(o, step_size=30, **kw),
    "MultiStepLR repeated": lambda S, o, **kw: S.MultiStepLR(o, milestones=[60, 10, 30, 30],
                                                             gamma=0.5, **kw),
    "ExponentialLR": lambda S, o, **kw: S.ExponentialLR(o, gamma=0.95, **kw),
    "CosineAnnealingLR periodic": lambda S, o, **kw: S.CosineAnnealingLR(o, T_max=30,
                                                                         eta_min=0.01, **kw),
    "CosineAnnealingLR": lambda S, o, **kw: S.CosineAnnealingLR(o, 100, **kw),
    "CosineAnnealingWarmRestarts": lambda S, o, **kw: S.CosineAnnealingWarmRestarts(o, 15, **kw),
    "CosineAnnealingWarmRestarts T_mult": lambda S, o, **kw: S.CosineAnnealingWarmRestarts(
        o, T_0=5, T_mult=2, eta_min=0.001, **kw),
    "LinearLR defaults": lambda S, o, **kw: S.LinearLR(o, **kw),
    "LinearLR decay": lambda S, o, **kw: S.LinearLR(o, start_factor=1.0, end_factor=0.0,
                                                    total_iters=60, **kw),
    "LambdaLR": lambda S, o, **kw: S.LambdaLR(o, lambda s: 0.97 ** s + 0.01 * (s % 5), **kw),
    "OneCycleLR": lambda S, o, **kw: S.OneCycleLR(o, max_lr=[1.0, 0.5, 0.1], total_steps=100,
                                                  **kw),
    "OneCycleLR three-phase linear": lambda S, o, **kw: S.OneCycleLR(
        o, 0.8, epochs=10, steps_per_epoch=10, pct_start=0.25, anneal_strategy="linear",
        three_phase=True, div_factor=10.0, final_div_factor=100.0, **kw),
    "SequentialLR": lambda S, o, **kw: S.SequentialLR(o, [
        S.LinearLR(o, start_factor=0.1, total_iters=10), S.ExponentialLR(o, gamma=0.9),
        S.CosineAnnealingLR(o, T_max=50, eta_min=0.001)], milestones=[10, 40], **kw),
    "chained Exponential + Step": lambda S, o, **kw: [S.ExponentialLR(o, gamma=0.98, **kw),
                                                      S.StepLR(o, 20, gamma=0.5, **kw)],
}


def _sgd(lib):
    """SGD with momentum over one parameter per group (lrs GROUP_LRS), tensorgrad's (lib =
    tensorgrad.nn.optim) or torch's (lib = torch.optim)."""
    if lib is optim:
        params = [nn.Parameter(tg.zeros(1)) for _ in GROUP_LRS]
    else:
        import torch
        params = [torch.zeros(1, requires_grad=True) for _ in GROUP_LRS]
    groups = [{"params": [p], "lr": lr} for p, lr in zip(params, GROUP_LRS)]
    return lib.SGD(groups, lr=0.01, momentum=0.9)


def _as_list(schedulers):
    return schedulers if isinstance(schedulers, list) else [schedulers]


def _trace(opt, schedulers, steps):
    """[lr, momentum] of every group, flat, for each of `steps` optimizer steps."""
    out = []
    for _ in range(steps):
        out.append([v for g in opt.param_groups for v in (g["lr"], g.get("momentum", 0.0))])
        opt.step()
        for s in _as_list(schedulers):
            s.step()
    return out


def _assert_traces_equal(ours, theirs):
    assert len(ours) == len(theirs)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-15), f"step {step}"


@pytest.mark.parametrize("name", CASES)
def test_scheduler_matches_torch_over_100_steps(name):
    torch = pytest.importorskip("torch")
    make = CASES[name]
    opt, topt = _sgd(optim), _sgd(torch.optim)
    ours, theirs = make(sched, opt), make(torch.optim.lr_scheduler, topt)
    _assert_traces_equal(_trace(opt, ours, 100), _trace(topt, theirs, 100))
    for a, b in zip(_as_list(ours), _as_list(theirs)):
        assert a.get_last_lr() == pytest.approx(b.get_last_lr(), rel=1e-9, abs=1e-15)
        assert a.last_epoch == b.last_epoch


def test_one_cycle_cycles_adams_beta1_like_torch():
    torch = pytest.importorskip("torch")
    opt = optim.AdamW([{"params": [nn.Parameter(tg.zeros(1))]}], betas=(0.9, 0.99))
    topt = torch.optim.AdamW([{"params": [torch.zeros(1, requires_grad=True)]}],
                             betas=(0.9, 0.99))
    ours = sched.OneCycleLR(opt, max_lr=0.1, total_steps=50, base_momentum=0.8)
    theirs = torch.optim.lr_scheduler.OneCycleLR(topt, max_lr=0.1, total_steps=50,
                                                 base_momentum=0.8)
    for _ in range(50):
        assert opt.param_groups[0]["lr"] == pytest.approx(topt.param_groups[0]["lr"], rel=1e-9)
        assert opt.param_groups[0]["betas"] == pytest.approx(topt.param_groups[0]["betas"])
        for stepper in (opt, topt, ours, theirs):
            stepper.step()
    with pytest.raises(ValueError, match="stepped 51 times, past total_steps=50"):
        ours.step()


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR repeated", "ExponentialLR",
                                  "CosineAnnealingLR periodic", "LinearLR decay", "LambdaLR",
                                  "OneCycleLR", "chained Exponential + Step"])
def test_resuming_with_last_epoch_matches_torch(name):
    """Build at last_epoch=23 over an optimizer whose groups hold what 23 torch steps left
    there (as after loading its state): the next 60 steps agree with torch's."""
    torch = pytest.importorskip("torch")
    make, k = CASES[name], 23
    first = _sgd(torch.optim)
    _trace(first, make(torch.optim.lr_scheduler, first), k)
    saved = [{key: v for key, v in g.items() if key != "params"} for g in first.param_groups]
    opt, topt = _sgd(optim), _sgd(torch.optim)
    for o in (opt, topt):
        for group, values in zip(o.param_groups, saved):
            group.update(values)
    ours = make(sched, opt, last_epoch=k)
    theirs = make(torch.optim.lr_scheduler, topt, last_epoch=k)
    _assert_traces_equal(_trace(opt, ours, 60), _trace(topt, theirs, 60))


@pytest.mark.parametrize("name", CASES)
def test_state_dict_resumes_every_scheduler(name):
    """40 steps, save optimizer and scheduler, load both into fresh ones, 60 more steps: the
    same lrs as 100 uninterrupted steps; the state is plain values (no functions)."""
    make = CASES[name]
    opt = _sgd(optim)
    whole = _trace(opt, make(sched, opt), 100)
    opt = _sgd(optim)
    schedulers = _as_list(make(sched, opt))
    _trace(opt, schedulers, 40)
    saved_opt, saved = opt.state_dict(), [s.state_dict() for s in schedulers]
    for state in saved:
        assert "optimizer" not in state and not any(callable(v) for v in state.values())
    opt = _sgd(optim)
    fresh = _as_list(make(sched, opt))
    opt.load_state_dict(saved_opt)
    for s, state in zip(fresh, saved):
        s.load_state_dict(state)
    _assert_traces_equal(_trace(opt, fresh, 60), whole[40:])


def _plateau_metrics():
    """100 evaluations: improving, then flat with noise, then improving a little again."""
    rng = np.random.default_rng(0)
    curve = [1.0 / (1 + s) for s in range(30)] + [0.033] * 40 + [0.03 - 1e-4 * s for s in range(30)]
    return [float(v + 1e-4 * rng.standard_normal()) for v in curve]


@pytest.mark.parametrize("options", [
    dict(),
    dict(mode="max", factor=0.5, patience=3, threshold=0.01, threshold_mode="abs"),
    dict(factor=0.5, patience=2, cooldown=3, min_lr=[0.01, 0.005, 0.0]),
    dict(factor=0.2, patience=0, threshold=0.0, eps=1e-3),
])
def test_reduce_lr_on_plateau_matches_torch(options):
    torch = pytest.importorskip("torch")
    opt, topt = _sgd(optim), _sgd(torch.optim)
    ours = sched.ReduceLROnPlateau(opt, **options)
    theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **options)
    metrics = _plateau_metrics()
    if options.get("mode") == "max":
        metrics = [-m for m in metrics]
    for step, metric in enumerate(metrics):
        opt.step()
        topt.step()
        ours.step(metric)
        theirs.step(torch.tensor(metric))
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12), step
        assert (ours.num_bad_epochs, ours.cooldown_counter) == \
            (theirs.num_bad_epochs, theirs.cooldown_counter), step
    assert ours.get_last_lr() != list(GROUP_LRS)  # it did reduce
    resumed = sched.ReduceLROnPlateau(_sgd(optim), **options)
    resumed.load_state_dict(ours.state_dict())
    assert resumed.best == ours.best and resumed.last_epoch == 100


def test_pytorch_schedulers_check_their_arguments():
    opt = _sgd(optim)
    with pytest.raises(ValueError, match="0 < start_factor <= 1"):
        sched.LinearLR(opt, start_factor=0.0)
    with pytest.raises(ValueError, match="total_steps, or epochs and steps_per_epoch"):
        sched.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="expected 3 values for max_lr"):
        sched.OneCycleLR(opt, max_lr=[1.0, 2.0], total_steps=10)
    with pytest.raises(ValueError, match="anneal_strategy must be 'cos' or 'linear'"):
        sched.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy="step")
    plain = optim.SGD([nn.Parameter(tg.zeros(1))], lr=0.1)
    del plain.defaults["momentum"]
    with pytest.raises(ValueError, match="needs an optimizer with momentum or betas"):
        sched.OneCycleLR(plain, max_lr=1.0, total_steps=10)
    with pytest.raises(ValueError, match="factor must be < 1"):
        sched.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="2 schedulers need 1 milestones, got 0"):
        sched.SequentialLR(opt, [sched.StepLR(opt, 3), sched.StepLR(opt, 4)], milestones=[])
    with pytest.raises(ValueError, match="drives another optimizer"):
        sched.SequentialLR(opt, [sched.StepLR(_sgd(optim), 3)], milestones=[])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        sched.SequentialLR(opt, [sched.ReduceLROnPlateau(opt)], milestones=[])
    with pytest.raises(TypeError, match="expected an Optimizer"):
        sched.StepLR([nn.Parameter(tg.zeros(1))], 3)


def test_reduce_lr_on_plateau_covers_groups_added_later():
    opt = _sgd(optim)
    scheduler = sched.ReduceLROnPlateau(opt, patience=0, min_lr=0.02)
    opt.add_param_group({"params": [nn.Parameter(tg.zeros(1))], "lr": 1.0})
    scheduler.step(1.0)
    scheduler.step(2.0)  # worse: every group drops, the new one too, none below min_lr
    assert scheduler.get_last_lr() == pytest.approx([0.05, 0.02, 0.02, 0.1])
    listed = sched.ReduceLROnPlateau(opt, patience=0, min_lr=[0.0] * 4)
    opt.add_param_group({"params": [nn.Parameter(tg.zeros(1))], "lr": 1.0})
    listed.step(1.0)
    with pytest.raises(RuntimeError, match="5 parameter groups but min_lr lists 4"):
        listed.step(2.0)


def test_warm_restarts_jump_to_any_epoch_as_torch():
    torch = pytest.importorskip("torch")
    ours = sched.CosineAnnealingWarmRestarts(_optimizer(), T_0=3, T_mult=2, eta_min=0.01)
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=BASE_LR)
    theirs = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2,
                                                                   eta_min=0.01)
    for epoch in (0.5, 2.9, 3, 7.25, 21, 4, 100.5):
        ours.step(epoch)
        theirs.step(epoch)
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)
        assert ours.last_epoch == theirs.last_epoch
    with pytest.raises(ValueError, match="T_0"):
        sched.CosineAnnealingWarmRestarts(_optimizer(), T_0=0)
    with pytest.raises(ValueError, match="non-negative epoch"):
        ours.step(-1)
