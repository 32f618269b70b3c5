"""Block-sparse attention: each block of queries attends only to the keys it gathers, and partial
attentions over disjoint key sets merge exactly. The sparse patterns of
`tensorgrad.nn.attention_patterns` (sliding window with global tokens, BigBird, strided) are
built from these two functions.

`block_sparse_attention` groups the queries into nb blocks of b (consecutive, or any grouping
`query_index` gives). Block i reads the L keys at positions `key_index[i]`, gathered with one
index op, and a bool `allowed` (nb, b, L) says which of those pairs count. Scores are
(..., nb, b, L), never (..., Tq, Tk): memory and time grow with Tq * L, linearly in the length
when L is fixed (a window). It returns the output and each query's log-sum-exp of its scores.

`merge_attention` combines partial results over disjoint key sets with their log-sum-exps:
out = sum_c exp(lse_c - lse) out_c, lse = log sum_c exp(lse_c). That is exactly the softmax over
the union, so a pattern may compute its parts in different layouts (the strided pattern groups
its queries by residue) and still equal dense attention with the equivalent mask.

Composites only (index ops, matmul, where, logsumexp, exp): the gradients, to any order, come
from those ops. Masked scores are set to the dtype's lowest finite value, as in
`scaled_dot_product_attention`, and a query with no allowed key outputs 0 (PyTorch: NaN).
"""
from ..tensor import Tensor, from_array
from .dropout import dropout
from .reduce import logsumexp
from .select import where
from .shape import cat, pad, stack
from .unary import exp


def block_sparse_attention(query, key, value, key_index, allowed, query_index=None,
                           key_padding_mask=None, alibi_slopes=None, dropout_p=0.0, scale=None,
                           enable_gqa=False):
    """Attention of blocks of queries over the keys each block gathers.

    query: (..., Hq, Tq, E); key: (..., Hk, Tk, E); value: (..., Hk, Tk, Ev).
    key_index: (nb, L) int Tensor, the key positions block i reads (in [0, Tk)).
    allowed: bool Tensor broadcastable to (..., Hq, nb, b, L): which gathered pairs count
        (pairs outside the key range, repeated or meant for another part must be False).
    query_index: (nb, b) int Tensor, the queries of each block, each query at most once, Tq
        marking an empty slot; None: blocks of consecutive queries from 0 (Tq padded to nb * b).
    key_padding_mask: (B, Tk) bool, True at padding keys (leading dims of query: (B, H)).
    alibi_slopes: (Hq,) float: adds -slope * |i - j| to the scores (Press et al., ALiBi).
    dropout_p: dropout on the attention probabilities (0 when evaluating).
    scale: default 1 / sqrt(E). enable_gqa: Hk divides Hq, query head h reads key head h // G.
    Returns (out (..., Hq, Tq, Ev), lse (..., Hq, Tq, 1)); queries no block holds get out 0 and
    lse the lowest finite value, as do queries with no allowed key.
    """
    op = "block_sparse_attention"
    _check(op, query, key, value, key_index, allowed, query_index)
    xp = query._backend
    tq, e = query.shape[-2], query.shape[-1]
    nb, length = key_index.shape
    b = allowed.shape[-2]
    hq, hk = (query.shape[-3], key.shape[-3]) if query.ndim >= 3 else (1, 1)
    groups = hq // hk if enable_gqa and hq != hk else 1
    if groups > 1 and hq % hk:
        raise ValueError(f"{op}: grouped-query attention needs key heads that divide the query "
                         f"heads; got query {query.shape} and key {key.shape}")
    scale = e ** -0.5 if scale is None else float(scale)

    q = _query_blocks(query, query_index, nb, b)  # (..., Hq, nb, b, E)
    k = gather_tokens(key, key_index)  # (..., Hk, nb, L, E)
    v = gather_tokens(value, key_index)  # (..., Hk, nb, L, Ev)
    keep = allowed
    if key_padding_mask is not None:
        # (B, Tk) -> the gathered keys (B, 1, nb, 1, L): True where a real key
        real = ~key_padding_mask.data[:, key_index.data]
        keep = keep & from_array(real.reshape(real.shape[0], 1, nb, 1, length), xp)
    bias = None
    if alibi_slopes is not None:
        qpos = (xp.arange(nb * b).reshape(nb, b) if query_index is None else query_index.data)
        distance = xp.abs(qpos[:, :, None] - key_index.data[:, None, :]).astype(query.dtype)
        bias = -alibi_slopes.reshape(hq, 1, 1, 1) * from_array(distance, xp)  # (Hq,nb,b,L)
    if groups > 1:  # (..., Hq, ...) -> (..., Hk, G, ...); keys and values get a size-1 G
        q = q.reshape(q.shape[:-4] + (hk, groups) + q.shape[-3:])
        k, v = k.unsqueeze(-4), v.unsqueeze(-4)
        keep = _split_heads(keep, hk, groups)
        bias = None if bias is None else _split_heads(bias, hk, groups)

    s = (q * scale) @ k.mT  # (..., nb, b, E) @ (..., nb, E, L) -> (..., nb, b, L)
    if bias is not None:
        s = s + bias
    s = where(keep, s, float(xp.finfo(query.dtype).min))
    lse = logsumexp(s, -1, keepdim=True)  # (..., nb, b, 1)
    p = dropout(exp(s - lse), dropout_p, training=dropout_p > 0)
    out = p @ v  # (..., nb, b, L) @ (..., nb, L, Ev) -> (..., nb, b, Ev)

    if groups > 1:
        out = out.reshape(out.shape[:-5] + (hq,) + out.shape[-3:])
        lse = lse.reshape(lse.shape[:-5] + (hq,) + lse.shape[-3:])
    out = out.reshape(out.shape[:-3] + (nb * b, out.shape[-1]))  # (..., nb * b, Ev)
    lse = lse.reshape(lse.shape[:-3] + (nb * b, 1))
    if query_index is None:
        return out[..., :tq, :], lse[..., :tq, :]
    return _place(out, lse, query_index, tq)


