"""Normalisation across the batch and groups of channels, and vector normalisation: batch_norm,
group_norm, instance_norm, normalize.

All composites (mean, variance, rsqrt, clamp), so their gradients of any order come from the
ops they are built of. batch_norm also updates the caller's running statistics in place, under
no_grad, as PyTorch's does: an exponential average with `momentum` of the batch mean and of the
*unbiased* batch variance (normalisation itself uses the biased one).
"""
import math

from ..autograd import no_grad
from .operands import require_float
from .select import where


def _channel_shape(x, op):
    if x.ndim < 2:
        raise ValueError(f"{op}: expected an input (N, C, *) with at least 2 dimensions, got "
                         f"shape {x.shape}")
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _affine(y, weight, bias, shape, channels, op):
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and p.shape != (channels,):
            raise ValueError(f"{op}: {name} must have shape ({channels},), got {p.shape}")
    if weight is not None:
        y = y * weight.reshape(shape)
    return y + bias.reshape(shape) if bias is not None else y


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise each channel of (N, C, *) over the batch and spatial dims.

    training: use the batch's statistics and, when running_mean / running_var (C,) are given,
    move them by `momentum` towards the batch mean and unbiased variance, in place. Otherwise
    normalise with the running statistics. weight, bias: (C,) or None.
    """
    require_float(input, "batch_norm")
    shape = _channel_shape(input, "batch_norm")
    channels = input.shape[1]
    for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
        if stat is not None and stat.shape != (channels,):
            raise ValueError(f"batch_norm: {name} must have shape ({channels},) for input of "
                             f"shape {input.shape}, got {stat.shape}")
    if training:
        dims = (0,) + tuple(range(2, input.ndim))
        count = input.numel() // max(channels, 1)
        if count <= 1:
            raise ValueError(f"batch_norm: expected more than 1 value per channel when "
                             f"training, got input of shape {input.shape}")
        mean = input.mean(dims, keepdim=True)
        centered = input - mean
        var = (centered * centered).mean(dims, keepdim=True)
        with no_grad():
            if running_mean is not None:
                running_mean.mul_(1.0 - momentum).add_(mean.detach().reshape(channels),
                                                       alpha=momentum)
            if running_var is not None:
                unbiased = var.detach().reshape(channels) * (count / (count - 1))
                running_var.mul_(1.0 - momentum).add_(unbiased, alpha=momentum)
        y = centered * (var + eps).rsqrt()
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: running_mean and running_var are needed when not "
                             "training")
        mean, var = running_mean.to(input.dtype), running_var.to(input.dtype)
        y = (input - mean.reshape(shape)) * (var.reshape(shape) + eps).rsqrt()
    return _affine(y, weight, bias, shape, channels, "batch_norm")


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise (N, C, *) over each group of C / num_groups channels (and the spatial dims),
    per sample; then scale and shift per channel by weight, bias (C,)."""
    require_float(input, "group_norm")
    shape = _channel_shape(input, "group_norm")
    n, channels = input.shape[:2]
    if num_groups < 1 or channels % num_groups:
        raise ValueError(f"group_norm: {channels} channels cannot be split into num_groups="
                         f"{num_groups} groups of equal size")
    grouped = input.reshape(n, num_groups, -1)  # (N, G, C/G * spatial)
    centered = grouped - grouped.mean(-1, keepdim=True)
    var = (centered * centered).mean(-1, keepdim=True)
    y = (centered * (var + eps).rsqrt()).reshape(input.shape)
    return _affine(y, weight, bias, shape, channels, "group_norm")


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each channel of each sample of (N, C, *) over its spatial dims. With running
    statistics and use_input_stats, they are updated with the batch average of the
    per-sample statistics; use_input_stats=False normalises with them instead."""
    shape = _channel_shape(input, "instance_norm")
    n, channels = input.shape[:2]
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    # As a batch norm of one "batch" holding N * C channels (PyTorch's own reduction).
    folded = input.reshape((1, n * channels) + input.shape[2:])
    stats = [None if s is None else s.repeat(n).clone() for s in (running_mean, running_var)]
    y = batch_norm(folded, stats[0], stats[1], training=True, momentum=momentum, eps=eps)
    with no_grad():
        for running, folded_stat in zip((running_mean, running_var), stats):
            if running is not None:
                running.copy_(folded_stat.reshape(n, channels).mean(0))
    return _affine(y.reshape(input.shape), weight, bias, shape, channels, "instance_norm")


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(||input||_p, eps) along dim: unit p-norm vectors (zero vectors stay zero).

    The clamp is taken on the p-th power of the norm (the same value), so a zero vector gets a
    zero gradient rather than NaN, as in PyTorch.
    """
    require_float(input, "normalize")
    if p == float("inf"):
        norm = input.abs().amax(dim, keepdim=True).clamp(min=eps)
    elif p == 2:
        norm = (input * input).sum(dim, keepdim=True).clamp(min=eps * eps).sqrt()
    elif p == 0:  # the count of non-zeros: a constant
        norm = (input != 0).sum(dim, keepdim=True).to(input.dtype).clamp(min=eps)
    elif p >= 1:
        norm = (input.abs() ** p).sum(dim, keepdim=True).clamp(min=eps ** p) ** (1.0 / p)
    else:  # |x|^p has an infinite slope at 0: zeros take their value (0, or inf for p < 0) aside
        size, zero = input.abs(), input == 0
        powers = where(zero, 0.0 if p > 0 else math.inf, where(zero, 1.0, size) ** p)
        norm = (powers.sum(dim, keepdim=True) ** (1.0 / p)).clamp(min=eps)
    return input / norm
