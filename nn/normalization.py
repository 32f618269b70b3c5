"""Normalisation layers over channels: BatchNorm1d/2d/3d and GroupNorm.

BatchNorm keeps PyTorch's buffers (running_mean, running_var, num_batches_tracked) and rules:
in training it normalises with the batch's statistics and moves the running ones by `momentum`
(momentum=None: a cumulative average over the batches seen), in eval it uses the running ones;
without track_running_stats it always uses the batch's.
"""
import tensorgrad as tg

from . import functional as F
from . import init
from .module import Module, Parameter


class _BatchNorm(Module):
    dims = ()  # the input dimensionalities each subclass accepts

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = self.bias = None
        if affine:
            self.weight = Parameter(tg.ones(num_features, device=device, dtype=dtype))
            self.bias = Parameter(tg.zeros(num_features, device=device, dtype=dtype))
        if track_running_stats:
            self.register_buffer("running_mean", tg.zeros(num_features, device=device,
                                                          dtype=dtype))
            self.register_buffer("running_var", tg.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tg.tensor(0, dtype=tg.int64,
                                                                  device=device))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1.0)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def forward(self, input):
        if input.ndim not in self.dims:
            wanted = " or ".join(f"{d}D" for d in self.dims)
            raise ValueError(f"{type(self).__name__}: expected {wanted} input (got "
                             f"{input.ndim}D input of shape {input.shape})")
        if input.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}: expected {self.num_features} channels in "
                             f"dim 1, got input of shape {input.shape}")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with tg.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / int(self.num_batches_tracked.item())
        use_batch_stats = self.training or not self.track_running_stats
        # Running statistics are updated only while training with them tracked.
        tracked = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if tracked else None,
                            self.running_var if tracked else None, self.weight, self.bias,
                            use_batch_stats, factor, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch norm of (N, C) or (N, C, L) per channel."""
    dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm of (N, C, H, W) per channel."""
    dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch norm of (N, C, D, H, W) per channel."""
    dims = (5,)


class GroupNorm(Module):
    """Normalise (N, C, *) over groups of C / num_groups channels per sample (Wu & He, 2018);
    then weight (ones) and bias (zeros) per channel when affine."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None):
        super().__init__()
        if num_groups < 1 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels={num_channels} must be divisible by "
                             f"num_groups={num_groups}")
        self.num_groups, self.num_channels, self.eps, self.affine = (num_groups, num_channels,
                                                                     eps, affine)
        self.weight = self.bias = None
        if affine:
            self.weight = Parameter(tg.ones(num_channels, device=device, dtype=dtype))
            self.bias = Parameter(tg.zeros(num_channels, device=device, dtype=dtype))

    def forward(self, input):
        if input.ndim < 2 or input.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm: expected input (N, {self.num_channels}, *), got shape "
                             f"{input.shape}")
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"
