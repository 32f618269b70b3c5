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
    conv_transpose3d, group_norm, instance_norm, max_pool1d, max_pool2d, max_pool3d,
)
from tensorgrad.ops.conv import fold, unfold  # noqa: F401  (not top-level: Tensor.unfold differs)
from tensorgrad.ops.channel_norm import normalize  # noqa: F401
from tensorgrad.ops.pool import max_unpool1d, max_unpool2d, max_unpool3d  # noqa: F401
from tensorgrad.ops.resize import interpolate  # noqa: F401

# --- activations and losses (tensorgrad/ops/activation.py, loss.py) ------------------------------
from tensorgrad import (  # noqa: F401  (re-exported)
    binary_cross_entropy, binary_cross_entropy_with_logits, cosine_embedding_loss,
    gaussian_nll_loss, glu, hardshrink, hinge_embedding_loss, huber_loss, kl_div, l1_loss,
    logsigmoid, margin_ranking_loss, mse_loss, nll_loss, poisson_nll_loss, prelu, smooth_l1_loss,
    soft_margin_loss, softplus, softshrink, softsign, tanhshrink,
)
from tensorgrad.ops.unary import apply_inplace


def _maybe_inplace(input, op, inplace, name, *args):
    # torch's inplace=True writes the result into input; tensorgrad refuses it, as every
    # in-place update, for a tensor autograd tracks (it records no in-place ops).
    return apply_inplace(input, op, name, *args) if inplace else op(input, *args)


def relu6(input, inplace=False):
    return _maybe_inplace(input, tg.relu6, inplace, "relu6")


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _maybe_inplace(input, tg.leaky_relu, inplace, "leaky_relu", negative_slope)


def elu(input, alpha=1.0, inplace=False):
    return _maybe_inplace(input, tg.elu, inplace, "elu", alpha)


def celu(input, alpha=1.0, inplace=False):
    return _maybe_inplace(input, tg.celu, inplace, "celu", alpha)


def selu(input, inplace=False):
    return _maybe_inplace(input, tg.selu, inplace, "selu")


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return _maybe_inplace(input, tg.hardtanh, inplace, "hardtanh", min_val, max_val)


def hardsigmoid(input, inplace=False):
    return _maybe_inplace(input, tg.hardsigmoid, inplace, "hardsigmoid")


def hardswish(input, inplace=False):
    return _maybe_inplace(input, tg.hardswish, inplace, "hardswish")


def mish(input, inplace=False):
    return _maybe_inplace(input, tg.mish, inplace, "mish")


def threshold(input, threshold, value, inplace=False):
    return _maybe_inplace(input, tg.threshold, inplace, "threshold", threshold, value)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-input) along dim (PyTorch's implicit dim for dim=None: 0 for 0-, 1- and 3-d
    input, else 1)."""
    if dim is None:
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return tg.softmax(-input if dtype is None else -input.to(dtype), dim=dim)


# torch's trailing-underscore functional forms: the same as inplace=True
def relu_(input):
    return relu(input, inplace=True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input, threshold, value):
    return _maybe_inplace(input, tg.threshold, True, "threshold_", threshold, value)


# --- distances, triplet loss, pixel shuffles, channel dropout (composites) -----------------------
import math as _math  # noqa: E402
import warnings as _warnings  # noqa: E402

from tensorgrad.ops.loss import legacy_reduction  # noqa: E402


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between x1 and x2 (broadcast) along dim: each is divided by its norm
    first, the norm's value clamped below at eps, as PyTorch does (which keeps the result in
    [-1, 1]); the clamp leaves the norm's gradient alone, as torch's no-grad clamp does."""
    x1, x2 = tg.broadcast_tensors(x1, x2)
    return ((x1 / _clamped_norm(x1, dim, eps)) * (x2 / _clamped_norm(x2, dim, eps))).sum(dim)


def _clamped_norm(x, dim, eps):
    squared = (x * x).sum(dim, keepdim=True)
    positive = squared > 0  # a zero vector: norm 0 with gradient 0 (no 0 / 0)
    norm = tg.where(positive, tg.sqrt(tg.where(positive, squared, 1.0)), 0.0)
    return norm + (tg.clamp_min(norm, eps) - norm).detach()


