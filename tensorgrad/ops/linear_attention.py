"""Linear attention (Katharopoulos et al., 2020, "Transformers are RNNs"): the softmax kernel
exp(q . k) replaced by phi(q) . phi(k) with a positive feature map phi, so that

    out_i = phi(q_i) sum_j phi(k_j) v_j^T / (phi(q_i) . sum_j phi(k_j) + eps)

and the sums over keys are computed once: O(T E Ev) instead of O(T^2). Causal attention needs
prefix sums (query i sums keys j <= i). Materialising every prefix of phi(k) v^T would hold
(T, E, Ev); instead the sequence is cut into chunks: the prefix sum (cumsum) runs over the
chunks' sums, and inside a chunk the (chunk, chunk) lower triangle is computed directly.
Memory is O(T chunk + T / chunk E Ev). The same recurrence decodes one token at a time from
the state (S = sum phi(k) v^T, z = sum phi(k)).

Composites only: the gradients come from the ops. Equal to the quadratic form
phi(Q) phi(K)^T (masked) V normalised, which the tests compute.
"""
from ..tensor import from_array
from .activation import elu, relu
from .reduce import cumsum
from .shape import pad


FEATURE_MAPS = {
    "elu": lambda x: elu(x) + 1.0,  # the paper's elu(x) + 1: positive, smooth, gradient everywhere
    "relu": relu,
}


def feature_map_fn(feature_map):
    """A feature map by name ('elu': elu(x) + 1, 'relu') or a callable, returned as a callable."""
    if callable(feature_map):
        return feature_map
    if feature_map not in FEATURE_MAPS:
        raise ValueError(f"linear_attention: unknown feature_map {feature_map!r}; expected one "
                         f"of {sorted(FEATURE_MAPS)} or a callable")
    return FEATURE_MAPS[feature_map]


def linear_attention(query, key, value, is_causal=False, feature_map="elu",
                     key_padding_mask=None, eps=1e-6, chunk_size=64, state=None,
                     return_state=False, enable_gqa=False):
    """Kernelised attention: phi(Q) (phi(K)^T V) normalised by phi(Q) . sum phi(K) + eps.

    query: (..., Hq, Tq, E); key: (..., Hk, Tk, E); value: (..., Hk, Tk, Ev).
    is_causal: query i sums keys j <= i (Tq == Tk, or Tq new queries after `state`).
    feature_map: 'elu' (elu(x) + 1, the paper's), 'relu', or a callable on tensors.
    key_padding_mask: (B, Tk) bool, True at padding (left out of the sums).
    chunk_size: the causal path's chunk length (memory vs the number of steps).
    state: (S (..., Hk, E, Ev), z (..., Hk, E)) sums over earlier keys (causal decoding).
    return_state: also return the sums including these keys (for the next call).
    enable_gqa: Hk divides Hq; query head h reads key head h // (Hq / Hk).
    Returns out (..., Hq, Tq, Ev), and (out, (S, z)) with return_state.
    """
    op = "linear_attention"
    if query.dtype.kind != "f" or not query.dtype == key.dtype == value.dtype:
        raise TypeError(f"{op}: query, key and value must share a float dtype, got "
                        f"{query.dtype}, {key.dtype} and {value.dtype}")
    if query.ndim < 3 or query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(f"{op}: expected query (..., H, Tq, E), key (..., H, Tk, E) and value "
                         f"(..., H, Tk, Ev); got {query.shape}, {key.shape} and {value.shape}")
    if is_causal and query.shape[-2] != key.shape[-2]:
        raise ValueError(f"{op}: causal attention needs as many queries as keys (earlier keys "
                         f"go in `state`), got {query.shape[-2]} and {key.shape[-2]}")
    phi = feature_map_fn(feature_map)
    hq, hk = query.shape[-3], key.shape[-3]
    groups = hq // hk if enable_gqa and hq != hk and not hq % hk else 1
    if groups == 1 and hq != hk:
        raise ValueError(f"{op}: {hq} query heads and {hk} key heads need enable_gqa=True and "
                         f"key heads that divide the query heads")
    fq, fk = phi(query), phi(key)
    if key_padding_mask is not None:  # (B, Tk) -> (B, 1, Tk, 1): padded keys drop out
        keep = (~key_padding_mask).to(fk.dtype)
        fk = fk * keep.reshape(keep.shape[0], 1, keep.shape[1], 1)
    if groups > 1:  # (..., Hq, T, E) -> (..., Hk, G, T, E); keys get a size-1 G to broadcast
        fq = fq.reshape(fq.shape[:-3] + (hk, groups) + fq.shape[-2:])
        fk, value = fk.unsqueeze(-3), value.unsqueeze(-3)
        if state is not None:
            state = (state[0].unsqueeze(-3), state[1].unsqueeze(-2))
    if is_causal:
        out, new_state = _causal(fq, fk, value, eps, chunk_size, state)
    else:
        kv, z = fk.mT @ value, fk.sum(-2)  # (..., E, T) @ (..., T, Ev) -> (..., E, Ev); (.., E)
        if state is not None:
            kv, z = kv + state[0], z + state[1]
        out = (fq @ kv) / ((fq @ z.unsqueeze(-1)) + eps)  # (..., Tq, Ev) / (..., Tq, 1)
        new_state = (kv, z)
    if groups > 1:
        out = out.reshape(out.shape[:-4] + (hq,) + out.shape[-2:])
        new_state = (new_state[0].squeeze(-3), new_state[1].squeeze(-2))
    return (out, new_state) if return_state else out


