"""The Transformer: "Attention Is All You Need" (Vaswani et al., 2017), the original
encoder-decoder for translation.

Source and target tokens share one embedding matrix (a joint BPE vocabulary), multiplied by
sqrt(d_model) and added to fixed sinusoidal position encodings, with dropout on the sum. The
encoder is N post-LN blocks (self-attention, then a ReLU feed-forward network, each as
x = LayerNorm(x + dropout(sublayer(x)))); the decoder's blocks add cross-attention to the
encoder's output between the two, and their self-attention is causal. The pre-softmax linear
transformation is the embedding matrix again (no bias). Training uses label smoothing 0.1 and
the Noam learning-rate schedule (nn.optim.lr_scheduler.NoamLR).

The blocks are `nn.EncoderBlock` / `nn.DecoderBlock` with norm_first=False. The class is
`Seq2SeqTransformer`: PyTorch's `nn.Transformer` is the stacks alone, without embeddings or
head. This file holds the configuration, the model and its parameter table.
"""
import dataclasses
import math

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad import nn
from tensorgrad.nn.attention import KVCache
from tensorgrad.nn.masks import padding_mask_from_attention_mask

from . import generation
from .outputs import parameter_table


@dataclasses.dataclass
class TransformerConfig:
    vocab_size: int = 37000  # the paper's shared source-target BPE vocabulary (English-German)
    d_model: int = 512
    num_heads: int = 8
    d_ff: int = 2048
    num_encoder_layers: int = 6
    num_decoder_layers: int = 6
    dropout: float = 0.1  # P_drop: residual dropout and dropout on the embedding sums
    label_smoothing: float = 0.1  # epsilon_ls
    max_len: int = 1024  # rows of the sinusoidal table (fixed, not a parameter)
    layer_norm_eps: float = 1e-5
    pad_token_id: int = 0
    bos_token_id: int = 1  # the decoder starts from it
    eos_token_id: int = 2

    @property
    def decoder_start_token_id(self):
        return self.bos_token_id

    @classmethod
    def base(cls, **overrides):
        """The paper's base model (Table 3): 63,082,496 parameters with a 37,000 vocabulary."""
        return cls(**overrides)

    @classmethod
    def big(cls, **overrides):
        """The paper's big model (Table 3): d_model 1024, 16 heads, d_ff 4096, P_drop 0.3."""
        return cls(**{"d_model": 1024, "num_heads": 16, "d_ff": 4096, "dropout": 0.3,
                      **overrides})

    @classmethod
    def tiny(cls, **overrides):
        """A few tens of thousands of parameters, for tests and CPU examples."""
        return cls(**{"vocab_size": 64, "d_model": 32, "num_heads": 4, "d_ff": 64,
                      "num_encoder_layers": 2, "num_decoder_layers": 2, "dropout": 0.0,
                      "max_len": 128, **overrides})


def shift_right(labels, decoder_start_token_id=0, pad_token_id=0):
    """Decoder inputs for teacher forcing: labels (B, T) moved one step right, the start token
    in front, and the -100 (ignored) labels replaced by the pad token."""
    start = tg.full((labels.shape[0], 1), decoder_start_token_id, dtype=labels.dtype,
                    device=labels.device)
    shifted = tg.cat([start, labels[:, :-1]], dim=1)  # (B, T)
    return shifted.masked_fill(shifted == -100, pad_token_id)