def merge_attention(*parts):
    """The attention over the union of disjoint key sets, from each set's (out, lse) as
    `block_sparse_attention` returns them: (..., Tq, Ev). Queries with no key in any part
    output 0."""
    outs, lses = zip(*parts)
    if len(parts) == 1:
        out, total = outs[0], lses[0]
    else:
        total = logsumexp(stack(lses), 0)  # (..., Tq, 1)
        out = outs[0] * exp(lses[0] - total)
        for o, lse in zip(outs[1:], lses[1:]):
            out = out + o * exp(lse - total)
    xp = out._backend
    live = total.data > xp.finfo(total.dtype).min / 2  # lowest finite + log(L) stays lowest
    return out if bool(live.all()) else where(from_array(live, xp), out, 0.0)


def gather_tokens(x, index):
    """x (..., T, E) at the token positions `index` (n, L) -> (..., n, L, E).

    The token dim goes first for the gather, so that it is one row gather: its gradient is a
    scatter-add of whole rows, the backend's fast case, which the embedding gradient uses too (a
    gather in the middle of the dims takes its general, slower one)."""
    n, length = index.shape
    lead, e = x.shape[:-2], x.shape[-1]
    rows = x.movedim(-2, 0)[index.reshape(-1)]  # (n * L, ..., E)
    rows = rows.reshape((n, length) + lead + (e,))
    last = rows.ndim - 1
    return rows.permute(*range(2, last), 0, 1, last)  # (..., n, L, E)


def _query_blocks(query, query_index, nb, b):
    """(..., Tq, E) -> (..., nb, b, E): consecutive blocks (zero-padded at the end) or the
    grouping query_index gives (Tq = an empty slot, a zero row)."""
    tq = query.shape[-2]
    if query_index is None:
        if nb * b > tq:
            query = pad(query, (0, 0, 0, nb * b - tq))
        return query.reshape(query.shape[:-2] + (nb, b, query.shape[-1]))
    return gather_tokens(pad(query, (0, 0, 0, 1)), query_index)


def _place(out, lse, query_index, tq):
    """Block rows (..., nb * b, X) back to query order (..., Tq, X): each query takes the row of
    its slot, queries in no slot a filler row (out 0, lse lowest)."""
    xp = out._backend
    slots = query_index.data.reshape(-1)
    where_is = xp.full(tq + 1, slots.size, dtype=slots.dtype)  # the filler row by default
    where_is[slots] = xp.arange(slots.size)  # empty slots write to the dropped entry tq
    rows = from_array(where_is[:tq].reshape(1, tq), xp)
    lowest = float(xp.finfo(lse.dtype).min)
    out = cat([out, out[..., :1, :] * 0.0], dim=-2)
    lse = cat([lse, lse[..., :1, :] * 0.0 + lowest], dim=-2)
    return gather_tokens(out, rows)[..., 0, :, :], gather_tokens(lse, rows)[..., 0, :, :]


def _split_heads(t, hk, groups):
    """A mask or bias broadcastable to (..., Hq, nb, b, L) as (..., Hk, G, nb, b, L)."""
    if t.ndim < 4:
        return t
    split = (hk, groups) if t.shape[-4] != 1 else (1, 1)
    return t.reshape(t.shape[:-4] + split + t.shape[-3:])


def _check(op, query, key, value, key_index, allowed, query_index):
    for name, t in (("query", query), ("key", key), ("value", value), ("key_index", key_index),
                    ("allowed", allowed)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
    if query.dtype.kind != "f" or not query.dtype == key.dtype == value.dtype:
        raise TypeError(f"{op}: query, key and value must share a float dtype, got "
                        f"{query.dtype}, {key.dtype} and {value.dtype}")
    if query.ndim < 2 or query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(f"{op}: expected query (..., Tq, E), key (..., Tk, E) and value "
                         f"(..., Tk, Ev); got {query.shape}, {key.shape} and {value.shape}")
    if key_index.ndim != 2 or key_index.dtype.kind not in "iu":
        raise ValueError(f"{op}: key_index must be an integer (nb, L) Tensor, got "
                         f"{key_index.dtype} of shape {key_index.shape}")
    nb, length = key_index.shape
    if allowed.dtype.kind != "b" or allowed.ndim < 3 or allowed.shape[-3] not in (1, nb) \
            or allowed.shape[-1] not in (1, length):
        raise ValueError(f"{op}: allowed must be a bool Tensor broadcastable to (..., {nb}, b, "
                         f"{length}) for key_index of shape {key_index.shape}, got "
                         f"{allowed.dtype} of shape {allowed.shape}")
    if query_index is not None and tuple(query_index.shape) != (nb, allowed.shape[-2]):
        raise ValueError(f"{op}: query_index must be (nb, b) = {(nb, allowed.shape[-2])}, got "
                         f"{query_index.shape}")
    if query_index is None and nb * allowed.shape[-2] < query.shape[-2]:
        raise ValueError(f"{op}: {nb} blocks of {allowed.shape[-2]} queries do not cover "
                         f"{query.shape[-2]} queries")
