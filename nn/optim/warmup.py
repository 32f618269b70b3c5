"""tensorgrad's own warm-up schedules (closed form: initial_lr * factor(step)), re-exported by
`lr_scheduler`: linear warm-up then constant, linear or cosine decay, and the original
Transformer's inverse square root."""
import math

from .scheduler import LRScheduler


def _check_warmup(name, warmup_steps, total_steps=None):
    if warmup_steps < 0:
        raise ValueError(f"{name}: warmup_steps must be >= 0, got {warmup_steps}")
    if total_steps is not None and total_steps <= warmup_steps:
        raise ValueError(f"{name}: total_steps ({total_steps}) must exceed warmup_steps "
                         f"({warmup_steps})")


def _warmup(step, warmup_steps):
    """Linear warmup: (step + 1) / warmup_steps, so the first update already moves and update
    number warmup_steps uses the full lr (torch's LinearLR(1/w, 1, total_iters=w-1))."""
    return (step + 1) / warmup_steps


class WarmupConstantLR(LRScheduler):
    """Linear warmup over warmup_steps, then the initial lr (warmup_steps=0: constant)."""

    def __init__(self, optimizer, warmup_steps=0, last_epoch=-1):
        _check_warmup("WarmupConstantLR", warmup_steps)
        self.warmup_steps = warmup_steps
        super().__init__(optimizer, last_epoch)

    def factor(self, step):
        return _warmup(step, self.warmup_steps) if step < self.warmup_steps else 1.0


class _WarmupDecayLR(LRScheduler):
    """Linear warmup to the initial lr, then a decay from it at step warmup_steps down to
    min_lr_ratio * initial lr at total_steps, where it stays; subclasses give the curve."""

    def __init__(self, optimizer, warmup_steps, total_steps, min_lr_ratio=0.0, last_epoch=-1):
        _check_warmup(type(self).__name__, warmup_steps, total_steps)
        self.warmup_steps, self.total_steps = warmup_steps, total_steps
        self.min_lr_ratio = min_lr_ratio
        super().__init__(optimizer, last_epoch)

    def factor(self, step):
        if step < self.warmup_steps:
            return _warmup(step, self.warmup_steps)
        progress = min(1.0, (step - self.warmup_steps) / (self.total_steps - self.warmup_steps))
        return self.min_lr_ratio + (1.0 - self.min_lr_ratio) * self.remaining(progress)

    def remaining(self, progress):
        """The share of the decay still to go after `progress` (0 -> 1) of it."""
        raise NotImplementedError


class WarmupLinearLR(_WarmupDecayLR):
    """Linear warmup, then a straight line down to min_lr_ratio * initial lr at total_steps
    (BERT's schedule)."""

    def remaining(self, progress):
        return 1.0 - progress


class WarmupCosineLR(_WarmupDecayLR):
    """Linear warmup, then half a cosine down to min_lr_ratio * initial lr at total_steps
    (GPT-style training)."""

    def remaining(self, progress):
        return 0.5 * (1.0 + math.cos(math.pi * progress))


class WarmupInverseSqrtLR(LRScheduler):
    """The original Transformer's schedule (Vaswani et al., 2017, eq. 3), with n = step + 1:
        factor = d_model^-0.5 * min(n^-0.5, n * warmup_steps^-1.5)
    a linear rise for warmup_steps updates, then decay as 1/sqrt(n); the optimizer's lr scales
    it (the paper's lr is 1). Without d_model the factor is normalised to peak at 1, so the
    optimizer's lr is the peak lr."""

    def __init__(self, optimizer, warmup_steps, d_model=None, last_epoch=-1):
        _check_warmup("WarmupInverseSqrtLR", warmup_steps)
        if warmup_steps == 0:
            raise ValueError("WarmupInverseSqrtLR: warmup_steps must be > 0")
        self.warmup_steps, self.d_model = warmup_steps, d_model
        super().__init__(optimizer, last_epoch)

    def factor(self, step):
        n = step + 1
        scale = self.d_model ** -0.5 if self.d_model else self.warmup_steps ** 0.5
        return scale * min(n ** -0.5, n * self.warmup_steps ** -1.5)