class Seq2SeqTransformer(nn.Module):
    """(input_ids (B, S), decoder_input_ids (B, T)) -> logits (B, T, vocab_size).

    Parameters: `embed` (shared by source, target and the output projection),
    `encoder.{i}` (EncoderBlock), `decoder.{i}` (DecoderBlock with cross-attention); the
    sinusoidal table `positional.pe` is a non-persistent buffer.
    """

    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        self.config = c = config
        options = dict(device=device, dtype=dtype)
        blocks = dict(dropout=c.dropout, activation="relu", norm_first=False,
                      norm_eps=c.layer_norm_eps, **options)
        self.embed = nn.Embedding(c.vocab_size, c.d_model, **options)
        self.positional = nn.SinusoidalPositionalEncoding(c.max_len, c.d_model, **options)
        self.drop = nn.Dropout(c.dropout)
        self.encoder = nn.ModuleList([nn.EncoderBlock(c.d_model, c.num_heads, c.d_ff, **blocks)
                                      for _ in range(c.num_encoder_layers)])
        self.decoder = nn.ModuleList([
            nn.DecoderBlock(c.d_model, c.num_heads, c.d_ff, cross_attention=True, **blocks)
            for _ in range(c.num_decoder_layers)])
        self.reset_parameters()

    def reset_parameters(self):
        """Xavier-uniform weight matrices (tensor2tensor's and PyTorch's nn.Transformer
        choice; the paper does not say), zero biases, LayerNorms 1 and 0, and embeddings
        ~ N(0, d_model^-1), so that the sqrt(d_model)-scaled inputs have unit variance."""
        for name, p in self.named_parameters():
            if name == "embed.weight":
                nn.init.normal_(p, 0.0, self.config.d_model ** -0.5)
            elif p.ndim == 2:
                nn.init.xavier_uniform_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def _embed(self, ids, offset=0):
        """ids (B, T) -> dropout(embed(ids) * sqrt(d_model) + PE) (B, T, d_model), the tokens at
        positions offset, offset + 1, ..."""
        x = self.embed(ids) * math.sqrt(self.config.d_model)  # (B, T, C)
        return self.drop(self.positional(x, offset))

    def encode(self, input_ids, attention_mask=None):
        """input_ids (B, S), attention_mask (B, S): 1 at tokens, 0 at padding -> the encoder's
        output (B, S, d_model)."""
        padding = None if attention_mask is None else padding_mask_from_attention_mask(
            attention_mask)  # (B, S)
        x = self._embed(input_ids)
        for block in self.encoder:
            x = block(x, key_padding_mask=padding)  # (B, S, C)
        return x

    def make_cache(self):
        """A fresh decoder cache: a (self-attention, cross-attention) KVCache pair per block."""
        return [(KVCache(), KVCache()) for _ in self.decoder]

    def decode(self, decoder_input_ids, memory, attention_mask=None, decoder_attention_mask=None,
               cache=None):
        """The decoder's output (B, T, d_model) for decoder_input_ids (B, T) attending to memory
        (B, S, d_model) with its padding attention_mask (B, S); cache: from make_cache()."""
        past = len(cache[0][0]) if cache else 0
        x = self._embed(decoder_input_ids, past)
        padding = None if decoder_attention_mask is None else padding_mask_from_attention_mask(
            decoder_attention_mask)
        memory_padding = None if attention_mask is None else padding_mask_from_attention_mask(
            attention_mask)
        caches = cache if cache is not None else [(None, None)] * len(self.decoder)
        for block, (self_cache, cross_cache) in zip(self.decoder, caches):
            x = block(x, memory, key_padding_mask=padding,
                      memory_key_padding_mask=memory_padding, cache=self_cache,
                      cross_cache=cross_cache)  # (B, T, C)
        return x

    def lm_logits(self, hidden):
        """Decoder output (B, T, d_model) -> logits (B, T, V) through the shared matrix."""
        return F.linear(hidden, self.embed.weight)  # (B, T, C) @ (C, V) -> (B, T, V)

    def forward(self, input_ids=None, attention_mask=None, decoder_input_ids=None,
                decoder_attention_mask=None, labels=None, encoder_outputs=None, cache=None):
        """Arguments as T5ForConditionalGeneration's: input_ids (B, S) or encoder_outputs,
        attention_mask (B, S), decoder_input_ids (B, T) (default: shift_right(labels) from the
        BOS token), labels (B, T) with -100 where no loss is taken.
        Returns (logits (B, T, vocab_size), loss: label-smoothed cross-entropy or None)."""
        c = self.config
        if encoder_outputs is None:
            encoder_outputs = self.encode(input_ids, attention_mask)
        if decoder_input_ids is None:
            decoder_input_ids = shift_right(labels, c.bos_token_id, c.pad_token_id)
        hidden = self.decode(decoder_input_ids, encoder_outputs, attention_mask,
                             decoder_attention_mask, cache)
        logits = self.lm_logits(hidden)
        loss = None
        if labels is not None:
            B, T = labels.shape
            loss = F.cross_entropy(logits.reshape(B * T, -1), labels.reshape(B * T),
                                   label_smoothing=c.label_smoothing)
        return logits, loss

    def generate(self, input_ids, max_new_tokens=20, **options):
        """Greedy, sampling or beam search: see `models.generation.generate`."""
        return generation.generate(self, input_ids, max_new_tokens, **options)

    def summary(self):
        """The parameter count broken down as in the paper's model description: the shared
        embedding (also the output projection), and per block the attention sublayers (4
        d_model^2 + 4 d_model each), the feed-forward network (2 d_model d_ff + d_ff + d_model)
        and the LayerNorms (2 d_model each)."""
        c = self.config
        enc, dec = self.encoder[0], self.decoder[0]
        attn = f"4 x ({c.d_model} x {c.d_model} + {c.d_model})"
        ffn = f"{c.d_model} -> {c.d_ff} -> {c.d_model}, biases"
        rows = [
            ("shared embedding", f"{c.vocab_size} x {c.d_model}", self.embed.num_parameters()),
            ("sinusoidal positions", "fixed", 0),
            (f"encoder: {c.num_encoder_layers} blocks", "",
             sum(b.num_parameters() for b in self.encoder)),
            ("  per block: self-attention", attn, enc.self_attn.num_parameters()),
            ("  per block: feed-forward", ffn, enc.ffn.num_parameters()),
            ("  per block: 2 LayerNorms", f"2 x 2 x {c.d_model}",
             enc.attn_norm.num_parameters() + enc.ffn_norm.num_parameters()),
            (f"decoder: {c.num_decoder_layers} blocks", "",
             sum(b.num_parameters() for b in self.decoder)),
            ("  per block: self-attention", attn, dec.self_attn.num_parameters()),
            ("  per block: cross-attention", attn, dec.cross_attn.num_parameters()),
            ("  per block: feed-forward", ffn, dec.ffn.num_parameters()),
            ("  per block: 3 LayerNorms", f"3 x 2 x {c.d_model}",
             sum(m.num_parameters() for m in (dec.attn_norm, dec.cross_attn_norm,
                                              dec.ffn_norm))),
            ("output projection", "tied to the embedding", 0),
        ]
        return parameter_table(rows, self.num_parameters())
