"""Losses with PyTorch's signatures and `reduction=` ('mean', 'sum', 'none').

cross_entropy is one fused primitive: the composite log_softmax -> gather -> mean keeps the
(N, C) log-probabilities alive and makes a pass per op; here the forward keeps only the logits
and the VJP builds (softmax - onehot), scaled, in one buffer on arrays. Gradients of gradients
differentiate its composite (`_cross_entropy_composite`). The other losses are composites.

One deliberate difference from PyTorch: the elementwise losses (mse, l1, huber, smooth_l1, the
binary cross-entropies, kl_div) refuse input and target of different shapes. PyTorch broadcasts
them (with at most a warning), and a silently broadcast loss is almost always a bug: (N,)
against (N, 1) makes an (N, N) loss.
"""
import math

from ..autograd import guard, primitive
from ..backend.overrides import overridable
from ..errors import OpError
from ..tensor import Tensor, from_array
from .activation import _log1p_exp
from .binary import xlogy
from .operands import as_operand, require_float
from .select import where
from .softmax import log_softmax
from .unary import exp, log


def _class_weights(xp, logits, target, weight, ignore_index):
    """valid (N,) bool, safe (N,) targets with ignored rows at 0, w (C,) class weights, and
    w_t (N,): each row's target weight, 0 where the row is ignored."""
    valid = target != ignore_index
    safe = xp.where(valid, target, 0)
    if weight is None:  # every class weighs 1: a row's weight is whether it counts
        return valid, safe, xp.ones(logits.shape[1], logits.dtype), valid.astype(logits.dtype)
    return valid, safe, weight, weight[safe] * valid


def _cross_entropy_composite(logits, target, weight, ignore_index, label_smoothing, reduction):
    """The same loss in tensorgrad ops, for gradients of gradients (create_graph)."""
    xp = logits._backend
    valid, safe, w, w_t = _class_weights(xp, logits.data, target, weight, ignore_index)

    def const(array):
        return from_array(xp.asarray(array, dtype=logits.dtype), xp)

    logp = log_softmax(logits, dim=1)  # (N, C)
    picked = logp.gather(1, from_array(safe[:, None], xp)).squeeze(1)  # (N,)
    loss = const((1.0 - label_smoothing) * w_t) * -picked
    if label_smoothing:
        spread = -(logp * const(w)).sum(1)
        loss = loss + const((label_smoothing / logits.shape[1]) * valid) * spread
    if reduction == "none":
        return loss
    return loss.sum() / float(w_t.sum()) if reduction == "mean" else loss.sum()


@overridable("cross_entropy.max_and_sum_exp")
def _max_and_sum_exp(xp, logits):
    """Each row's max and sum of exp(logit - max), both (N, 1)."""
    top = logits.max(axis=1, keepdims=True)
    e = logits - top
    xp.exp(e, out=e)
    return top, e.sum(axis=1, keepdims=True)


@overridable("cross_entropy.scaled_softmax")
def _scaled_softmax(xp, logits, top, total, row_scale):
    """softmax(logits) rebuilt from the forward's statistics, each row times row_scale (N,)."""
    grad = logits - top  # (N, C), becomes the gradient in place
    xp.exp(grad, out=grad)
    grad /= total  # p
    grad *= row_scale[:, None]
    return grad


# Fused on arrays (benchmarks/: bert_step, whose MLM head scores 2,048 rows x 4,096 pieces): the
# forward needs only each row's log-sum-exp and its target's logit, the VJP one (N, C) buffer
# (softmax, scaled and corrected in place) rather than a one-hot matrix and a pass per op. Each
# row's max and sum of exponentials (N, 1) are kept for the VJP, which rebuilds the softmax as
# exp(logits - max) / sum in three passes instead of five (gpt_step); exactly
# the forward's softmax, where exp(logits - lse) would carry lse's rounding (|lse| ulps).
@primitive("cross_entropy", saves=(0,), saves_extra=True, composite=_cross_entropy_composite)
def _cross_entropy(xp, logits, target, weight, ignore_index, label_smoothing, reduction):
    n, classes = logits.shape
    valid, safe, w, w_t = _class_weights(xp, logits, target, weight, ignore_index)
    top, total = _max_and_sum_exp(xp, logits)
    lse = top[:, 0] + xp.log(total[:, 0])  # (N,) log sum_j exp(logit_j)
    loss = w_t * (lse - logits[xp.arange(n), safe])
    if label_smoothing:  # sum_j w_j (-log p_j) = lse * sum w - logits @ w
        spread = lse * w.sum() - logits @ w
        loss = (1.0 - label_smoothing) * loss + (label_smoothing / classes) * spread * valid
    if reduction == "none":
        return loss.astype(logits.dtype, copy=False), (top, total)
    summed = loss.sum()
    if reduction == "mean":
        summed = summed / w_t.sum()
    return summed.astype(logits.dtype), (top, total)


