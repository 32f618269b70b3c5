"""T5: "Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer"
(Raffel et al., 2020), and T5 v1.1.

An encoder-decoder Transformer that reads every task as text in, text out ("translate English
to German: ...", "summarize: ..."). Against the original Transformer (models/transformer.py):
- pre-norm blocks with a simplified LayerNorm: RMS scaling, no bias, no mean subtraction
  (nn.RMSNorm, eps 1e-6), and a final norm after each stack;
- no position encodings on the input: each stack's first block computes a bucketed relative
  position bias (nn.RelativePositionBias: bidirectional in the encoder, causal in the decoder)
  that every block of the stack adds to its self-attention scores;
- attention scores are not divided by sqrt(d_kv) (the 1/sqrt(d_kv) sits in the initialisation
  of the query projection instead), and no projection has a bias;
- the heads' width n_heads * d_kv may differ from d_model (v1.1 small: 6 x 64 in 512).
v1.0: ReLU feed-forward, LM head tied to the shared embedding, the decoder output rescaled by
d_model^-0.5 before it. v1.1: gated-GELU (tanh form) feed-forward, an untied head, no rescale.

This file holds the configuration, the blocks, the encoder-only and the conditional-generation
models, and the mapping to Hugging Face's T5 checkpoint names, in that order.
"""
import dataclasses

import tensorgrad.nn.functional as F
from tensorgrad import nn
from tensorgrad.nn.attention import KVCache
from tensorgrad.nn.masks import padding_mask_from_attention_mask

from . import generation, hub
from .outputs import BaseModelOutputWithPooling, Seq2SeqLMOutput
from .outputs import parameter_table
from .transformer import shift_right

# Hugging Face's feed_forward_proj -> nn.FeedForward's activation ("gated-gelu" is GELU's tanh
# form there, gelu_new).
_ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gated-gelu": "geglu_tanh",
                "gated-gelu_new": "geglu_tanh", "gated-silu": "swiglu"}


@dataclasses.dataclass
class T5Config:
    vocab_size: int = 32128  # a 32,000-piece SentencePiece vocabulary padded to a multiple of 128
    d_model: int = 512
    d_kv: int = 64  # the width of one head; n_heads * d_kv need not be d_model
    d_ff: int = 2048
    num_layers: int = 6  # encoder blocks
    num_decoder_layers: int | None = None  # None: as many as the encoder
    num_heads: int = 8
    relative_attention_num_buckets: int = 32
    relative_attention_max_distance: int = 128  # distances past this share the last bucket
    dropout_rate: float = 0.1
    layer_norm_epsilon: float = 1e-6
    feed_forward_proj: str = "relu"  # Hugging Face's spelling: "relu" (v1.0), "gated-gelu" (v1.1)
    # v1.0 ties the LM head to the shared embedding and rescales the decoder output by
    # d_model^-0.5 before it; v1.1 has its own head and no rescale.
    tie_word_embeddings: bool = True
    pad_token_id: int = 0
    eos_token_id: int = 1
    decoder_start_token_id: int = 0  # T5 starts decoding from the pad token

    def __post_init__(self):
        if self.num_decoder_layers is None:
            self.num_decoder_layers = self.num_layers
        if self.feed_forward_proj not in _ACTIVATIONS:
            raise ValueError(f"T5Config: feed_forward_proj must be one of {sorted(_ACTIVATIONS)},"
                             f" got {self.feed_forward_proj!r}")

    @property
    def activation(self):
        return _ACTIVATIONS[self.feed_forward_proj]

    # The released sizes (the paper's Table 14; v1.1 from its release notes) and a tiny one.
    @classmethod
    def t5_small(cls, **overrides):
        return cls(**overrides)

    @classmethod
    def t5_base(cls, **overrides):
        return cls(**{"d_model": 768, "d_ff": 3072, "num_layers": 12, "num_heads": 12,
                      **overrides})

    @classmethod
    def t5_large(cls, **overrides):
        return cls(**{"d_model": 1024, "d_ff": 4096, "num_layers": 24, "num_heads": 16,
                      **overrides})

    @classmethod
    def t5_v1_1_small(cls, **overrides):
        return cls(**{"d_ff": 1024, "num_layers": 8, "num_heads": 6,
                      "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False,
                      **overrides})

    @classmethod
    def t5_v1_1_base(cls, **overrides):
        return cls(**{"d_model": 768, "d_ff": 2048, "num_layers": 12, "num_heads": 12,
                      "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False,
                      **overrides})

    @classmethod
    def tiny(cls, **overrides):
        """A few tens of thousands of parameters, for tests and CPU examples."""
        return cls(**{"vocab_size": 128, "d_model": 32, "d_kv": 8, "d_ff": 64, "num_layers": 2,
                      "num_heads": 4, "relative_attention_num_buckets": 8,
                      "relative_attention_max_distance": 20, "dropout_rate": 0.0, **overrides})

    @classmethod
    def from_hf(cls, hf):
        """A T5Config from a Hugging Face config.json dict. transformers 5 writes
        `scale_decoder_outputs` (False for v1.1) and always tie_word_embeddings=True; older
        versions wrote tie_word_embeddings=False for v1.1."""
        tied = hf.get("scale_decoder_outputs", hf.get("tie_word_embeddings", True))
        fields = {f.name for f in dataclasses.fields(cls)} - {"tie_word_embeddings"}
        return cls(tie_word_embeddings=bool(tied),
                   **{k: v for k, v in hf.items() if k in fields and v is not None})

    def to_hf(self):
        """This configuration as a Hugging Face T5Config dict."""
        hf = dataclasses.asdict(self)
        hf.update(model_type="t5", architectures=["T5ForConditionalGeneration"],
                  is_encoder_decoder=True, scale_decoder_outputs=self.tie_word_embeddings,
                  initializer_factor=1.0)
        return hf


