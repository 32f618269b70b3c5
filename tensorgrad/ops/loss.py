"""Softmax cross-entropy as one primitive: the composite log_softmax -> gather -> mean keeps the
(N, C) log-probabilities alive and makes a pass per op; here the forward keeps only the logits
and the VJP is (softmax - onehot) scaled, in tensorgrad ops."""
from ..autograd import primitive
from ..tensor import Tensor
from .operands import require_float
from .softmax import log_softmax, softmax


@primitive("cross_entropy", saves=(0,))
def _cross_entropy(xp, logits, target, weight, ignore_index, label_smoothing, reduction):
    n, classes = logits.shape
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))
    valid = target != ignore_index
    safe = xp.where(valid, target, 0)
    picked = -logp[xp.arange(n), safe]
    w_t = (weight[safe] if weight is not None else xp.ones(n, dtype=logits.dtype)) * valid
    loss = (1.0 - label_smoothing) * w_t * picked
    if label_smoothing:
        spread = -(logp * weight).sum(axis=1) if weight is not None else -logp.sum(axis=1)
        loss = loss + (label_smoothing / classes) * spread * valid
    if reduction == "none":
        return loss.astype(logits.dtype, copy=False)
    total = loss.sum()
    if reduction == "mean":
        total = total / w_t.sum()
    return total.astype(logits.dtype)


@_cross_entropy.defvjp
def _cross_entropy_vjp(ctx, g):
    # d loss_i / d logits_ij = (1-e) w_t (p_j - [j = t]) + (e / C) (p_j sum_c w_c - w_j)
    logits, = ctx.inputs
    a = ctx.attrs
    xp, dtype = logits._backend, logits.data.dtype
    n, classes = logits.shape
    target, weight, eps = a["target"], a["weight"], a["label_smoothing"]
    valid = target != a["ignore_index"]
    safe = xp.where(valid, target, 0)
    w = weight if weight is not None else xp.ones(classes, dtype=dtype)
    w_t = w[safe] * valid
    onehot = (safe[:, None] == xp.arange(classes)).astype(dtype)

    def const(array):
        return Tensor._constant(xp.asarray(array, dtype=dtype), xp)

    p = softmax(logits, dim=1)
    grad = const(((1.0 - eps) * w_t)[:, None]) * (p - const(onehot))
    if eps:
        grad = grad + const((eps / classes) * valid[:, None]) * (p * float(w.sum()) - const(w))
    if a["reduction"] == "none":
        return grad * g.unsqueeze(1)
    if a["reduction"] == "mean":
        g = g / float(w_t.sum())
    return grad * g


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    """Softmax cross-entropy between logits and class indices (or class probabilities).

    input: (N, C), (C,) or (N, C, d1, ...) logits. target: int64 class indices of shape (N,),
    () or (N, d1, ...), or float probabilities shaped like input. Rows whose target is
    ignore_index contribute nothing; reduction 'mean' divides by the (weighted) count of the
    rest, as PyTorch does.
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
    require_float(input, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    if isinstance(target, Tensor) and target.dtype.kind == "f":
        return _soft_cross_entropy(input, target, weight, reduction, label_smoothing)
    if not isinstance(target, Tensor) or target.dtype.kind not in "iu":
        raise TypeError(f"cross_entropy: target must be an integer Tensor of class indices or a "
                        f"float Tensor of probabilities, got "
                        f"{getattr(target, 'dtype', type(target).__name__)}")
    class_dim = 0 if input.ndim == 1 else 1
    classes = input.shape[class_dim]
    expected = input.shape[:class_dim] + input.shape[class_dim + 1:]
    if target.shape != expected:
        raise ValueError(f"cross_entropy: logits of shape {input.shape} need a target of shape "
                         f"{expected}, got {target.shape}")
    logits = input.unsqueeze(0) if input.ndim == 1 else input
    if logits.ndim > 2:  # (N, C, d1, ...) -> (N * d1 * ..., C)
        logits = logits.movedim(1, -1)
    logits = logits.reshape(-1, classes)
    flat = target.data.reshape(-1)
    valid = flat[flat != ignore_index]
    if valid.size and (int(valid.min()) < 0 or int(valid.max()) >= classes):
        raise IndexError(f"cross_entropy: target values must lie in [0, {classes}) (or equal "
                         f"ignore_index={ignore_index}); got values in [{int(valid.min())}, "
                         f"{int(valid.max())}]")
    weight_data = None
    if weight is not None:
        if weight.shape != (classes,):
            raise ValueError(f"cross_entropy: weight must have shape ({classes},), got "
                             f"{weight.shape}")
        weight_data = weight.data.astype(input.dtype, copy=False)
    loss = _cross_entropy(logits, target=flat, weight=weight_data, ignore_index=ignore_index,
                          label_smoothing=float(label_smoothing), reduction=reduction)
    return loss.reshape(target.shape) if reduction == "none" else loss


def _soft_cross_entropy(input, target, weight, reduction, label_smoothing):
    if target.shape != input.shape:
        raise ValueError(f"cross_entropy: probability targets must match the logits' shape "
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