@_cross_entropy.defvjp
def _cross_entropy_vjp(ctx, g):
    # d loss_i / d logits_ij = s_i [(1-e) w_t (p_j - [j = t]) + (e / C) valid (p_j sum_c w_c - w_j)]
    # with s_i the incoming gradient (divided by the weight total for 'mean').
    a, xp = ctx.attrs, ctx.backend
    logits = ctx.inputs[0].data
    n, classes = logits.shape
    eps = a["label_smoothing"]
    valid, safe, w, w_t = _class_weights(xp, logits, a["target"], a["weight"], a["ignore_index"])
    s = g.data.astype(logits.dtype, copy=False)
    if a["reduction"] == "mean":
        s = s / w_t.sum()
    top, total = ctx.extra
    picked = row_scale = w_t * s  # what the target's column loses, times 1 - e
    if eps:  # without smoothing, a few passes over (N,) arrays fewer (mlp_step)
        row_scale = (1.0 - eps) * picked + (eps / classes) * w.sum() * valid * s
        picked = (1.0 - eps) * picked
    grad = _scaled_softmax(xp, logits, top, total, row_scale)
    grad[xp.arange(n), safe] -= picked
    if eps:
        grad -= ((eps / classes) * valid * s)[:, None] * w
    return from_array(grad, xp)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Softmax cross-entropy between logits and class indices (or class probabilities).

    input: (N, C), (C,) or (N, C, d1, ...) logits. target: int64 class indices of shape (N,),
    () or (N, d1, ...), or float probabilities shaped like input. Rows whose target is
    ignore_index contribute nothing; reduction 'mean' divides by the (weighted) count of the
    rest, as PyTorch does.
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, "cross_entropy")
    require_float(input, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    if isinstance(target, Tensor) and target.dtype.kind == "f":
        return _soft_cross_entropy(input, target, weight, reduction, label_smoothing)
    scores, flat, weight_data = _class_scores(input, target, weight, ignore_index,
                                              "cross_entropy", "logits")
    loss = _cross_entropy(scores, target=flat, weight=weight_data, ignore_index=ignore_index,
                          label_smoothing=float(label_smoothing), reduction=reduction)
    loss = guard(loss, target, weight)  # the VJP reads both again
    return loss.reshape(target.shape) if reduction == "none" else loss


def _class_scores(input, target, weight, ignore_index, op, what):
    """Per-class scores (N, C), (C,) or (N, C, d1, ...) as rows (M, C), the class-index target as
    a flat array (M,), and the class weights as an array of input's dtype (or None), checked."""
    if not isinstance(target, Tensor) or target.dtype.kind not in "iu":
        raise TypeError(f"{op}: target must be an integer Tensor of class indices, got "
                        f"{getattr(target, 'dtype', type(target).__name__)}")
    if input.ndim == 0:
        raise ValueError(f"{op}: input must have a class dimension, got a 0-d tensor")
    class_dim = 0 if input.ndim == 1 else 1
    classes = input.shape[class_dim]
    expected = input.shape[:class_dim] + input.shape[class_dim + 1:]
    if target.shape != expected:
        raise ValueError(f"{op}: {what} of shape {input.shape} need a target of shape "
                         f"{expected}, got {target.shape}")
    rows = input.unsqueeze(0) if input.ndim == 1 else input
    if rows.ndim > 2:  # (N, C, d1, ...) -> (N * d1 * ..., C)
        rows = rows.movedim(1, -1)
    rows = rows.reshape(-1, classes)
    flat = target.data.reshape(-1)
    if flat.size and (int(flat.min()) < 0 or int(flat.max()) >= classes):
        valid = flat[flat != ignore_index]  # the ignored rows set apart only now (mlp_step)
        if valid.size and (int(valid.min()) < 0 or int(valid.max()) >= classes):
            raise IndexError(f"{op}: target values must lie in [0, {classes}) (or equal "
                             f"ignore_index={ignore_index}); got values in [{int(valid.min())}, "
                             f"{int(valid.max())}]")
    weight_data = None
    if weight is not None:
        if weight.shape != (classes,):
            raise ValueError(f"{op}: weight must have shape ({classes},), got {weight.shape}")
        weight_data = weight.data.astype(input.dtype, copy=False)
    return rows, flat, weight_data


def _soft_cross_entropy(input, target, weight, reduction, label_smoothing):
    if target.shape != input.shape:
        raise OpError(f"cross_entropy: probability targets must match the logits' shape "
                      f"{input.shape}, got {target.shape}")
    class_dim = 0 if input.ndim == 1 else 1
    classes = input.shape[class_dim]
    if label_smoothing:
        target = target * (1.0 - label_smoothing) + label_smoothing / classes
    logp = log_softmax(input, class_dim)
    if weight is not None:
        logp = logp * weight.reshape((classes,) + (1,) * (input.ndim - class_dim - 1))
    loss = -(target * logp).sum(class_dim)
    if reduction == "none":
        return loss
    total = loss.sum()
    return total / (loss.numel() or 1) if reduction == "mean" else total



# --- reductions and argument checks shared by the composite losses --------------------------------
_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction, op, allowed=_REDUCTIONS):
    if reduction not in allowed:
        raise ValueError(f"{op}: reduction must be one of {allowed}, got {reduction!r}")