# --- blocks ------------------------------------------------------------------------------------
class T5Block(nn.Module):
    """One pre-norm T5 block: self-attention (causal in the decoder), cross-attention to the
    encoder's output (decoder only), then the feed-forward network, each as
    x = x + dropout(sublayer(rms_norm(x))). x: (B, T, d_model) -> same shape.

    Parameters: `attn_norm`, `self_attn` (q_proj, k_proj, v_proj, out_proj), `cross_attn_norm`
    and `cross_attn` (decoder), `ffn_norm`, `ffn` (up_proj, down_proj, gate_proj when gated).
    """

    def __init__(self, config, is_decoder, device=None, dtype=None):
        super().__init__()
        c, options = config, dict(device=device, dtype=dtype)
        self.is_decoder = is_decoder

        def attention():  # no biases, T5's width of heads, no 1/sqrt(d_kv) on the scores
            return nn.Attention(c.d_model, c.num_heads, dropout=c.dropout_rate, bias=False,
                                fused=False, head_dim=c.d_kv, scale=1.0, **options)

        def norm():
            return nn.RMSNorm(c.d_model, eps=c.layer_norm_epsilon, **options)

        self.attn_norm, self.self_attn = norm(), attention()
        if is_decoder:
            self.cross_attn_norm, self.cross_attn = norm(), attention()
        self.ffn_norm = norm()
        self.ffn = nn.FeedForward(c.d_model, c.d_ff, c.activation, bias=False,
                                  dropout=c.dropout_rate, **options)
        self.dropout = nn.Dropout(c.dropout_rate)

    def forward(self, x, position_bias, key_padding_mask=None, memory=None,
                memory_key_padding_mask=None, cache=None, cross_cache=None):
        """position_bias: (H, T, T_past + T) added to the self-attention scores.
        key_padding_mask: (B, T_past + T) True at padding; memory: (B, S, d_model) and
        memory_key_padding_mask (B, S) for cross-attention; cache, cross_cache: KVCaches."""
        h = self.self_attn(self.attn_norm(x), attn_mask=position_bias,
                           key_padding_mask=key_padding_mask, is_causal=self.is_decoder,
                           cache=cache)
        x = x + self.dropout(h)  # (B, T, C)
        if self.is_decoder:
            h = self.cross_attn(self.cross_attn_norm(x), memory,
                                key_padding_mask=memory_key_padding_mask, cache=cross_cache)
            x = x + self.dropout(h)  # (B, T, C)
        return x + self.dropout(self.ffn(self.ffn_norm(x)))  # (B, T, C)


