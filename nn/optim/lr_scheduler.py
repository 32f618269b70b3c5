"""Learning-rate schedules with PyTorch's names, signatures and curves
(`torch.optim.lr_scheduler`), plus tensorgrad's Warmup* schedules (warmup.py).

Construct one over an optimizer (it sets the lr of step 0) and call `step()` after each
`optimizer.step()`; ReduceLROnPlateau's step takes the metric it watches. `get_last_lr()` gives
the lrs last set; `state_dict()` / `load_state_dict()` save and resume a schedule. The base class
and the two kinds of schedule (closed form, chainable) are described in scheduler.py.
"""
import math
from bisect import bisect_right

from .scheduler import LRScheduler
from .warmup import (  # noqa: F401  (re-exported)
    WarmupConstantLR, WarmupCosineLR, WarmupInverseSqrtLR, WarmupLinearLR,
)

__all__ = ["LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR", "LinearLR",
           "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "SequentialLR", "OneCycleLR",
           "ReduceLROnPlateau", "WarmupConstantLR", "WarmupLinearLR", "WarmupCosineLR",
           "WarmupInverseSqrtLR", "NoamLR"]


def _per_group(name, optimizer, value):
    """One value per parameter group: a list of them, or one for all."""
    groups = len(optimizer.param_groups)
    values = list(value) if isinstance(value, (list, tuple)) else [value] * groups
    if len(values) != groups:
        raise ValueError(f"expected {groups} values for {name} (one per parameter group), got "
                         f"{len(values)}")
    return values


# --- closed form ---------------------------------------------------------------------------------
class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(last_epoch); a list gives one function per group."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        groups = len(optimizer.param_groups)
        lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * groups
        if len(lambdas) != groups:
            raise ValueError(f"LambdaLR: got {len(lambdas)} lr_lambdas for {groups} parameter "
                             "groups")
        self.lr_lambdas = lambdas
        super().__init__(optimizer, last_epoch)

    def _closed_form(self):
        return [base * fn(self.last_epoch) for base, fn in zip(self.base_lrs, self.lr_lambdas)]


