"""Multi-head attention (Vaswani et al., 2017), in two modules:

- `Attention`, the one tensorgrad's models use: grouped-query attention (Ainslie et al., 2023),
  rotary embeddings, a KV cache for incremental decoding, cross-attention, batch-first inputs.
  Its masks follow `F.scaled_dot_product_attention`: a bool mask is True where a query MAY
  attend, a float mask is added to the scores.
- `MultiheadAttention`, PyTorch's module of that name: the same constructor, forward, return
  value, parameter names and initialisation, so PyTorch code and state dicts carry over. Its
  bool masks mean what they mean in PyTorch's module, the opposite: True = may NOT attend.

Both take `key_padding_mask` True at padding keys (the name says what True means); see
`tensorgrad.nn.masks`.
"""
import tensorgrad as tg
from tensorgrad.autograd import untracked_view

from . import functional as F, init
from .layers import Linear
from .masks import (
    causal_mask, key_padding_mask as padding_to_attn_mask, merge_masks, to_additive,
)
from .module import Module, Parameter


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
            length = len(self)
            self.key = self._append(0, self.key, length, key)
            self.value = self._append(1, self.value, length, value)
        elif self.key is None:
            self.key, self.value = key, value
        else:
            self._storage = [None, None]  # the cached views are differentiated through: keep them
            self.key = tg.cat([self.key, key], dim=-2)
            self.value = tg.cat([self.value, value], dim=-2)
        return self.key, self.value

    def _append(self, i, cached, length, new):
        """cached (`length` positions) + new along dim -2, written into buffer i (made
        or doubled when full). Read through the arrays (`.data`): this runs twice per layer per
        decoded token (generate), and the buffer is this cache's own, so Tensor.__setitem__'s
        checks would only cost time; no graph is recorded here."""
        new_data = new.data
        end = length + new_data.shape[-2]
        buffer = self._storage[i]
        store = None if buffer is None else buffer.data
        if store is None or store.shape[-2] < end or store.shape[:-2] != new_data.shape[:-2] \
                or store.dtype != new_data.dtype:
            buffer = tg.empty(*new_data.shape[:-2], max(2 * end, 16), new_data.shape[-1],
                              dtype=new_data.dtype, device=new.device)
            if length:
                buffer.data[..., :length, :] = cached.data
            self._storage[i] = buffer
            store = buffer.data
        store[..., length:end, :] = new_data
        return untracked_view(buffer, store[..., :end, :])  # buffer[..., :end, :], no op

    def reorder(self, indices):
        """Keep the batch rows `indices` (B_new,) int64, in that order: beam search continues
        some hypotheses twice and drops others (Hugging Face's `reorder_cache`)."""
        if self.key is None:
            return
        length = len(self)
        for i, name in enumerate(("key", "value")):
            buffer = self._storage[i]
            if buffer is None:
                setattr(self, name, getattr(self, name).index_select(0, indices))
            else:  # the whole buffer, so that appending keeps writing in place
                self._storage[i] = buffer.index_select(0, indices)
                setattr(self, name, self._storage[i][..., :length, :])

    def reset(self):
        self.key = self.value = None
        self._storage = [None, None]