class T5Stack(nn.Module):
    """The encoder or the decoder: embedded tokens (B, T, d_model) -> hidden states, same shape.

    Parameters: `relative_bias` (computed once, used by every block: the first block owns it
    in Hugging Face's layout), `blocks.{i}`, `final_norm`.
    """

    def __init__(self, config, is_decoder, device=None, dtype=None):
        super().__init__()
        c, options = config, dict(device=device, dtype=dtype)
        self.is_decoder = is_decoder
        self.relative_bias = nn.RelativePositionBias(
            c.num_heads, c.relative_attention_num_buckets, c.relative_attention_max_distance,
            bidirectional=not is_decoder, **options)
        layers = c.num_decoder_layers if is_decoder else c.num_layers
        self.blocks = nn.ModuleList([T5Block(c, is_decoder, **options) for _ in range(layers)])
        self.final_norm = nn.RMSNorm(c.d_model, eps=c.layer_norm_epsilon, **options)
        self.dropout = nn.Dropout(c.dropout_rate)

    def forward(self, x, key_padding_mask=None, memory=None, memory_key_padding_mask=None,
                cache=None):
        """cache (decoder): a list of (self-attention, cross-attention) KVCache pairs, one per
        block, extended in place; the queries are then the last T of T_past + T positions."""
        B, T, C = x.shape
        past = len(cache[0][0]) if cache else 0
        position_bias = self.relative_bias(T, past + T)  # (H, T, T_past + T)
        x = self.dropout(x)
        caches = cache if cache is not None else [(None, None)] * len(self.blocks)
        for block, (self_cache, cross_cache) in zip(self.blocks, caches):
            x = block(x, position_bias, key_padding_mask, memory, memory_key_padding_mask,
                      self_cache, cross_cache)  # (B, T, C)
        return self.dropout(self.final_norm(x))