def _vector_norm(x, p, dim, keepdim):
    if p == 0:  # the count of non-zeros (gradient 0, as in PyTorch)
        return tg.sign(x.abs()).sum(dim, keepdim=keepdim)
    return tg.norm(x, p, dim, keepdim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """p-norm of x1 - x2 + eps over the last dim (inputs broadcast): PyTorch adds eps to the
    difference, so equal rows are eps * D**(1/p) apart, not 0."""
    dim = max(x1.ndim, x2.ndim) - 1
    return _vector_norm(x1 - x2 + eps, p, dim if dim >= 0 else None, keepdim)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d = pairwise_distance; swap uses the smaller of
    d(a, n) and d(p, n) (the distance swap of Balntas et al.)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"triplet_margin_loss: reduction must be one of ('mean', 'sum', "
                         f"'none'), got {reduction!r}")
    ndims = {anchor.ndim, positive.ndim, negative.ndim}
    if len(ndims) != 1 or ndims.pop() not in (1, 2):
        raise RuntimeError(f"triplet_margin_loss: expected anchor, positive and negative to be "
                           f"all 1-D or all 2-D, got shapes {anchor.shape}, {positive.shape}, "
                           f"{negative.shape}")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = tg.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    loss = tg.clamp_min(margin + d_pos - d_neg, 0.0)
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def pixel_shuffle(input, upscale_factor):
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r): channel blocks become r x r pixel blocks."""
    r = upscale_factor
    if input.ndim < 3 or input.shape[-3] % (r * r):
        raise RuntimeError(f"pixel_shuffle: expected (*, C * {r}**2, H, W) input, got shape "
                           f"{input.shape}")
    *batch, c, h, w = input.shape
    k = len(batch)
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)  # (*, C, H, r, W, r)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r * r, H, W): the inverse of pixel_shuffle."""
    r = downscale_factor
    if input.ndim < 3 or input.shape[-2] % r or input.shape[-1] % r:
        raise RuntimeError(f"pixel_unshuffle: expected (*, C, H * {r}, W * {r}) input, got "
                           f"shape {input.shape}")
    *batch, c, h, w = input.shape
    k = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)  # (*, C, r, r, H, W)
    return x.reshape(*batch, c * r * r, h // r, w // r)


def _check_p(p, op):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")


def _channel_dropout(input, p, training, inplace, batched, op):
    """Zero whole channels: one keep draw per (sample, channel) when batched, per channel when
    not, broadcast over the rest and scaled by 1 / (1 - p)."""
    _check_p(p, op)
    if not training or p == 0.0:
        return input
    lead = 2 if batched else 1
    shape = input.shape[:lead] + (1,) * (input.ndim - lead)

    def drop(x):
        keep = tg.rand(*shape, dtype=x.dtype, device=x.device) >= p
        return x * (keep.to(x.dtype) * (1.0 / (1.0 - p) if p < 1.0 else 0.0))
    return _maybe_inplace(input, drop, inplace, op)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channel dropout for (N, C, L) or unbatched (C, L) input."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: expected 2-D or 3-D input, got shape {input.shape}")
    return _channel_dropout(input, p, training, inplace, input.ndim == 3, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel dropout for (N, C, H, W) or unbatched (C, H, W) input. As in PyTorch, 3-D input
    is read as (N, C, L) with a warning (the behaviour of past releases), and other ranks get
    channel dropout over their first two dims with a warning."""
    if input.ndim not in (3, 4):
        _warnings.warn(f"dropout2d: received a {input.ndim}-D input, which PyTorch deprecates; "
                       "use dropout for it", UserWarning, stacklevel=2)
    elif input.ndim == 3:
        _warnings.warn("dropout2d: received a 3D input to dropout2d and assuming that "
                       "channel-wise 1D dropout behavior is desired - input is interpreted as "
                       "shape (N, C, L); use dropout1d for that", UserWarning, stacklevel=2)
    return _channel_dropout(input, p, training, inplace, True, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel dropout for (N, C, D, H, W) or unbatched (C, D, H, W) input."""
    if input.ndim not in (4, 5):
        _warnings.warn(f"dropout3d: received a {input.ndim}-D input, which PyTorch deprecates; "
                       "use dropout for it", UserWarning, stacklevel=2)
    return _channel_dropout(input, p, training, inplace, input.ndim != 4, "dropout3d")


_SELU_ALPHA = 1.7580993408473766  # SELU's scale * alpha: the value SELU saturates to, negated


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's zero mean and unit variance: dropped entries are set to
    SELU's negative saturation value, then everything is scaled by a and shifted by b so the
    mean and variance are unchanged. training defaults to False, as in PyTorch."""
    _check_p(p, "alpha_dropout")
    if not training or p == 0.0:
        return input

    def drop(x):
        if p == 1.0:
            return x * 0.0
        keep = (tg.rand(*x.shape, dtype=x.dtype, device=x.device) >= p).to(x.dtype)
        a = 1.0 / _math.sqrt((_SELU_ALPHA ** 2 * p + 1.0) * (1.0 - p))
        return x * (keep * a) + ((keep - 1.0) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p)
    return _maybe_inplace(input, drop, inplace, "alpha_dropout")


# --- Gumbel-softmax and the multi-class margin loss (composites) -------------------------------
def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) along dim with g ~ Gumbel(0, 1) (Jang et al., 2017); hard:
    the one-hot of its argmax in the forward, the soft sample's gradient in the backward
    (straight-through). eps is deprecated and unused, as in PyTorch."""
    if eps != 1e-10:
        _warnings.warn("gumbel_softmax: the eps argument is deprecated and has no effect",
                       stacklevel=2)
    exponential = -(1.0 - tg.rand_like(logits)).log()  # (0, inf): 1 - U is never 0
    soft = ((logits - exponential.log()) / tau).softmax(dim)
    if not hard:
        return soft
    chosen = tg.zeros_like(soft).scatter(dim, soft.argmax(dim, keepdim=True), 1.0)
    return chosen - soft.detach() + soft


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Multi-class hinge loss: for each row, sum over classes i != y of
    max(0, margin - x[y] + x[i])^p (times weight[y]), divided by the number of classes.
    input (N, C) or (C,), target (N,) or () class indices; p is 1 or 2."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"multi_margin_loss: reduction must be one of ('mean', 'sum', "
                         f"'none'), got {reduction!r}")
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: only p == 1 and p == 2 are supported, got {p}")
    if input.ndim not in (1, 2) or target.numel() != (input.shape[0] if input.ndim == 2 else 1):
        raise ValueError(f"multi_margin_loss: expected input (N, C) or (C,) and target (N,) or "
                         f"(), got {tuple(input.shape)} and {tuple(target.shape)}")
    x = input.reshape(-1, input.shape[-1])  # (N, C)
    y = target.reshape(-1, 1).long()  # (N, 1)
    hinge = (margin - x.gather(1, y) + x).clamp(min=0)  # (N, C)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * weight[y]  # (N, C) * (N, 1)
    own_class = tg.arange(x.shape[1], device=x.device) == y  # (N, C)
    loss = hinge.masked_fill(own_class, 0.0).sum(1) / x.shape[1]  # (N,)
    if input.ndim == 1:
        loss = loss.reshape(())
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()
