"""The learning-rate scheduler base class (`lr_scheduler.LRScheduler`, as in PyTorch).

A scheduler writes every parameter group's group["lr"], so it works with any optimizer.
PyTorch's convention: constructing a scheduler takes step 0; call `scheduler.step()` after each
`optimizer.step()`. `last_epoch` counts the scheduler steps taken, and the lr it sets is the one
the next optimizer step uses.

Two kinds, as in PyTorch:
- closed form: the lr is a function of the step count and the group's initial_lr (LambdaLR,
  OneCycleLR, the Warmup* schedules): `factor(step)` (lr = initial_lr * factor) or `_closed_form()`;
- chainable (StepLR, MultiStepLR, ExponentialLR, LinearLR, CosineAnnealingLR): `get_lr()`
  rescales each group's current lr, so two of them stepping one optimizer compose, as PyTorch's
  do; their `_closed_form()` is what SequentialLR restarts them with.
"""
from .optimizer import Optimizer


class LRScheduler:
    """Base class: subclasses give `factor(step)`, `_closed_form()` or `get_lr()`."""

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: expected an Optimizer, got "
                            f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"{type(self).__name__}: resuming at last_epoch={last_epoch} "
                               f"needs 'initial_lr' in every parameter group (group {i} has "
                               "none); load the optimizer's state_dict first")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self):
        """The constructor's step (to step 0, or one past a resumed last_epoch). Chainable
        schedules leave the lr as it is then, as PyTorch's do."""
        self._initial = True
        try:
            self.step()
        finally:
            self._initial = False

    def factor(self, step):
        raise NotImplementedError(f"{type(self).__name__} defines no factor(step)")

    def _closed_form(self):
        """The lrs at step last_epoch from the initial lrs alone."""
        return [base * self.factor(self.last_epoch) for base in self.base_lrs]

    def get_lr(self):
        """The lrs for step last_epoch, one per group (step() applies them)."""
        return self._closed_form()

    def _current_lrs(self):
        return [group["lr"] for group in self.optimizer.param_groups]

    def step(self):
        self.last_epoch += 1
        self._apply(self.get_lr())

    def _restart(self):
        """Jump to step 0 of this schedule (SequentialLR, at a milestone)."""
        self.last_epoch = 0
        self._apply(self._closed_form())

    def _undo_initial_step(self):
        """SequentialLR takes over a scheduler's constructor step."""
        self.last_epoch -= 1

    def _apply(self, lrs):
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = list(lrs)

    def get_last_lr(self):
        """The learning rates the last step() set, one per group."""
        return list(self._last_lr)

    def state_dict(self):
        """Plain values only: last_epoch, base_lrs, the settings (no optimizer, no functions)."""
        return {k: v for k, v in self.__dict__.items()
                if k not in ("optimizer", "_initial") and not callable(v)
                and not (isinstance(v, list) and any(callable(x) for x in v))}

    def load_state_dict(self, state_dict):
        """Restore the schedule's position and re-apply its lr, so resuming does not depend on
        whether the optimizer's state was loaded before or after the scheduler was built."""
        self.__dict__.update(state_dict)
        self._apply(self._last_lr)