# --- models ------------------------------------------------------------------------------------
class _T5Base(nn.Module):
    """What both models share: the shared embedding, the encoder, T5's initialisation and the
    checkpoint plumbing."""

    with_decoder = False

    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        self.config = c = config
        options = dict(device=device, dtype=dtype)
        self.shared = nn.Embedding(c.vocab_size, c.d_model, **options)
        self.encoder = T5Stack(c, is_decoder=False, **options)
        if self.with_decoder:
            self.decoder = T5Stack(c, is_decoder=True, **options)
            if not c.tie_word_embeddings:
                self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False, **options)
        self.reset_parameters()

    def reset_parameters(self):
        """T5's initialisation (Mesh TensorFlow's, as Hugging Face does it): embeddings and an
        untied head ~ N(0, 1); each projection ~ N(0, 1/fan_in), the query projection also
        carrying the 1/sqrt(d_kv) that the scores lack; norms 1."""
        c = self.config
        inner = c.num_heads * c.d_kv
        stds = {"q_proj": (c.d_model * c.d_kv) ** -0.5, "k_proj": c.d_model ** -0.5,
                "v_proj": c.d_model ** -0.5, "out_proj": inner ** -0.5,
                "up_proj": c.d_model ** -0.5, "gate_proj": c.d_model ** -0.5,
                "down_proj": c.d_ff ** -0.5, "relative_bias": c.d_model ** -0.5}
        for name, p in self.named_parameters():
            owner = name.split(".")[-2]  # the module holding the weight
            if name.endswith("norm.weight"):
                nn.init.ones_(p)
            else:
                nn.init.normal_(p, 0.0, stds.get(owner, 1.0))

    def encode(self, input_ids, attention_mask=None):
        """input_ids (B, S) int64, attention_mask (B, S): 1 at tokens, 0 at padding ->
        the encoder's hidden states (B, S, d_model)."""
        self._check_ids("input_ids", input_ids, attention_mask)
        padding = None if attention_mask is None else padding_mask_from_attention_mask(
            attention_mask)  # (B, S)
        return self.encoder(self.shared(input_ids), key_padding_mask=padding)

    def _check_ids(self, label, ids, mask=None, past=0):
        if ids.ndim != 2 or ids.dtype.kind not in "iu":
            raise ValueError(f"{type(self).__name__}: expected {label} of shape (B, T) with "
                             f"integer ids, got {ids.dtype} of shape {ids.shape}")
        if mask is not None and tuple(mask.shape) != (ids.shape[0], past + ids.shape[1]):
            raise ValueError(f"{type(self).__name__}: the attention mask for {label} must be "
                             f"{(ids.shape[0], past + ids.shape[1])}, got {mask.shape}")

    def summary(self):
        """The parameter count broken down by part (embedding, the stacks and one block of
        each, the head); `nn.Module.summary(model)` gives the per-module table."""
        c = self.config
        rows = [("shared embedding", f"{c.vocab_size} x {c.d_model}",
                 self.shared.num_parameters())]
        stacks = [("encoder", self.encoder)]
        if self.with_decoder:
            stacks.append(("decoder", self.decoder))
        for label, stack in stacks:
            block = stack.blocks[0]
            rows += [
                (f"{label}: {len(stack.blocks)} blocks", "",
                 sum(b.num_parameters() for b in stack.blocks)),
                ("  per block: attention" + (" x 2" if stack.is_decoder else ""),
                 f"q, k, v, o: {c.d_model} <-> {c.num_heads} x {c.d_kv}",
                 block.self_attn.num_parameters() * (2 if stack.is_decoder else 1)),
                ("  per block: feed-forward", f"{c.d_model} -> {c.d_ff} ({c.activation})",
                 block.ffn.num_parameters()),
                ("  per block: RMS norms", "", sum(m.num_parameters() for m in block.modules()
                                                   if isinstance(m, nn.RMSNorm))),
                (f"{label}: relative position bias", f"{c.relative_attention_num_buckets} "
                 f"buckets x {c.num_heads} heads", stack.relative_bias.num_parameters()),
                (f"{label}: final norm", "", stack.final_norm.num_parameters()),
            ]
        if self.with_decoder:
            tied = c.tie_word_embeddings
            rows.append(("LM head", "tied to shared" if tied else f"{c.d_model} x {c.vocab_size}",
                         0 if tied else self.lm_head.num_parameters()))
        return parameter_table(rows, self.num_parameters())

    def hf_parameter_names(self):
        """{Hugging Face parameter name: our parameter name} for this model as configured."""
        return hf_names(self.config, self.with_decoder)

    # --- Hugging Face checkpoints ----------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, path, device=None):
        """Load a Hugging Face T5 checkpoint folder (config.json + model.safetensors) from local
        disk. The model is returned in eval mode."""
        hf_config, hf_state = hub.read_folder(path, device=device)
        model = cls(T5Config.from_hf(hf_config), device=device)
        model.load_state_dict(state_dict_from_hf(hf_state, model))
        return model.eval()

    def save_pretrained(self, path):
        """Write config.json + model.safetensors with Hugging Face's names, so that
        `transformers.T5ForConditionalGeneration.from_pretrained(path)` (or T5EncoderModel)
        loads this model."""
        hf = self.config.to_hf()
        if not self.with_decoder:
            hf["architectures"] = ["T5EncoderModel"]
        ours_to_hf = {}
        for theirs, ours in self.hf_parameter_names().items():
            ours_to_hf.setdefault(ours, theirs)  # shared.weight, not the tied lm_head.weight
        hub.write_folder(path, hf, {ours_to_hf[k]: t for k, t in self.state_dict().items()})


