"""PyTorch's Transformer modules with its arguments, masks, parameter names and initialisation:
nn.Transformer, nn.TransformerEncoder(Layer), nn.TransformerDecoder(Layer) (Vaswani et al.,
2017). Built on nn.MultiheadAttention, so the masks mean what they mean there: a bool attn_mask
is True where attending is NOT allowed, a float one is added to the scores; key padding masks
are True at padding. (tensorgrad's own blocks for the models are in nn/transformer.py.)

Parameter names, as in torch: `self_attn` (and `multihead_attn` in the decoder) with
`in_proj_weight`, `in_proj_bias`, `out_proj`; `linear1`, `linear2`; `norm1`, `norm2` (`norm3`).
One documented difference: PyTorch's encoder, in eval mode without gradients, may take a
nested-tensor fast path that writes 0 at padded positions; here padded positions are computed
as in training (their values are never read by unpadded positions either way).
"""
import copy

import tensorgrad as tg

from . import functional as F
from . import init
from .attention import MultiheadAttention
from .containers import ModuleList
from .layers import Dropout, LayerNorm, Linear
from .module import Module

__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerEncoderLayer"]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation):
    if callable(activation):
        return activation
    if activation not in _ACTIVATIONS:
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return _ACTIVATIONS[activation]


class _Layer(Module):
    """What both layers share, made in PyTorch's order (that of their state dicts)."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                 batch_first, norm_first, bias, decoder, device, dtype):
        super().__init__()
        options = dict(device=device, dtype=dtype)
        attention = dict(dropout=dropout, bias=bias, batch_first=batch_first, **options)
        self.self_attn = MultiheadAttention(d_model, nhead, **attention)
        if decoder:  # attention to the encoder's output
            self.multihead_attn = MultiheadAttention(d_model, nhead, **attention)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **options)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **options)
        self.norm_first = norm_first
        for i in range(1, 4 if decoder else 3):
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **options))
            setattr(self, f"dropout{i}", Dropout(dropout))
        self.activation = _activation(activation)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x, dropout):
        return dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoderLayer(_Layer):
    """Self-attention then feed-forward, each in a residual connection with a LayerNorm after
    it (norm_first=False, the paper's) or before it (norm_first=True).

    src: (S, N, E), (N, S, E) with batch_first, or (S, E) unbatched -> the same shape.
    activation: "relu", "gelu" or a callable. dropout: on the attention probabilities, inside
    the feed-forward network and on both residual branches.
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                         batch_first, norm_first, bias, False, device, dtype)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        """src_mask: (S, S) or (N nhead, S, S); src_key_padding_mask: (N, S), True at padding;
        is_causal: a hint that src_mask is the causal mask (which must be given)."""
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x), self.dropout2)
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x, self.dropout2))
        return x


class TransformerDecoderLayer(_Layer):
    """Self-attention, attention to the encoder's output (`multihead_attn`), then feed-forward;
    norms as TransformerEncoderLayer. tgt: (T, N, E) (batch_first: (N, T, E)); memory:
    (S, N, E) -> the shape of tgt."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                         batch_first, norm_first, bias, True, device, dtype)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x), self.dropout3)
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x, self.dropout3))
        return x

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, memory, memory, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, need_weights=False,
                                is_causal=is_causal)[0]
        return self.dropout2(x)


def _clones(layer, n):
    return ModuleList([copy.deepcopy(layer) for _ in range(n)])


def _is_causal(mask, is_causal, size):
    """torch's reading of is_causal=None: whether `mask` is the causal mask of that size."""
    if is_causal is not None or mask is None:
        return bool(is_causal)
    if tuple(mask.shape[-2:]) != (size, size):
        return False
    causal = Transformer.generate_square_subsequent_mask(size, device=mask.device)
    if mask.dtype.kind == "b":
        causal = causal.isinf()
    return bool((mask == causal.to(mask.dtype)).all())


class TransformerEncoder(Module):
    """num_layers copies of encoder_layer (`layers.0`, ...), then `norm` when given.
    enable_nested_tensor and mask_check are accepted for PyTorch's signature: they select
    PyTorch's fast path, which tensorgrad does not have (see the module docstring)."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        """mask, src_key_padding_mask: as TransformerEncoderLayer's; is_causal=None reads it off
        the mask, as PyTorch does."""
        seq = 1 if self.layers[0].self_attn.batch_first and src.ndim == 3 else 0
        is_causal = _is_causal(mask, is_causal, src.shape[seq])
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=is_causal)
        return x if self.norm is None else self.norm(x)


class TransformerDecoder(Module):
    """num_layers copies of decoder_layer (`layers.0`, ...), then `norm` when given."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        seq = 1 if self.layers[0].self_attn.batch_first and tgt.ndim == 3 else 0
        tgt_is_causal = _is_causal(tgt_mask, tgt_is_causal, tgt.shape[seq])
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """torch.nn.Transformer: an encoder of num_encoder_layers layers and a decoder of
    num_decoder_layers, each ending with a LayerNorm; every weight matrix starts Xavier-uniform.

    forward(src (S, N, E), tgt (T, N, E), masks...) -> (T, N, E) (batch_first: (N, ., E)).
    custom_encoder, custom_decoder: modules used instead of the default stacks.
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        layer_options = dict(dim_feedforward=dim_feedforward, dropout=dropout,
                             activation=activation, layer_norm_eps=layer_norm_eps,
                             batch_first=batch_first, norm_first=norm_first, bias=bias,
                             device=device, dtype=dtype)
        norm_options = dict(eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(d_model, nhead, **layer_options), num_encoder_layers,
            LayerNorm(d_model, **norm_options))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(d_model, nhead, **layer_options), num_decoder_layers,
            LayerNorm(d_model, **norm_options))
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        batch = 0 if self.batch_first else 1
        if src.ndim == 3 and src.shape[batch] != tgt.shape[batch]:
            raise RuntimeError(f"Transformer: the batch number of src and tgt must be equal, "
                               f"got {src.shape[batch]} and {tgt.shape[batch]}")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(f"Transformer: the feature number of src and tgt must be equal "
                               f"to d_model ({self.d_model}), got {src.shape[-1]} and "
                               f"{tgt.shape[-1]}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """(sz, sz) float mask: 0 where a position may attend (itself and earlier), -inf
        above the diagonal."""
        full = tg.full((sz, sz), float("-inf"), device=device,
                       dtype=dtype if dtype is not None else tg.float32)
        return full.triu(diagonal=1)