def legacy_reduction(size_average, reduce, reduction):
    """PyTorch's deprecated size_average/reduce flags, where given, decide the reduction."""
    if size_average is None and reduce is None:
        return reduction
    if isinstance(size_average, str) or isinstance(reduce, str):
        # MSELoss("sum") sets size_average in PyTorch, which then silently means 'mean'
        raise TypeError(f"the reduction {size_average or reduce!r} was passed where PyTorch's "
                        f"deprecated size_average/reduce flags go; pass reduction= by name")
    if reduce is False:
        return "none"
    return "sum" if size_average is False else "mean"


def _reduce(loss, reduction, op, weight=None):
    """'mean', 'sum' or 'none' of an elementwise loss; a weighted mean divides by sum(weight)."""
    _check_reduction(reduction, op)
    if reduction == "none":
        return loss
    total = loss.sum()
    if reduction == "sum":
        return total
    return total / weight.sum() if weight is not None else total / float(loss.numel())


def _same_shape(input, target, op):
    if not isinstance(input, Tensor) or not isinstance(target, Tensor):
        raise TypeError(f"{op}: input and target must be Tensors, got {type(input).__name__} and "
                        f"{type(target).__name__}")
    if input.shape != target.shape:
        raise ValueError(f"{op}: input and target must have the same shape, got {input.shape} "
                         f"and {target.shape}")


def _check_weight(weight, input, op):
    if weight is not None and weight.shape != input.shape:
        raise ValueError(f"{op}: weight must have the input's shape {input.shape}, got "
                         f"{weight.shape}")


# --- classification ------------------------------------------------------------------------------
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of class indices under log-probabilities.

    input: (N, C), (C,) or (N, C, d1, ...) log-probabilities (log_softmax's output); target:
    int64 (N,), () or (N, d1, ...). loss_i = -weight[t_i] * input[i, t_i]; targets equal to
    ignore_index count for nothing, and 'mean' divides by the summed weight of the others.
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, "nll_loss")
    require_float(input, "nll_loss")
    scores, flat, weight_data = _class_scores(input, target, weight, ignore_index, "nll_loss",
                                              "log-probabilities")
    xp = input._backend
    valid = flat != ignore_index
    safe = xp.where(valid, flat, 0)
    w_t = valid.astype(input.dtype) if weight_data is None else weight_data[safe] * valid
    w_t = from_array(w_t, xp)
    picked = scores.gather(1, from_array(safe[:, None], xp)).reshape(-1)  # (M,)
    loss = guard(-picked * w_t, target, weight)  # as PyTorch, which saves them
    if reduction == "none":
        return loss.reshape(target.shape)
    return loss.sum() if reduction == "sum" else loss.sum() / w_t.sum()