def _causal(fq, fk, v, eps, chunk_size, state):
    """The causal sums by chunks: each chunk reads the prefix sum of the chunks before it (a
    cumsum over chunk sums, plus `state`) and its own lower triangle."""
    t, e, ev = fq.shape[-2], fq.shape[-1], v.shape[-1]
    c = max(1, min(chunk_size, t))
    n = -(-t // c)
    if n * c > t:  # zero rows: padded keys add nothing, padded queries are dropped
        fq, fk, v = (pad(x, (0, 0, 0, n * c - t)) for x in (fq, fk, v))
    fq = fq.reshape(fq.shape[:-2] + (n, c, e))  # (..., n, c, E)
    fk = fk.reshape(fk.shape[:-2] + (n, c, e))
    v = v.reshape(v.shape[:-2] + (n, c, ev))
    chunk_kv = fk.mT @ v  # (..., n, E, c) @ (..., n, c, Ev) -> (..., n, E, Ev)
    chunk_z = fk.sum(-2)  # (..., n, E)
    total_kv, total_z = cumsum(chunk_kv, -3), cumsum(chunk_z, -2)  # inclusive prefix sums
    before_kv = pad(total_kv[..., :-1, :, :], (0, 0, 0, 0, 1, 0))  # exclusive: chunks < j
    before_z = pad(total_z[..., :-1, :], (0, 0, 1, 0))
    if state is not None:
        before_kv = before_kv + state[0].unsqueeze(-3)
        before_z = before_z + state[1].unsqueeze(-2)
    xp = fq._backend
    lower = from_array(xp.tril(xp.ones((c, c), dtype=fq.dtype)), xp)
    inner = (fq @ fk.mT) * lower  # (..., n, c, E) @ (..., n, E, c) -> (..., n, c, c), j <= i
    num = fq @ before_kv + inner @ v  # (..., n, c, Ev)
    den = (fq * before_z.unsqueeze(-2)).sum(-1, keepdim=True) + inner.sum(-1, keepdim=True)
    out = (num / (den + eps)).reshape(num.shape[:-3] + (n * c, ev))[..., :t, :]
    last_kv, last_z = total_kv[..., -1, :, :], total_z[..., -1, :]
    if state is not None:
        last_kv, last_z = last_kv + state[0], last_z + state[1]
    return out, (last_kv, last_z)
