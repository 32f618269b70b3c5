"""scaled_dot_product_attention's arguments: the checks of shapes, dtypes and masks (each error
names the op and what it was given), grouped-query attention's regrouping of heads, and the
broadcast rule the attention primitive uses on plain shape tuples (tensorgrad/ops/attention.py).
"""
import math

from ..tensor import Tensor
from .operands import require_float


def broadcast_shapes(*shapes):
    """The shape `shapes` broadcast to (NumPy's rule), or ValueError; plain Python on tuples."""
    out = []
    for sizes in zip(*((1,) * (max(map(len, shapes)) - len(s)) + tuple(s) for s in shapes)):
        wide = {n for n in sizes if n != 1}
        if len(wide) > 1:
            raise ValueError(f"shapes {shapes} do not broadcast")
        out.append(wide.pop() if wide else 1)
    return tuple(out)


def split_mask(attn_mask):
    """(bias Tensor or None, bool array or None) from one attn_mask."""
    if attn_mask is None:
        return None, None
    if attn_mask.dtype.kind == "b":
        return None, attn_mask.data
    return attn_mask, None


def prepare_inputs(op, q, k, v, attn_mask, scale, enable_gqa):
    """Check shapes and dtypes; regroup heads for GQA. Returns q, k, v, mask, scale, groups."""
    if attn_mask is None and isinstance(q, Tensor) and isinstance(k, Tensor) \
            and isinstance(v, Tensor):
        # The usual call passes every check below in one read of the shapes and dtypes
        # (generate: 4 calls per GPT-mini token): float tensors of one dtype, the same batch
        # and head dims (so no GQA regrouping), matching E and Tk, no mask.
        qs, ks, vs, dtype = q.data.shape, k.data.shape, v.data.shape, q.data.dtype
        if len(qs) == len(ks) == len(vs) >= 2 and qs[:-2] == ks[:-2] == vs[:-2] \
                and qs[-1] == ks[-1] and ks[-2] == vs[-2] and dtype.kind == "f" \
                and k.data.dtype == dtype and v.data.dtype == dtype:
            return q, k, v, None, float(1.0 / math.sqrt(qs[-1]) if scale is None else scale), 1
    for name, t in (("query", q), ("key", k), ("value", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
        if t.ndim < 2:
            raise ValueError(f"{op}: {name} needs shape (..., T, E), got {t.shape}")
    require_float(q, op)
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"{op}: query, key and value must share a dtype, got {q.dtype}, "
                        f"{k.dtype} and {v.dtype}")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"{op}: expected query (..., Tq, E), key (..., Tk, E) and value "
                         f"(..., Tk, Ev); got {q.shape}, {k.shape} and {v.shape}")
    groups = _groups(op, q, k, v, enable_gqa)
    batch = q.shape[:-2]
    if groups > 1 or not batch == k.shape[:-2] == v.shape[:-2]:
        heads = () if groups == 1 else (q.shape[-3],)  # key/value heads as the queries see them
        batch = _broadcast(op, batch, k.shape[:-2 - len(heads)] + heads,
                           v.shape[:-2 - len(heads)] + heads)
    if attn_mask is not None:
        attn_mask = _check_mask(op, attn_mask, batch + (q.shape[-2], k.shape[-2]), q.dtype)
    if groups > 1:
        # (..., Hq, T, E) -> (..., Hk, G, T, E): query head h reads key/value head h // G.
        hk = k.shape[-3]
        q = q.reshape(q.shape[:-3] + (hk, groups) + q.shape[-2:])
        k, v = k.unsqueeze(-3), v.unsqueeze(-3)  # (..., Hk, 1, Tk, E)
        if attn_mask is not None and attn_mask.ndim >= 3:
            split = (hk, groups) if attn_mask.shape[-3] != 1 else (1, 1)
            attn_mask = attn_mask.reshape(attn_mask.shape[:-3] + split + attn_mask.shape[-2:])
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    return q, k, v, attn_mask, float(scale), groups


def _groups(op, q, k, v, enable_gqa):
    """How many query heads share one key/value head (1 without grouped-query attention)."""
    if not enable_gqa or q.ndim < 3 or k.ndim < 3 or q.shape[-3] == k.shape[-3]:
        return 1
    hq, hk = q.shape[-3], k.shape[-3]
    if hq % hk or v.ndim < 3 or v.shape[-3] != hk:
        raise ValueError(f"{op}: grouped-query attention needs key and value heads that divide "
                         f"the query heads; got query {q.shape}, key {k.shape}, value {v.shape}")
    return hq // hk


def _check_mask(op, attn_mask, scores_shape, dtype):
    if not isinstance(attn_mask, Tensor):
        raise TypeError(f"{op}: attn_mask must be a Tensor, got {type(attn_mask).__name__}")
    kind = attn_mask.dtype.kind
    if kind not in "bf":
        raise TypeError(f"{op}: attn_mask must be bool (True = attend) or float (added to the "
                        f"scores), got {attn_mask.dtype}")
    try:
        ok = attn_mask.ndim >= 2 and \
            broadcast_shapes(attn_mask.shape, scores_shape) == scores_shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{op}: attn_mask of shape {attn_mask.shape} does not broadcast to the "
                         f"scores' shape {scores_shape} (..., heads, Tq, Tk)")
    return attn_mask.to(dtype) if kind == "f" else attn_mask


def _broadcast(op, *shapes):
    try:
        return broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"{op}: the batch dimensions of query, key and value do not broadcast: "
                         f"{' vs '.join(str(s) for s in shapes)}") from None


def ungroup_heads(out, groups):
    """Undo the GQA regrouping: (..., Hk, G, Tq, X) -> (..., Hk * G, Tq, X)."""
    if groups == 1:
        return out
    return out.reshape(out.shape[:-4] + (out.shape[-4] * groups,) + out.shape[-2:])
