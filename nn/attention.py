"""Multi-head attention (Vaswani et al., 2017) with grouped-query attention (Ainslie et al., 2023),
rotary embeddings and a KV cache for incremental decoding.

Masks follow `F.scaled_dot_product_attention` (bool True = may attend, or additive float), not
torch.nn.MultiheadAttention, whose bool attn_mask means the opposite (True = masked out). A
`key_padding_mask` is True at padding keys, as in PyTorch (the name says what True means); see
`tensorgrad.nn.masks`.
"""
import tensorgrad as tg

from . import functional as F
from .layers import Linear
from .masks import causal_mask, key_padding_mask as padding_to_attn_mask, merge_masks
from .module import Module


class KVCache:
    """The projected keys and values one attention layer has seen, for incremental decoding.

    Make one per attention layer and pass it as `cache=` to every call while decoding:
    - self-attention appends each call's new keys and values (B, n_kv_heads, T_new, head_dim)
      and attends over everything cached, so a prompt followed by one token at a time gives
      the same outputs as one forward pass over the whole sequence (the causal mask and the
      rotary positions start at `len(cache)`);
    - cross-attention projects the memory on the first call only and reuses it afterwards.
    Nothing is freed automatically: make a new cache (or call `reset`) for a new sequence.

    Under no_grad (generation) the keys and values are written into buffers that grow by
    doubling, and `key`/`value` are views of their filled part: appending a token copies one
    token, not the whole cache, so decoding n tokens copies O(n) rather than O(n^2). With grad
    recording, appending is a differentiable `cat`.
    """

    def __init__(self):
        self.key = self.value = None
        self._storage = [None, None]  # key and value buffers with room along dim -2 (no_grad)

    def __len__(self):
        return 0 if self.key is None else self.key.shape[-2]

    def update(self, key, value):
        """Append (B, H, T_new, D) keys and values; return all cached ones (B, H, T, D)."""
        if not tg.is_grad_enabled():
            self.key = self._append(0, self.key, key)
            self.value = self._append(1, self.value, value)
        elif self.key is None:
            self.key, self.value = key, value
        else:
            self._storage = [None, None]  # the cached views are differentiated through: keep them
            self.key = tg.cat([self.key, key], dim=-2)
            self.value = tg.cat([self.value, value], dim=-2)
        return self.key, self.value

    def _append(self, i, cached, new):
        """cached + new along dim -2, written into buffer i (made or doubled when full)."""
        length, added = (0 if cached is None else cached.shape[-2]), new.shape[-2]
        buffer = self._storage[i]
        if buffer is None or buffer.shape[-2] < length + added \
                or buffer.shape[:-2] != new.shape[:-2] or buffer.dtype != new.dtype:
            buffer = tg.empty(*new.shape[:-2], max(2 * (length + added), 16), new.shape[-1],
                              dtype=new.dtype, device=new.device)
            if length:
                buffer[..., :length, :] = cached
            self._storage[i] = buffer
        buffer[..., length:length + added, :] = new
        return buffer[..., :length + added, :]

    def reset(self):
        self.key = self.value = None
        self._storage = [None, None]