def _log_clamped(p):
    """log(p), clamped at -100 as PyTorch's binary_cross_entropy does (p = 0 costs 100, not inf;
    the inner where keeps log(0) and its infinite slope out of the gradient)."""
    positive = p > 0
    return where(positive, log(where(positive, p, 1.0)), -100.0).clamp(min=-100.0)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-weight * [t log(p) + (1 - t) log(1 - p)] for probabilities p in [0, 1].

    Each log is clamped at -100, as in PyTorch; at exactly p = 0 or 1 the gradient is therefore
    0 where PyTorch gives (p - t) / 1e-12. weight broadcasts against the loss.
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    _same_shape(input, target, "binary_cross_entropy")
    require_float(input, "binary_cross_entropy")
    data = input.data
    if data.size and bool(((data < 0) | (data > 1)).any()):
        raise ValueError(f"binary_cross_entropy: input must hold probabilities in [0, 1], got "
                         f"values in [{float(data.min())}, {float(data.max())}] (for logits use "
                         f"binary_cross_entropy_with_logits)")
    loss = -(target * _log_clamped(input) + (1.0 - target) * _log_clamped(1.0 - input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """Binary cross-entropy on logits: -[pw * t * log sigmoid(x) + (1 - t) * log(1 - sigmoid(x))].

    Computed as (1 - t) * x + (1 + (pw - 1) * t) * softplus(-x), which never takes the log of 0.
    input, target: same shape; weight broadcasts against the loss; pos_weight (C,) weighs the
    positive term of each class (last dimension).
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    _same_shape(input, target, "binary_cross_entropy_with_logits")
    require_float(input, "binary_cross_entropy_with_logits")
    log_weight = 1.0 if pos_weight is None else 1.0 + (pos_weight - 1.0) * target
    loss = (1.0 - target) * input + log_weight * _log1p_exp(-input)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || q) pointwise for log-probabilities input = log q:
    target * (log target - input), with 0 where target is 0 (or exp(t) * (t - input) when
    log_target). 'batchmean' divides the sum by the batch size (dim 0): the true KL divergence
    per sample; 'mean' divides by the number of elements, as in PyTorch.
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, "kl_div", _REDUCTIONS + ("batchmean",))
    _same_shape(input, target, "kl_div")
    require_float(input, "kl_div")
    if log_target:
        loss = exp(target) * (target - input)
    else:
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / float(input.shape[0]) if input.ndim else loss.sum()
    return _reduce(loss, reduction, "kl_div")


# --- regression ----------------------------------------------------------------------------------
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(input - target)^2; with weight (input's shape), 'mean' is sum(w * loss) / sum(w)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _same_shape(input, target, "mse_loss")
    _check_weight(weight, input, "mse_loss")
    diff = input - target
    loss = diff * diff
    return _reduce(loss if weight is None else loss * weight, reduction, "mse_loss", weight)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|input - target| (gradient 0 where they are equal); weight as in mse_loss."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _same_shape(input, target, "l1_loss")
    _check_weight(weight, input, "l1_loss")
    loss = (input - target).abs()
    return _reduce(loss if weight is None else loss * weight, reduction, "l1_loss", weight)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), d = input - target.

    With weight (input's shape) 'mean' is mean(w * loss), as in PyTorch (unlike mse_loss).
    """
    _same_shape(input, target, "huber_loss")
    _check_weight(weight, input, "huber_loss")
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    diff = input - target
    size = diff.abs()
    loss = where(size < delta, 0.5 * diff * diff, (size - 0.5 * delta) * delta)
    return _reduce(loss if weight is None else loss * weight, reduction, "huber_loss")


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta: huber_loss / beta; l1 at beta 0."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _same_shape(input, target, "smooth_l1_loss")
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    if beta == 0:
        return l1_loss(input, target, reduction=reduction)
    diff = input - target
    size = diff.abs()
    loss = where(size < beta, diff * diff * (0.5 / beta), size - 0.5 * beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


# --- likelihoods: Poisson counts and Gaussian means with a predicted variance ---------------------
_LOG_2PI = math.log(2.0 * math.pi)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Negative log-likelihood of counts `target` under Poisson(rate), dropping log(target!):
    exp(input) - target * input when input is the log-rate (log_input), else
    rate - target * log(rate + eps). full adds Stirling's approximation of log(target!) where
    target > 1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _same_shape(input, target, "poisson_nll_loss")
    require_float(input, "poisson_nll_loss")
    if log_input:
        loss = exp(input) - target * input
    else:
        loss = input - target * log(input + eps)
    if full:
        big = target > 1
        t = where(big, target, 2.0)  # log(0) stays out of the masked entries and their gradients
        loss = loss + where(big, t * log(t) - t + 0.5 * log(t * (2.0 * math.pi)), 0.0)
    return _reduce(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Negative log-likelihood of target under N(input, var): 0.5 (log var + (input - target)^2 /
    var), plus 0.5 log(2 pi) when full.

    var: input's shape, input's shape less the last dim, or input's shape with one dim of size
    1 (one variance shared along it), or a float. It must be >= 0; values below eps count as
    eps in the loss while the gradient passes through unchanged, as in PyTorch.
    """
    _same_shape(input, target, "gaussian_nll_loss")
    require_float(input, "gaussian_nll_loss")
    if not isinstance(var, Tensor):
        if var < 0:
            raise ValueError(f"gaussian_nll_loss: var must be >= 0, got {var}")
        var = as_operand(float(var), input).expand(*input.shape)
    if var.shape != input.shape:
        if var.shape == input.shape[:-1]:
            var = var.unsqueeze(-1)
        elif var.ndim != input.ndim or [v for i, v in zip(input.shape, var.shape) if i != v] != [1]:
            raise ValueError(f"gaussian_nll_loss: var of shape {var.shape} fits neither the "
                             f"input's shape {input.shape}, that shape less its last dim, nor "
                             f"that shape with one dim of size 1")
    if bool((var.data < 0).any()):
        raise ValueError("gaussian_nll_loss: var has negative entries")
    _check_reduction(reduction, "gaussian_nll_loss")
    var = var + (var.detach().clamp(min=eps) - var.detach())  # clamped value, identity gradient
    diff = input - target
    loss = 0.5 * (log(var) + diff * diff / var)
    if full:
        loss = loss + 0.5 * _LOG_2PI
    return _reduce(loss, reduction, "gaussian_nll_loss")


# --- embeddings and rankings: targets are +1 / -1 ------------------------------------------------
def _pair_target(input1, input2, target, feature_dims, op):
    if input1.shape != input2.shape:
        raise ValueError(f"{op}: input1 and input2 must have the same shape, got {input1.shape} "
                         f"and {input2.shape}")
    expected = input1.shape[:input1.ndim - feature_dims]
    if not isinstance(target, Tensor) or target.shape != expected:
        raise ValueError(f"{op}: inputs of shape {input1.shape} need a target of shape "
                         f"{expected}, got {getattr(target, 'shape', type(target).__name__)}")


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1.

    input1, input2: (N, D) or (D,); target: (N,) or (). The squared norms get 1e-12 added
    before the square root, as in PyTorch, so a zero vector gives cos 0, not NaN.
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    if input1.ndim not in (1, 2):
        raise ValueError(f"cosine_embedding_loss: inputs must be (N, D) or (D,), got "
                         f"{input1.shape}")
    _pair_target(input1, input2, target, 1, "cosine_embedding_loss")
    eps = 1e-12
    dot = (input1 * input2).sum(-1)
    norms = (((input1 * input1).sum(-1) + eps) * ((input2 * input2).sum(-1) + eps)).sqrt()
    cos = dot / norms
    loss = where(target == 1, 1.0 - cos, 0.0) + where(target == -1, (cos - margin).clamp(min=0.0),
                                                      0.0)
    return _reduce(loss, reduction, "cosine_embedding_loss")


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target * (input1 - input2) + margin): input1 should rank above input2 where
    target is 1, below where it is -1. All three have one shape."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _pair_target(input1, input2, target, 0, "margin_ranking_loss")
    loss = (-target * (input1 - input2) + margin).clamp(min=0.0)
    return _reduce(loss, reduction, "margin_ranking_loss")


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)): a smooth two-class hinge for targets +1 / -1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _same_shape(input, target, "soft_margin_loss")
    return _reduce(_log1p_exp(-target * input), reduction, "soft_margin_loss")


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """input where target is 1, max(0, margin - input) where it is -1 (input: distances)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _same_shape(input, target, "hinge_embedding_loss")
    loss = where(target != -1, input, 0.0) + where(target != 1, (margin - input).clamp(min=0.0),
                                                   0.0)
    return _reduce(loss, reduction, "hinge_embedding_loss")
