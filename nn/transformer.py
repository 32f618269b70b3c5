"""Transformer blocks: the encoder block (bidirectional self-attention, feed-forward) and the
decoder block (causal self-attention, optional cross-attention, feed-forward).

Each sublayer sits in a residual connection, with its norm either
- after it, post-LN (Vaswani et al., 2017; BERT): x = norm(x + dropout(sublayer(x))), or
- before it, pre-LN (GPT-2, LLaMA; Xiong et al., 2020): x = x + dropout(sublayer(norm(x))),
  which trains without learning-rate warm-up; the model then applies one final norm.
`dropout` is the residual dropout; `attn_dropout` drops attention probabilities.

Parameter names, and how Hugging Face checkpoints map onto them:
- `attn_norm`, `self_attn` (an `nn.Attention`: `qkv_proj` or `q_proj`/`k_proj`/`v_proj`,
  and `out_proj`), `cross_attn_norm`, `cross_attn` (decoder with cross-attention),
  `ffn_norm`, `ffn` (a FeedForward: `up_proj`, `down_proj`, `gate_proj` when gated).
- GPT-2 `h.{i}`: ln_1 -> attn_norm, attn.c_attn -> self_attn.qkv_proj, attn.c_proj ->
  self_attn.out_proj, ln_2 -> ffn_norm, mlp.c_fc -> ffn.up_proj, mlp.c_proj -> ffn.down_proj
  (GPT-2's Conv1D weights are stored transposed).
- LLaMA `layers.{i}` (fused_qkv=False, norm="rmsnorm", activation="swiglu", bias=False):
  input_layernorm -> attn_norm, self_attn.{q,k,v}_proj -> self_attn.{q,k,v}_proj,
  self_attn.o_proj -> self_attn.out_proj, post_attention_layernorm -> ffn_norm, mlp.* -> ffn.*.
- BERT `layer.{i}` (post-LN, fused_qkv=False): attention.self.{query,key,value} ->
  self_attn.{q,k,v}_proj, attention.output.dense -> self_attn.out_proj,
  attention.output.LayerNorm -> attn_norm, intermediate.dense -> ffn.up_proj, output.dense ->
  ffn.down_proj, output.LayerNorm -> ffn_norm.
"""
from .attention import Attention
from .feedforward import FeedForward
from .layers import Dropout, LayerNorm, RMSNorm
from .module import Module


def _norm(kind, d_model, eps, device, dtype):
    if kind == "layernorm":
        return LayerNorm(d_model, eps=eps, device=device, dtype=dtype)
    if kind == "rmsnorm":
        return RMSNorm(d_model, eps=eps, device=device, dtype=dtype)
    raise ValueError(f"Transformer block: norm must be 'layernorm' or 'rmsnorm', got {kind!r}")


class _Block(Module):
    """What both blocks share: their sublayers, each with its norm."""

    def __init__(self, d_model, num_heads, d_ff, dropout, attn_dropout, activation, norm,
                 norm_first, norm_eps, bias, n_kv_heads, fused_qkv, rotary, cross_attention,
                 device, dtype):
        super().__init__()
        self.norm_first = norm_first
        norm_options = (norm, d_model, norm_eps, device, dtype)
        attn_options = dict(dropout=attn_dropout, bias=bias, device=device, dtype=dtype)
        self.attn_norm = _norm(*norm_options)
        self.self_attn = Attention(d_model, num_heads, n_kv_heads, fused=fused_qkv,
                                   rotary=rotary, **attn_options)
        if cross_attention:
            self.cross_attn_norm = _norm(*norm_options)
            self.cross_attn = Attention(d_model, num_heads, n_kv_heads, fused=fused_qkv,
                                        **attn_options)
        self.ffn_norm = _norm(*norm_options)
        self.ffn = FeedForward(d_model, d_ff, activation, bias=bias, device=device, dtype=dtype)
        self.dropout = Dropout(dropout)  # residual dropout, on each sublayer's output