class T5EncoderModel(_T5Base):
    """T5's encoder alone: input_ids (B, S) -> an output whose last_hidden_state is
    (B, S, d_model), as HF's BaseModelOutput (for embeddings, classification heads, or as the
    text encoder of another model)."""

    def forward(self, input_ids, attention_mask=None):
        return BaseModelOutputWithPooling(self.encode(input_ids, attention_mask))


class T5ForConditionalGeneration(_T5Base):
    """T5 with its decoder and LM head: (input_ids (B, S), decoder_input_ids (B, T)) ->
    logits (B, T, vocab_size).

    Parameters: `shared` (the embedding of both stacks, and the v1.0 head), `encoder`,
    `decoder` (T5Stack), `lm_head` (v1.1 only).
    """

    with_decoder = True

    def make_cache(self):
        """A fresh decoder cache: a (self-attention, cross-attention) KVCache pair per block."""
        return [(KVCache(), KVCache()) for _ in self.decoder.blocks]

    def decode(self, decoder_input_ids, memory, attention_mask=None, decoder_attention_mask=None,
               cache=None):
        """The decoder's hidden states (B, T, d_model) for decoder_input_ids (B, T), attending
        to memory (B, S, d_model), the encoder's output, whose padding attention_mask (B, S)
        marks (1 = token). decoder_attention_mask: (B, T_past + T). cache: from make_cache()."""
        past = len(cache[0][0]) if cache else 0
        self._check_ids("decoder_input_ids", decoder_input_ids, decoder_attention_mask, past)
        padding = None if decoder_attention_mask is None else padding_mask_from_attention_mask(
            decoder_attention_mask)
        memory_padding = None if attention_mask is None else padding_mask_from_attention_mask(
            attention_mask)
        return self.decoder(self.shared(decoder_input_ids), padding, memory, memory_padding,
                            cache)

    def lm_logits(self, hidden):
        """Decoder hidden states (B, T, d_model) -> logits (B, T, vocab_size)."""
        if self.config.tie_word_embeddings:
            # v1.0's rescale keeps the tied head's logits at the scale the embedding was
            # trained for (the embedding is N(0, 1), far larger than a projection)
            hidden = hidden * self.config.d_model ** -0.5
            return F.linear(hidden, self.shared.weight)  # (B, T, C) @ (C, V) -> (B, T, V)
        return self.lm_head(hidden)

    def forward(self, input_ids=None, attention_mask=None, decoder_input_ids=None,
                decoder_attention_mask=None, labels=None, encoder_outputs=None, cache=None):
        """input_ids: (B, S) int64, or encoder_outputs (B, S, d_model) already computed.
        attention_mask: (B, S), 1 at tokens and 0 at padding.
        decoder_input_ids: (B, T); default `shift_right(labels)` (teacher forcing).
        labels: (B, T) targets, -100 where no loss is taken.
        cache: from `make_cache()`, extended in place (incremental decoding).
        Returns a Seq2SeqLMOutput: .logits (B, T, vocab_size), .loss (mean cross-entropy; None
        without labels), .encoder_last_hidden_state; out[0] is the loss when there is one, as
        in Hugging Face.
        """
        c = self.config
        if encoder_outputs is None:
            if input_ids is None:
                raise ValueError("T5ForConditionalGeneration: pass input_ids or encoder_outputs")
            encoder_outputs = self.encode(input_ids, attention_mask)  # (B, S, C)
        if decoder_input_ids is None:
            if labels is None:
                raise ValueError("T5ForConditionalGeneration: pass decoder_input_ids or labels")
            decoder_input_ids = shift_right(labels, c.decoder_start_token_id, c.pad_token_id)
        hidden = self.decode(decoder_input_ids, encoder_outputs, attention_mask,
                             decoder_attention_mask, cache)  # (B, T, C)
        logits = self.lm_logits(hidden)
        loss = None
        if labels is not None:
            B, T = labels.shape
            loss = F.cross_entropy(logits.reshape(B * T, -1), labels.reshape(B * T))
        return Seq2SeqLMOutput(loss=loss, logits=logits,
                               encoder_last_hidden_state=encoder_outputs)

    def generate(self, input_ids, max_new_tokens=20, **options):
        """Decode up to max_new_tokens tokens for each input: greedy, sampling or beam search;
        see `models.generation.generate`."""
        return generation.generate(self, input_ids, max_new_tokens, **options)