# --- chainable: each step rescales the current lr -------------------------------------------------
class StepLR(LRScheduler):
    """lr = initial_lr * gamma ** (last_epoch // step_size): multiplied by gamma every
    step_size steps."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _closed_form(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiplied by gamma at each milestone step (a milestone listed twice: by gamma ** 2)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones, self.gamma = sorted(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        hits = self.milestones.count(self.last_epoch)
        return [lr * self.gamma ** hits for lr in self._current_lrs()]

    def _closed_form(self):
        passed = bisect_right(self.milestones, self.last_epoch)
        return [base * self.gamma ** passed for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr = initial_lr * gamma ** last_epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._initial:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _closed_form(self):
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class LinearLR(LRScheduler):
    """The lr's multiplier goes in a straight line from start_factor (step 0) to end_factor
    (step total_iters), then stays."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1):
        if not 0.0 < start_factor <= 1.0 or not 0.0 <= end_factor <= 1.0:
            raise ValueError(f"LinearLR: expected 0 < start_factor <= 1 and 0 <= end_factor <= "
                             f"1, got {start_factor} and {end_factor}")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._current_lrs()]
        if self._initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        # factor(t) / factor(t - 1), with factor(t) = start + (end - start) t / total_iters
        slope = self.end_factor - self.start_factor
        ratio = 1.0 + slope / (self.total_iters * self.start_factor + (self.last_epoch - 1) * slope)
        return [lr * ratio for lr in self._current_lrs()]

    def _closed_form(self):
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        factor = self.start_factor + (self.end_factor - self.start_factor) * done
        return [base * factor for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (initial_lr - eta_min) (1 + cos(pi last_epoch / T_max)) / 2: half a cosine
    down to eta_min at step T_max, back up by 2 T_max, and so on (SGDR without restarts)."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        t, period, low = self.last_epoch, self.T_max, self.eta_min
        if self._initial:
            return self._current_lrs()
        if (t - 1 - period) % (2 * period) == 0:  # leaving the bottom: the ratio below is 0/0
            rise = (1 - math.cos(math.pi / period)) / 2
            lrs = self._current_lrs()
            return [lr + (base - low) * rise for lr, base in zip(lrs, self.base_lrs)]
        ratio = (1 + math.cos(math.pi * t / period)) / (1 + math.cos(math.pi * (t - 1) / period))
        return [low + (lr - low) * ratio for lr in self._current_lrs()]

    def _closed_form(self):
        cosine = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base - self.eta_min) * cosine for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (Loshchilov & Hutter, 2017): lr = eta_min + (initial_lr - eta_min)
    (1 + cos(pi T_cur / T_i)) / 2, where T_cur counts the steps since the last restart and the
    i-th period lasts T_i = T_0 T_mult^i steps. step(epoch) may jump to any (fractional) epoch,
    as PyTorch's does."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"CosineAnnealingWarmRestarts: expected a positive integer T_0, "
                             f"got {T_0!r}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: expected an integer T_mult >= 1, "
                             f"got {T_mult!r}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def _closed_form(self):
        cosine = (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
        return [self.eta_min + (base - self.eta_min) * cosine for base in self.base_lrs]

    def step(self, epoch=None):
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur, self.T_i = self.T_cur - self.T_i, self.T_i * self.T_mult
        elif epoch < 0:
            raise ValueError(f"CosineAnnealingWarmRestarts: expected a non-negative epoch, "
                             f"got {epoch}")
        elif epoch < self.T_0:
            self.T_i, self.T_cur = self.T_0, epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:  # the period epoch falls in: T_0 (T_mult^n - 1) / (T_mult - 1) <= epoch
            n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult ** n
        self.last_epoch = math.floor(epoch)
        self._apply(self._closed_form())

    def _restart(self):
        self.T_i, self.T_cur = self.T_0, 0
        super()._restart()


# --- composed, cyclic and metric-driven ----------------------------------------------------------
class SequentialLR(LRScheduler):
    """schedulers[0] until milestones[0], then schedulers[1] from its own step 0, and so on
    (e.g. LinearLR warm-up then CosineAnnealingLR). The schedulers must drive `optimizer`."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        schedulers, milestones = list(schedulers), list(milestones)
        if not schedulers:
            raise ValueError("SequentialLR: expected at least one scheduler")
        for i, s in enumerate(schedulers):
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(f"SequentialLR: schedulers[{i}] is a ReduceLROnPlateau, whose "
                                 "step needs a metric; it cannot be sequenced")
            if getattr(s, "optimizer", None) is not optimizer:
                raise ValueError(f"SequentialLR: schedulers[{i}] ({type(s).__name__}) drives "
                                 "another optimizer")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: {len(schedulers)} schedulers need "
                             f"{len(schedulers) - 1} milestones, got {len(milestones)}")
        self.optimizer, self._schedulers, self._milestones = optimizer, schedulers, milestones
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch + 1
        # Each scheduler's constructor already took its step 0: start from the initial lrs
        # and let the first one take it again.
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self._undo_initial_step()
        first = schedulers[bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def _undo_initial_step(self):
        for s in self._schedulers:
            s._undo_initial_step()

    def step(self):
        self.last_epoch += 1
        i = bisect_right(self._milestones, self.last_epoch)
        current = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            current._restart()
        else:
            current.step()
        self._last_lr = current.get_last_lr()

    def state_dict(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        state = dict(state_dict)
        for s, saved in zip(self._schedulers, state.pop("_schedulers")):
            s.load_state_dict(saved)
        super().load_state_dict(state)


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin, 2018): the lr climbs from max_lr / div_factor to
    max_lr over the first pct_start of total_steps, then anneals to initial_lr /
    final_div_factor (three_phase: back down to the start first, then the final anneal).
    With cycle_momentum the momentum (SGD's, or Adam's beta1) moves the opposite way between
    max_momentum and base_momentum. anneal_strategy: "cos" or "linear". Give total_steps, or
    epochs and steps_per_epoch. It writes initial_lr, max_lr, min_lr (and the momenta) into
    each group, as PyTorch does. Stepping past total_steps is an error."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1):
        if total_steps is None:
            if not all(isinstance(n, int) and n > 0 for n in (epochs, steps_per_epoch)):
                raise ValueError(f"OneCycleLR: give total_steps, or epochs and steps_per_epoch "
                                 f"as positive integers; got total_steps=None, epochs={epochs},"
                                 f" steps_per_epoch={steps_per_epoch}")
            total_steps = epochs * steps_per_epoch
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f"OneCycleLR: total_steps must be a positive integer, got "
                             f"{total_steps}")
        if not 0.0 <= pct_start <= 1.0:
            raise ValueError(f"OneCycleLR: pct_start must be in [0, 1], got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        self.total_steps, self.anneal_strategy = total_steps, anneal_strategy
        rise = float(pct_start * total_steps) - 1  # the step at which max_lr is reached
        # Each phase: the step it ends at, then the group keys of its lr and momentum ends.
        if three_phase:
            self._phases = [(rise, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (2 * rise, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                            (total_steps - 1, "initial_lr", "min_lr", "max_momentum",
                             "max_momentum")]
        else:
            self._phases = [(rise, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (total_steps - 1, "max_lr", "min_lr", "base_momentum",
                             "max_momentum")]
        groups = optimizer.param_groups
        if last_epoch == -1:
            for group, peak in zip(groups, _per_group("max_lr", optimizer, max_lr)):
                group.update(initial_lr=peak / div_factor, max_lr=peak,
                             min_lr=peak / div_factor / final_div_factor)
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(f"OneCycleLR: cycle_momentum=True needs an optimizer with "
                                 f"momentum or betas; {type(optimizer).__name__} has neither")
            self.use_beta1 = "betas" in optimizer.defaults
            if last_epoch == -1:
                highs = _per_group("max_momentum", optimizer, max_momentum)
                lows = _per_group("base_momentum", optimizer, base_momentum)
                for group, high, low in zip(groups, highs, lows):
                    group.update(max_momentum=high, base_momentum=low)
                    self._set_momentum(group, high)
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group, value):
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start, end, pct):
        if self.anneal_strategy == "cos":
            return end + (start - end) * (1 + math.cos(math.pi * pct)) / 2
        return start + (end - start) * pct

    def _closed_form(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {step} times, past total_steps="
                             f"{self.total_steps}")
        (_, lr_from, lr_to, m_from, m_to), pct = self._phase(step)
        lrs = []
        for group in self.optimizer.param_groups:
            lrs.append(self._anneal(group[lr_from], group[lr_to], pct))
            if self.cycle_momentum:
                self._set_momentum(group, self._anneal(group[m_from], group[m_to], pct))
        return lrs

    def _phase(self, step):
        """The phase that step falls in, and how far through it (0 -> 1) it is."""
        start = 0.0
        for i, phase in enumerate(self._phases):
            end = phase[0]
            if step <= end or i == len(self._phases) - 1:
                return phase, (step - start) / (end - start)
            start = end


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by `factor` when a metric has stopped improving: `step(metric)` after
    each evaluation. mode "min" (a loss) or "max" (an accuracy). An improvement is beating the
    best by threshold, relative (best * (1 -/+ threshold)) or absolute (best -/+ threshold);
    after more than `patience` steps without one the lr drops (not below min_lr, a number or
    one per group; drops smaller than eps are skipped), then `cooldown` steps pass before bad
    steps count again."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be < 1, got {factor}")
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: mode must be 'min' or 'max' and "
                             f"threshold_mode 'rel' or 'abs', got {mode!r} and "
                             f"{threshold_mode!r}")
        self.optimizer = optimizer
        self.mode, self.factor, self.patience, self.cooldown = mode, factor, patience, cooldown
        self.threshold, self.threshold_mode, self.eps = threshold, threshold_mode, eps
        self.min_lrs = _per_group("min_lr", optimizer, min_lr)
        self.default_min_lr = None if isinstance(min_lr, (list, tuple)) else min_lr
        self.last_epoch = 0
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = self.cooldown_counter = 0
        self._last_lr = self._current_lrs()

    def _is_better(self, value):
        sign = 1.0 if self.mode == "max" else -1.0
        if self.threshold_mode == "rel":
            return sign * value > sign * self.best * (1.0 + sign * self.threshold)
        return sign * value > sign * self.best + self.threshold

    def step(self, metrics):
        value = float(metrics)
        self.last_epoch += 1
        if self._is_better(value):
            self.best, self.num_bad_epochs = value, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:  # bad steps in the cooldown do not count
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._match_groups()
            for group, floor in zip(self.optimizer.param_groups, self.min_lrs):
                lowered = max(group["lr"] * self.factor, floor)
                if group["lr"] - lowered > self.eps:
                    group["lr"] = lowered
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = self._current_lrs()

    def _match_groups(self):
        """A group added to the optimizer since: it takes a single min_lr; a list cannot
        say what it should be."""
        groups = len(self.optimizer.param_groups)
        if len(self.min_lrs) == groups:
            return
        if self.default_min_lr is None:
            raise RuntimeError(f"ReduceLROnPlateau: the optimizer has {groups} parameter groups "
                               f"but min_lr lists {len(self.min_lrs)}; set min_lrs to one per "
                               "group")
        self.min_lrs = [self.default_min_lr] * groups


class NoamLR(WarmupInverseSqrtLR):
    """The "Noam" schedule of the original Transformer (Vaswani et al., 2017, eq. 3; named for
    Noam Shazeer in tensor2tensor and The Annotated Transformer): the lr of update n = step + 1 is
        initial_lr * d_model^-0.5 * min(n^-0.5, n * warmup_steps^-1.5),
    rising linearly for warmup_steps updates to d_model^-0.5 * warmup_steps^-0.5 (7.0e-4 for
    the base model's 512 and 4000) and falling as 1/sqrt(n) after. The optimizer's lr is the
    paper's (and The Annotated Transformer's `factor`): 1.0 reproduces the paper.
    WarmupInverseSqrtLR with d_model required."""

    def __init__(self, optimizer, d_model, warmup_steps=4000, last_epoch=-1):
        super().__init__(optimizer, warmup_steps, d_model=d_model, last_epoch=last_epoch)