class MultiheadAttention(Module):
    """Multi-head scaled dot-product attention over (B, T, embed_dim) inputs (batch first).

    embed_dim = num_heads * head_dim. n_kv_heads (default num_heads) < num_heads gives
    grouped-query attention (1 is multi-query attention): num_heads / n_kv_heads query heads
    share each key/value head.

    Parameters, named so that Hugging Face checkpoints map by renaming:
    - fused=True (default): `qkv_proj` (embed_dim -> (num_heads + 2 n_kv_heads) head_dim), the
      rows stacked [q; k; v]: torch's `in_proj_weight`/`in_proj_bias`, GPT-2's `c_attn`
      (stored transposed there). Cross-attention slices it.
    - fused=False: `q_proj`, `k_proj`, `v_proj` (LLaMA, BART, OPT; BERT's query/key/value);
      needed for key/value inputs of another width (kdim, vdim).
    - `out_proj` (embed_dim -> embed_dim): torch's out_proj, LLaMA's o_proj, GPT-2's c_proj.
    bias: whether the projections have biases (LLaMA: no). dropout: on the attention
    probabilities, in training mode. rotary: a `RotaryEmbedding` applied to queries and keys
    (it may be shared by every layer). Projections start with Linear's default initialisation.
    """

    def __init__(self, embed_dim, num_heads, n_kv_heads=None, dropout=0.0, bias=True, fused=True,
                 kdim=None, vdim=None, rotary=None, device=None, dtype=None):
        super().__init__()
        n_kv_heads = num_heads if n_kv_heads is None else n_kv_heads
        if embed_dim % num_heads or num_heads % n_kv_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by "
                             f"num_heads ({num_heads}), and num_heads by n_kv_heads "
                             f"({n_kv_heads})")
        kdim, vdim = kdim or embed_dim, vdim or embed_dim
        if fused and (kdim != embed_dim or vdim != embed_dim):
            raise ValueError(f"MultiheadAttention: kdim={kdim} and vdim={vdim} differ from "
                             f"embed_dim={embed_dim}; pass fused=False for separate projections")
        self.embed_dim, self.num_heads, self.n_kv_heads = embed_dim, num_heads, n_kv_heads
        self.head_dim = embed_dim // num_heads
        self.dropout_p, self.fused = dropout, fused
        kv_dim = n_kv_heads * self.head_dim
        options = dict(bias=bias, device=device, dtype=dtype)
        if fused:
            self.qkv_proj = Linear(embed_dim, embed_dim + 2 * kv_dim, **options)
        else:
            self.q_proj = Linear(embed_dim, embed_dim, **options)
            self.k_proj = Linear(kdim, kv_dim, **options)
            self.v_proj = Linear(vdim, kv_dim, **options)
        self.out_proj = Linear(embed_dim, embed_dim, **options)
        self.rotary = rotary

    def forward(self, query, key=None, value=None, attn_mask=None, key_padding_mask=None,
                is_causal=False, need_weights=False, average_attn_weights=True, cache=None,
                positions=None):
        """Attend from query to key/value.

        query: (B, Tq, embed_dim). key, value: (B, Tk, kdim/vdim) memory for cross-attention;
            None for self-attention (value defaults to key).
        attn_mask: bool (True = may attend) or additive float, broadcastable to (B, H, Tq, Tk),
            e.g. (Tq, Tk) or an ALiBi bias (H, Tq, Tk).
        key_padding_mask: (B, Tk) bool, True at padding keys (or additive float), covering the
            cached keys too.
        is_causal: query i attends to keys up to its own position (positions continue after
            the cache).
        need_weights: also return the attention probabilities (recomputed; pre-dropout),
            (B, Tq, Tk) averaged over heads, or (B, H, Tq, Tk) with average_attn_weights=False.
        cache: a `KVCache` to read and extend (incremental decoding).
        positions: rotary positions (int offset or Tensor); defaults to len(cache) onwards.
        Returns (output (B, Tq, embed_dim), weights or None), as torch's MultiheadAttention.
        """
        if query.ndim != 3 or query.shape[-1] != self.embed_dim:
            raise ValueError(f"{self._name()}: expected query of shape (B, T, {self.embed_dim}),"
                             f" got {query.shape}")
        past = len(cache) if cache is not None else 0
        q, k, v = self._project(query, key, value, cache)
        if self.rotary is not None and key is None:
            q, k = self.rotary(q, k, past if positions is None else positions)
        if cache is not None and (key is None or past == 0):
            k, v = cache.update(k, v)
        tq, tk = q.shape[-2], k.shape[-2]
        mask = merge_masks(
            attn_mask, None if key_padding_mask is None else padding_to_attn_mask(key_padding_mask),
            # With Tq == Tk the fused path applies is_causal itself; otherwise the queries are
            # the last Tq positions (bottom-right), which PyTorch's top-left is_causal is not.
            # One query (decoding) is the newest position and sees every key: no mask.
            causal_mask(tq, tk, device=q.device) if is_causal and 1 < tq != tk else None,
            dtype=q.dtype)
        causal = is_causal and tq == tk
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=self.dropout_p if self.training else 0.0,
            is_causal=causal, enable_gqa=self.n_kv_heads != self.num_heads)  # (B, H, Tq, D)
        if tq > 1:
            out = out.transpose(1, 2)  # (B, Tq, H, D); with one query the reshape alone does it
        out = out.reshape(query.shape[0], tq, self.embed_dim)  # (B, Tq, C)
        weights = None
        if need_weights:
            weights = F.attention_weights(q, k, attn_mask=mask, is_causal=causal,
                                          enable_gqa=self.n_kv_heads != self.num_heads)
            weights = weights.mean(1) if average_attn_weights else weights
        return self.out_proj(out), weights

    def _project(self, query, key, value, cache):
        """Queries (B, H, Tq, D), keys and values (B, H_kv, Tk, D); a cross-attention cache
        that already holds the memory's keys and values is reused."""
        if key is None and self.fused:
            # (B, T, (H + 2 H_kv) D) -> (B, H + 2 H_kv, T, D), split into heads in one go
            qkv = self._heads(self.qkv_proj(query), self.num_heads + 2 * self.n_kv_heads)
            return qkv.split([self.num_heads, self.n_kv_heads, self.n_kv_heads], dim=1)
        q = self._heads(self._linear(0, query), self.num_heads)
        if key is not None and cache is not None and len(cache):
            return q, cache.key, cache.value
        key = query if key is None else key
        value = key if value is None else value
        return (q, self._heads(self._linear(1, key), self.n_kv_heads),
                self._heads(self._linear(2, value), self.n_kv_heads))

    def _linear(self, i, x):
        """The i-th projection (0 = q, 1 = k, 2 = v) of x; a slice of qkv_proj when fused."""
        if not self.fused:
            return (self.q_proj, self.k_proj, self.v_proj)[i](x)
        sizes = self._split_sizes()
        rows = slice(sum(sizes[:i]), sum(sizes[:i + 1]))
        bias = self.qkv_proj.bias
        return F.linear(x, self.qkv_proj.weight[rows], None if bias is None else bias[rows])

    def _split_sizes(self):
        kv_dim = self.n_kv_heads * self.head_dim
        return [self.embed_dim, kv_dim, kv_dim]

    def _heads(self, x, heads):
        B, T, _ = x.shape
        if T == 1:  # one token (decoding): the same view in one op
            return x.reshape(B, heads, 1, self.head_dim)
        return x.reshape(B, T, heads, self.head_dim).transpose(1, 2)  # (B, heads, T, D)

    def _name(self):
        return f"MultiheadAttention '{self._path}'" if self._path else "MultiheadAttention"

    def extra_repr(self):
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"n_kv_heads={self.n_kv_heads}, dropout={self.dropout_p}")