# --- checkpoint name mapping --------------------------------------------------------------------
# Hugging Face T5 block sublayer names -> ours. In the encoder layer.1 is the feed-forward; in the
# decoder layer.1 is cross-attention and layer.2 the feed-forward.
_ATTENTION = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "out_proj"}
_FFN = {"wi": "up_proj", "wi_0": "gate_proj", "wi_1": "up_proj", "wo": "down_proj"}
# Copies of `shared` that Hugging Face may store; the LM head is one when tied.
_TIED_COPIES = ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight")


def hf_names(config, with_decoder=True):
    """{Hugging Face name: our name} for a T5 of this configuration."""
    names = {"shared.weight": "shared.weight"}
    ffn = ["wi_0", "wi_1", "wo"] if config.activation.startswith(("ge", "sw")) else ["wi", "wo"]
    stacks = [("encoder", config.num_layers)]
    if with_decoder:
        stacks.append(("decoder", config.num_decoder_layers))
    for stack, layers in stacks:
        names[f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"] = \
            f"{stack}.relative_bias.weight"
        names[f"{stack}.final_layer_norm.weight"] = f"{stack}.final_norm.weight"
        sublayers = [("SelfAttention", "self_attn", "attn_norm")]
        if stack == "decoder":
            sublayers.append(("EncDecAttention", "cross_attn", "cross_attn_norm"))
        for i in range(layers):
            hf, ours = f"{stack}.block.{i}.layer", f"{stack}.blocks.{i}"
            for j, (theirs, attn, norm) in enumerate(sublayers):
                names[f"{hf}.{j}.layer_norm.weight"] = f"{ours}.{norm}.weight"
                for a, b in _ATTENTION.items():
                    names[f"{hf}.{j}.{theirs}.{a}.weight"] = f"{ours}.{attn}.{b}.weight"
            j = len(sublayers)
            names[f"{hf}.{j}.layer_norm.weight"] = f"{ours}.ffn_norm.weight"
            for a in ffn:
                names[f"{hf}.{j}.DenseReluDense.{a}.weight"] = f"{ours}.ffn.{_FFN[a]}.weight"
    if with_decoder:
        names["lm_head.weight"] = "shared.weight" if config.tie_word_embeddings \
            else "lm_head.weight"
    return names


def state_dict_from_hf(hf_state, model):
    """Rename a Hugging Face T5 state dict for `model`. An untied head missing from the file
    (transformers 5 saves v1.1 tied) starts as a copy of the shared embedding; an encoder-only
    model skips the decoder and head of a full checkpoint, as transformers does."""
    names = {k: v for k, v in model.hf_parameter_names().items() if k != "lm_head.weight"
             or v != "shared.weight"}
    skipped = _TIED_COPIES + ("lm_head.weight",) + (() if model.with_decoder else ("decoder.",))
    state, unknown = {}, []
    for key, tensor in hf_state.items():
        if key in names:
            state[names[key]] = tensor
        elif not key.startswith(skipped):
            unknown.append(key)
    if unknown:
        raise ValueError(f"{type(model).__name__}.from_pretrained: the checkpoint has tensors "
                         f"this configuration does not: {unknown[:8]}")
    if "lm_head.weight" in names.values() and "lm_head.weight" not in state:
        state["lm_head.weight"] = state["shared.weight"].clone()
    return state