class Attention(Module):
    """Multi-head scaled dot-product attention over (B, T, embed_dim) inputs (batch first).

    embed_dim = num_heads * head_dim unless head_dim is given (T5 v1.1, Gemma: the heads' total
    width may differ from the model's; out_proj maps it back to embed_dim). n_kv_heads (default
    num_heads) < num_heads gives grouped-query attention (1 is multi-query attention):
    num_heads / n_kv_heads query heads share each key/value head. scale: the factor on the
    scores, as in F.scaled_dot_product_attention (default 1 / sqrt(head_dim); T5 uses 1.0).

    Parameters, named so that Hugging Face checkpoints map by renaming:
    - fused=True (default): `qkv_proj` (embed_dim -> (num_heads + 2 n_kv_heads) head_dim), the
      rows stacked [q; k; v]: torch's `in_proj_weight`/`in_proj_bias`, GPT-2's `c_attn`
      (stored transposed there). Cross-attention slices it.
    - fused=False: `q_proj`, `k_proj`, `v_proj` (LLaMA, BART, OPT; BERT's query/key/value);
      needed for key/value inputs of another width (kdim, vdim).
    - `out_proj` (embed_dim -> embed_dim): torch's out_proj, LLaMA's o_proj, GPT-2's c_proj.
    bias: whether the projections have biases (LLaMA: no). dropout: on the attention
    probabilities, in training mode. rotary: a `RotaryEmbedding` applied to queries and keys
    (it may be shared by every layer). pattern: an `attention_patterns` pattern (sliding window,
    BigBird, strided, linear) restricting self-attention; cross-attention stays dense.
    Projections start with Linear's default initialisation.
    """

    def __init__(self, embed_dim, num_heads, n_kv_heads=None, dropout=0.0, bias=True, fused=True,
                 kdim=None, vdim=None, rotary=None, head_dim=None, scale=None, device=None,
                 dtype=None, pattern=None):
        super().__init__()
        n_kv_heads = num_heads if n_kv_heads is None else n_kv_heads
        if (head_dim is None and embed_dim % num_heads) or num_heads % n_kv_heads:
            raise ValueError(f"Attention: embed_dim ({embed_dim}) must be divisible by "
                             f"num_heads ({num_heads}), and num_heads by n_kv_heads "
                             f"({n_kv_heads})")
        kdim, vdim = kdim or embed_dim, vdim or embed_dim
        if fused and (kdim != embed_dim or vdim != embed_dim):
            raise ValueError(f"Attention: kdim={kdim} and vdim={vdim} differ from "
                             f"embed_dim={embed_dim}; pass fused=False for separate projections")
        self.embed_dim, self.num_heads, self.n_kv_heads = embed_dim, num_heads, n_kv_heads
        self.head_dim = embed_dim // num_heads if head_dim is None else head_dim
        self.inner_dim = num_heads * self.head_dim  # the heads side by side: embed_dim by default
        self.dropout_p, self.fused, self.scale = dropout, fused, scale
        kv_dim = n_kv_heads * self.head_dim
        options = dict(bias=bias, device=device, dtype=dtype)
        if fused:
            self.qkv_proj = Linear(embed_dim, self.inner_dim + 2 * kv_dim, **options)
        else:
            self.q_proj = Linear(embed_dim, self.inner_dim, **options)
            self.k_proj = Linear(kdim, kv_dim, **options)
            self.v_proj = Linear(vdim, kv_dim, **options)
        self.out_proj = Linear(self.inner_dim, embed_dim, **options)
        self.rotary = rotary
        self.pattern = pattern

    def forward(self, query, key=None, value=None, attn_mask=None, key_padding_mask=None,
                is_causal=False, cache=None, positions=None):
        """Attend from query to key/value; returns (B, Tq, embed_dim).

        query: (B, Tq, embed_dim). key, value: (B, Tk, kdim/vdim) memory for cross-attention;
            None for self-attention (value defaults to key).
        attn_mask: bool (True = may attend) or additive float, broadcastable to (B, H, Tq, Tk),
            e.g. (Tq, Tk) or an ALiBi bias (H, Tq, Tk).
        key_padding_mask: (B, Tk) bool, True at padding keys (or additive float), covering the
            cached keys too.
        is_causal: query i attends to keys up to its own position (positions continue after
            the cache).
        cache: a `KVCache` to read and extend (incremental decoding); with a pattern, the
            pattern's `make_cache()`.
        positions: rotary positions (int offset or Tensor); defaults to len(cache) onwards.
        """
        if self.pattern is not None and key is None:  # sparse or linear self-attention
            out = self._attend_pattern(query, attn_mask, key_padding_mask, is_causal, cache,
                                       positions)  # (B, H, Tq, D)
            B, T, _ = query.shape
            return self.out_proj(out.transpose(1, 2).reshape(B, T, self.inner_dim))  # (B, T, H D)
        q, k, v, mask, causal = self._prepare(query, key, value, attn_mask, key_padding_mask,
                                              is_causal, cache, positions)
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=self.dropout_p if self.training else 0.0,
            is_causal=causal, scale=self.scale,
            enable_gqa=self.n_kv_heads != self.num_heads)  # (B, H, Tq, D)
        B, tq = query.shape[0], q.shape[-2]
        if tq == 1 and not out.requires_grad:  # decoding, nothing recorded: the view on the array
            return self.out_proj(untracked_view(out, out.data.reshape(B, 1, self.inner_dim)))
        if tq > 1:
            out = out.transpose(1, 2)  # (B, Tq, H, D); with one query the reshape alone does it
        return self.out_proj(out.reshape(B, tq, self.inner_dim))  # (B, Tq, H D)

    def attention_weights(self, query, key=None, value=None, attn_mask=None,
                          key_padding_mask=None, is_causal=False, positions=None):
        """The attention probabilities forward would use (before dropout), (B, H, Tq, Tk);
        arguments as forward's, without a cache. For looking at: it builds the full matrix."""
        q, k, _, mask, causal = self._prepare(query, key, value, attn_mask, key_padding_mask,
                                              is_causal, None, positions)
        if self.pattern is not None and key is None:  # the weights the pattern gives
            if self.scale is not None:
                raise NotImplementedError(f"{self._name()}: attention_weights of a pattern "
                                          f"with scale={self.scale} (the patterns' weights use "
                                          "1/sqrt(head_dim))")
            return self.pattern.weights(q, k, mask, causal,
                                        enable_gqa=self.n_kv_heads != self.num_heads)
        return F.attention_weights(q, k, attn_mask=mask, is_causal=causal, scale=self.scale,
                                   enable_gqa=self.n_kv_heads != self.num_heads)

    def _attend_pattern(self, query, attn_mask, key_padding_mask, is_causal, cache, positions):
        """Self-attention restricted to self.pattern, which keeps its own cache. A dense
        attn_mask would undo the savings: ALiBi comes from the pattern (alibi=True)."""
        if attn_mask is not None:
            raise ValueError(f"{self._name()}: with pattern={self.pattern!r} pass no attn_mask "
                             f"(got shape {attn_mask.shape}); the pattern is the mask, and "
                             "ALiBi is the pattern's alibi=True")
        past = len(cache) if cache is not None else 0
        q, k, v = self._project(query, None, None, None)
        if self.rotary is not None:
            q, k = self.rotary(q, k, past if positions is None else positions)
        return self.pattern(q, k, v, key_padding_mask=key_padding_mask, is_causal=is_causal,
                            cache=cache, dropout_p=self.dropout_p if self.training else 0.0,
                            scale=self.scale, enable_gqa=self.n_kv_heads != self.num_heads)

    def _prepare(self, query, key, value, attn_mask, key_padding_mask, is_causal, cache,
                 positions):
        """Queries (B, H, Tq, D), keys and values (B, H_kv, Tk, D) with the cache's in front,
        and the mask and is_causal flag to hand to scaled_dot_product_attention."""
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
        # With Tq == Tk the fused path applies is_causal itself; otherwise the queries are the
        # last Tq positions (bottom-right), which PyTorch's top-left is_causal is not. One query
        # (decoding) is the newest position and sees every key: no mask.
        causal = is_causal and 1 < tq != tk
        mask = None
        if attn_mask is not None or key_padding_mask is not None or causal:
            mask = merge_masks(
                attn_mask,
                None if key_padding_mask is None else padding_to_attn_mask(key_padding_mask),
                causal_mask(tq, tk, device=q.device) if causal else None, dtype=q.dtype)
        return q, k, v, mask, is_causal and tq == tk

    def _project(self, query, key, value, cache):
        """Queries (B, H, Tq, D), keys and values (B, H_kv, Tk, D); a cross-attention cache
        that already holds the memory's keys and values is reused."""
        if key is None and self.fused:
            # (B, T, (H + 2 H_kv) D) -> (B, H + 2 H_kv, T, D), split into heads in one go
            h, kv = self.num_heads, self.n_kv_heads
            qkv = self.qkv_proj(query)
            if not qkv.requires_grad:
                # Nothing to record (generate runs under no_grad): the same views taken on the
                # array, where the ops cost a reshape and three slices per layer per token
                heads = self._heads(qkv.data, h + 2 * kv)
                q, k, v = heads[:, :h], heads[:, h:h + kv], heads[:, h + kv:]
                return untracked_view(qkv, q), untracked_view(qkv, k), untracked_view(qkv, v)
            qkv = self._heads(qkv, h + 2 * kv)
            # three slices rather than split(), which checks its sizes
            return qkv[:, :h], qkv[:, h:h + kv], qkv[:, h + kv:]
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
        return [self.inner_dim, kv_dim, kv_dim]

    def _heads(self, x, heads):
        """(B, T, heads D) -> (B, heads, T, D), a Tensor or (_project) its array."""
        B, T, _ = x.shape
        if T == 1:  # one token (decoding): the same view in one op
            return x.reshape(B, heads, 1, self.head_dim)
        return x.reshape(B, T, heads, self.head_dim).swapaxes(1, 2)  # (B, heads, T, D)

    def _name(self):
        return f"Attention '{self._path}'" if self._path else "Attention"

    def extra_repr(self):
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"n_kv_heads={self.n_kv_heads}, dropout={self.dropout_p}")


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention: the same arguments, masks, return value and parameters.

    Inputs are (L, N, E) sequence first, or (N, L, E) with batch_first=True, or unbatched
    (L, E); key and value have S positions and kdim / vdim features (default embed_dim).
    Masks, as in PyTorch's module (the OPPOSITE of `Attention` and SDPA for bool masks):
    - attn_mask: (L, S), or (N * num_heads, L, S) (unbatched: (num_heads, L, S)); bool True =
      this query may NOT attend to that key, or float, added to the scores;
    - key_padding_mask: (N, S) (unbatched: (S,)); bool True = padding, ignored, or float, added.
    Parameters (PyTorch's names, so its state dicts load): `in_proj_weight` (3 embed_dim,
    embed_dim), the query, key and value projections stacked, or, when kdim or vdim differ from
    embed_dim, `q_proj_weight`, `k_proj_weight` (embed_dim, kdim), `v_proj_weight` (embed_dim,
    vdim); `in_proj_bias` (3 embed_dim,) when bias; `out_proj` (Linear embed_dim -> embed_dim).
    Initialised as PyTorch does: Xavier-uniform projections, zero biases.
    dropout: on the attention probabilities, in training mode.
    add_bias_kv: one more key and value at the end of every sequence, learned (`bias_k`,
    `bias_v`, (1, 1, embed_dim)); add_zero_attn: one more, all zeros, after the heads are split.
    Masks leave the added positions visible. A query whose keys are all masked outputs 0
    (PyTorch: NaN).
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if num_heads <= 0 or embed_dim <= 0 or embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be a positive "
                             f"multiple of num_heads ({num_heads})")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.dropout, self.batch_first = dropout, batch_first
        options = dict(device=device, dtype=dtype)
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(tg.empty(3 * embed_dim, embed_dim, **options))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.register_parameter("in_proj_weight", None)
            self.q_proj_weight = Parameter(tg.empty(embed_dim, embed_dim, **options))
            self.k_proj_weight = Parameter(tg.empty(embed_dim, self.kdim, **options))
            self.v_proj_weight = Parameter(tg.empty(embed_dim, self.vdim, **options))
        if bias:
            self.in_proj_bias = Parameter(tg.empty(3 * embed_dim, **options))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, **options)
        if add_bias_kv:
            self.bias_k = Parameter(tg.empty(1, 1, embed_dim, **options))
            self.bias_v = Parameter(tg.empty(1, 1, embed_dim, **options))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        # PyTorch's choice: Xavier over the stacked (3E, E) matrix, so each projection's bound
        # is sqrt(6 / 4E); out_proj keeps Linear's default weight but starts with a zero bias.
        for weight in (self.in_proj_weight, self.q_proj_weight, self.k_proj_weight,
                       self.v_proj_weight):
            if weight is not None:
                init.xavier_uniform_(weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        """Returns (attn_output, attn_weights): attn_output in the query's layout, (L, N, E) or
        (N, L, E) (unbatched: (L, E)); attn_weights, when need_weights, the probabilities used
        (after dropout) averaged over heads, (N, L, S), or per head (N, num_heads, L, S) with
        average_attn_weights=False (unbatched: without N); None otherwise.
        is_causal: a hint that attn_mask is the causal mask (it must be given, as in PyTorch);
        without a key_padding_mask or need_weights the causal mask is applied without reading it.
        """
        batched = self._check_inputs(query, key, value, key_padding_mask, attn_mask)
        if is_causal and attn_mask is None:
            raise ValueError("MultiheadAttention: is_causal=True is a hint that attn_mask is the "
                             "causal mask and needs attn_mask, as in PyTorch; pass attn_mask="
                             "~nn.masks.causal_mask(L) (True = not allowed)")
        self_attention = query is key and key is value  # one packed projection will do
        if not batched:  # (L, E) -> (1, L, E)
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif not self.batch_first:  # (L, N, E) -> (N, L, E)
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        if self_attention:
            key = value = query
        N, L, E = query.shape
        q, k, v = self._in_projection(query, key, value)  # (N, L, E), (N, S, E), (N, S, E)
        if self.bias_k is not None:  # one more, learned, key and value: (N, S + 1, E)
            k = tg.cat([k, self.bias_k.expand(N, 1, E)], dim=1)
            v = tg.cat([v, self.bias_v.expand(N, 1, E)], dim=1)
        q, k, v = self._heads(q), self._heads(k), self._heads(v)  # (N, H, L or S', D)
        if self.add_zero_attn:  # one more key and value, zeros: (N, H, S' + 1, D)
            zeros = tg.zeros(N, self.num_heads, 1, self.head_dim, dtype=k.dtype, device=k.device)
            k, v = tg.cat([k, zeros], dim=2), tg.cat([v, zeros], dim=2)
        added = k.shape[2] - key.shape[1]  # keys no mask covers
        dropout_p = self.dropout if self.training else 0.0
        weights = None
        if need_weights:
            mask = self._mask(attn_mask, key_padding_mask, N, q.dtype, added)
            weights = F.attention_weights(q, k, attn_mask=mask)  # (N, H, L, S)
            weights = F.dropout(weights, dropout_p) if dropout_p else weights
            out = weights @ v  # (N, H, L, S) @ (N, H, S, D) -> (N, H, L, D)
        elif is_causal and key_padding_mask is None:  # PyTorch too trusts the hint here
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)
        else:
            mask = self._mask(attn_mask, key_padding_mask, N, q.dtype, added)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
        out = self.out_proj(out.transpose(1, 2).reshape(N, L, E))  # (N, L, E)
        if weights is not None and average_attn_weights:
            weights = weights.mean(1)  # (N, L, S)
        if not batched:
            return out.squeeze(0), None if weights is None else weights.squeeze(0)
        return (out if self.batch_first else out.transpose(0, 1)), weights

    def _in_projection(self, query, key, value):
        """The projected queries (N, L, E), keys and values (N, S, E). Self-attention with the
        stacked weight is one matmul."""
        E, bias = self.embed_dim, self.in_proj_bias
        biases = (None,) * 3 if bias is None else bias.split(E)
        if self._qkv_same_embed_dim:
            if query is key and key is value:
                return F.linear(query, self.in_proj_weight, bias).split(E, dim=-1)
            weights = self.in_proj_weight.split(E)
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        return tuple(F.linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))

    def _heads(self, x):
        N, T, _ = x.shape
        return x.reshape(N, T, self.num_heads, self.head_dim).transpose(1, 2)  # (N, H, T, D)

    def _mask(self, attn_mask, key_padding_mask, N, dtype, added):
        """PyTorch's masks as one mask broadcastable to (N, H, L, S + added), or None; the
        `added` keys at the end (add_bias_kv, add_zero_attn) are visible to every query."""
        if attn_mask is not None:
            if attn_mask.dtype.kind == "b":
                attn_mask = to_additive(~attn_mask, dtype)  # True = not allowed -> -inf
            if attn_mask.ndim == 3:  # (N * H, L, S) -> (N, H, L, S)
                attn_mask = attn_mask.reshape(N, self.num_heads, *attn_mask.shape[1:])
        if key_padding_mask is not None:
            key_padding_mask = padding_to_attn_mask(key_padding_mask)  # (N, 1, 1, S)
        mask = merge_masks(attn_mask, key_padding_mask, dtype=dtype)
        if mask is None or not added:
            return mask
        if mask.dtype.kind == "b":
            mask = to_additive(mask, dtype)
        return F.pad(mask, (0, added))  # 0 added to the scores of the added keys

    def _check_inputs(self, query, key, value, key_padding_mask, attn_mask):
        """Shapes and dtypes as PyTorch's module accepts them; returns whether batched."""
        name = f"MultiheadAttention '{self._path}'" if self._path else "MultiheadAttention"
        if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
            raise ValueError(f"{name}: expected query, key and value all 3-D (batched) or all "
                             f"2-D (unbatched), got {query.shape}, {key.shape} and {value.shape}")
        batched = query.ndim == 3
        seq, batch = (1, 0) if self.batch_first or not batched else (0, 1)
        expected = (("query", query, self.embed_dim), ("key", key, self.kdim),
                    ("value", value, self.vdim))
        for label, t, width in expected:
            if t.shape[-1] != width:
                raise ValueError(f"{name}: expected {label} with {width} features, got shape "
                                 f"{t.shape}")
        if key.shape[:-1] != value.shape[:-1] \
                or (batched and query.shape[batch] != key.shape[batch]):
            raise ValueError(f"{name}: key and value must have the same positions and batch, "
                             f"and the batch of query; got {query.shape}, {key.shape} and "
                             f"{value.shape}{'' if self.batch_first else ' (sequence first)'}")
        L, S = query.shape[seq if batched else 0], key.shape[seq if batched else 0]
        N = query.shape[batch] if batched else None
        shapes = {"key_padding_mask": [(N, S)] if batched else [(S,)],
                  "attn_mask": [(L, S), ((N if batched else 1) * self.num_heads, L, S)]}
        for label, mask in (("key_padding_mask", key_padding_mask), ("attn_mask", attn_mask)):
            if mask is None:
                continue
            if mask.dtype.kind not in "bf":
                raise TypeError(f"{name}: {label} must be bool (True = not allowed) or float "
                                f"(added to the scores), got {mask.dtype}")
            if tuple(mask.shape) not in shapes[label]:
                raise ValueError(f"{name}: expected {label} of shape "
                                 f"{' or '.join(map(str, shapes[label]))}, got {mask.shape}")
        return batched

    def extra_repr(self):
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")