class EncoderBlock(_Block):
    """Bidirectional self-attention then feed-forward. x: (B, T, d_model) -> same shape.

    d_ff, activation: as FeedForward (default 4 d_model, GELU). norm: "layernorm" or
    "rmsnorm". norm_first: pre-LN (True) or post-LN (False, BERT). bias: on every projection.
    n_kv_heads, fused_qkv, rotary: as Attention (n_kv_heads, fused, rotary).
    """

    def __init__(self, d_model, num_heads, d_ff=None, dropout=0.0, attn_dropout=0.0,
                 activation="gelu", norm="layernorm", norm_first=True, norm_eps=1e-5, bias=True,
                 n_kv_heads=None, fused_qkv=True, rotary=None, device=None, dtype=None):
        super().__init__(d_model, num_heads, d_ff, dropout, attn_dropout, activation, norm,
                         norm_first, norm_eps, bias, n_kv_heads, fused_qkv, rotary, False,
                         device, dtype)

    def forward(self, x, attn_mask=None, key_padding_mask=None, positions=None):
        """attn_mask: bool (True = attend) or additive, e.g. an ALiBi or T5 bias; key_padding_mask:
        (B, T) True at padding. positions: for rotary embeddings (default 0, 1, ...)."""
        attend = dict(attn_mask=attn_mask, key_padding_mask=key_padding_mask, positions=positions)
        if self.norm_first:  # pre-LN: x + sublayer(norm(x))
            x = x + self.dropout(self.self_attn(self.attn_norm(x), **attend))  # (B, T, C)
            x = x + self.dropout(self.ffn(self.ffn_norm(x)))  # (B, T, C)
        else:  # post-LN: norm(x + sublayer(x))
            x = self.attn_norm(x + self.dropout(self.self_attn(x, **attend)))
            x = self.ffn_norm(x + self.dropout(self.ffn(x)))
        return x


class DecoderBlock(_Block):
    """Causal self-attention, cross-attention to an encoder's output (cross_attention=True;
    the original Transformer's and T5's decoder), then feed-forward. Without cross-attention
    this is the GPT / LLaMA block. x: (B, T, d_model) -> same shape. Arguments as EncoderBlock.
    """

    def __init__(self, d_model, num_heads, d_ff=None, dropout=0.0, attn_dropout=0.0,
                 activation="gelu", norm="layernorm", norm_first=True, norm_eps=1e-5, bias=True,
                 n_kv_heads=None, fused_qkv=True, rotary=None, cross_attention=False,
                 device=None, dtype=None):
        super().__init__(d_model, num_heads, d_ff, dropout, attn_dropout, activation, norm,
                         norm_first, norm_eps, bias, n_kv_heads, fused_qkv, rotary,
                         cross_attention, device, dtype)
        self.has_cross_attention = cross_attention

    def forward(self, x, memory=None, attn_mask=None, key_padding_mask=None,
                memory_key_padding_mask=None, cache=None, cross_cache=None, positions=None):
        """memory: (B, S, d_model) encoder output (needed with cross-attention).
        attn_mask, key_padding_mask: extra masks for the self-attention (it is causal anyway).
        memory_key_padding_mask: (B, S) True at padded memory positions.
        cache, cross_cache: KVCache objects for incremental decoding (see KVCache).
        positions: for rotary embeddings (default: continuing after the cache)."""
        if self.has_cross_attention and memory is None:
            raise ValueError(f"DecoderBlock '{self._path}': this block has cross-attention "
                             "and needs memory (the encoder's output)")
        attend = dict(attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=True,
                      cache=cache, positions=positions)
        attend_memory = dict(key_padding_mask=memory_key_padding_mask, cache=cross_cache)
        if self.norm_first:  # pre-LN: x + sublayer(norm(x))
            x = x + self.dropout(self.self_attn(self.attn_norm(x), **attend))  # (B, T, C)
            if self.has_cross_attention:
                h = self.cross_attn(self.cross_attn_norm(x), memory, **attend_memory)
                x = x + self.dropout(h)  # (B, T, C)
            x = x + self.dropout(self.ffn(self.ffn_norm(x)))  # (B, T, C)
        else:  # post-LN: norm(x + sublayer(x))
            x = self.attn_norm(x + self.dropout(self.self_attn(x, **attend)))
            if self.has_cross_attention:
                h = self.cross_attn(x, memory, **attend_memory)
                x = self.cross_attn_norm(x + self.dropout(h))
            x = self.ffn_norm(x + self.dropout(self.ffn(x)))
        return x
