"""Functional forms (`import tensorgrad.nn.functional as F`), PyTorch's names and signatures.

Most are tensorgrad ops re-exported under their torch.nn.functional names; the rest are
composites of those ops and get their gradients for free.
"""
import tensorgrad as tg
from tensorgrad import (  # noqa: F401  (re-exported)
    cross_entropy, dropout, embedding, gelu, layer_norm, linear, log_softmax, one_hot, pad, relu,
    rms_norm, sigmoid, silu, softmax, tanh,
)
from tensorgrad import attention_weights, scaled_dot_product_attention  # noqa: F401
from tensorgrad import (  # noqa: F401
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d, adaptive_max_pool2d, avg_pool1d,
    avg_pool2d, avg_pool3d, batch_norm, conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,
    group_norm, instance_norm, max_pool1d, max_pool2d, max_pool3d,
)
from tensorgrad.ops.conv import fold, unfold  # noqa: F401  (not top-level: Tensor.unfold differs)
from tensorgrad.ops.channel_norm import normalize  # noqa: F401
from tensorgrad.ops.resize import interpolate  # noqa: F401

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(loss, reduction, op):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def _same_shape(input, target, op):
    # PyTorch broadcasts here with only a warning; a silently broadcast loss is almost always a
    # bug ((N,) against (N, 1) makes an (N, N) loss), so it is an error.
    if input.shape != target.shape:
        raise ValueError(f"{op}: input and target must have the same shape, got {input.shape} "
                         f"and {target.shape}")


def mse_loss(input, target, reduction="mean"):
    """Mean squared error: mean((input - target)^2). Shapes must match."""
    _same_shape(input, target, "mse_loss")
    diff = input - target
    return _reduce(diff * diff, reduction, "mse_loss")


def _softplus(x):
    """log(1 + exp(x)) as logsumexp(0, x): stable for large |x|, and its gradient is
    sigmoid(x) everywhere (formulas built from |x| get the wrong slope at exactly 0)."""
    return tg.logsumexp(tg.stack([tg.zeros_like(x), x], dim=-1), dim=-1)


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean",
                                     pos_weight=None):
    """Binary cross-entropy on logits: -[pw * t * log sigmoid(x) + (1 - t) * log(1 - sigmoid(x))].

    Computed as (1 - t) * x + (1 + (pw - 1) * t) * softplus(-x), which never takes the log of 0.
    input, target: same shape; weight broadcasts against the loss; pos_weight (C,) weighs the
    positive term of each class (last dimension).
    """
    _same_shape(input, target, "binary_cross_entropy_with_logits")
    log_weight = 1.0 if pos_weight is None else 1.0 + (pos_weight - 1.0) * target
    loss = (1.0 - target) * input + log_weight * _softplus(-input)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")
