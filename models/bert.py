"""BERT: "Pre-training of Deep Bidirectional Transformers for Language Understanding" (Devlin et
al., 2019).

An encoder-only Transformer: word + learned position + token-type (segment A/B) embeddings,
summed and layer-normalised, then num_hidden_layers post-LN encoder blocks (bidirectional
self-attention over the real tokens, then an erf-GELU feed-forward network, each sublayer
followed by x = LayerNorm(x + sublayer(x))). The pooler reads the [CLS] position:
tanh(dense(h[:, 0])). Pre-training puts two heads on top: masked-token prediction, through a
dense + GELU + LayerNorm transform and a decoder tied to the word embeddings with its own bias,
and next-sentence prediction from the pooled output. Fine-tuning heads classify sequences or
tokens, or pick answer spans.

The blocks are `nn.EncoderBlock(norm_first=False, fused_qkv=False)`. Outputs are small
dataclasses with Hugging Face's field names (`out.logits`, `out.loss`, `out.last_hidden_state`
...). This file holds the configuration, the outputs, the model, its heads, and the mapping to
Hugging Face's BERT checkpoint names, in that order. Data for pre-training is in bert_data.py.
"""
import dataclasses
import warnings

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn.attention_patterns import AttentionPattern, make_pattern
from tensorgrad.nn.masks import padding_mask_from_attention_mask
from tensorgrad.nn.transformer import EncoderBlock

from . import hub
from .classification import labels_to_hf, num_labels_from_hf
from .outputs import BaseModelOutputWithPooling
from .outputs import parameter_table

# Hugging Face's hidden_act names -> nn.FeedForward's. BERT uses the exact (erf) GELU.
HIDDEN_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
                      "relu": "relu", "silu": "silu", "swish": "silu"}


@dataclasses.dataclass
class BertConfig:
    """Hugging Face's BertConfig field names, so a config.json reads without translation."""
    vocab_size: int = 30522  # the uncased WordPiece vocabulary of the released models
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072  # 4 * hidden_size, as in the paper
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1  # on the embeddings and each sublayer's output
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2  # segments A and B
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12  # the TensorFlow original's, kept by every checkpoint
    pad_token_id: int = 0  # its word embedding row starts at zero and gets no gradient
    num_labels: int = 2  # for the classification heads
    classifier_dropout: float | None = None  # None: hidden_dropout_prob
    # For BertForSequenceClassification: "regression", "single_label_classification" or
    # "multi_label_classification"; None chooses from num_labels and the labels' dtype, as HF.
    problem_type: str | None = None
    # Which keys a token sees: "dense" (BERT's), a pattern's name ("sliding_window", "bigbird",
    # "strided", "linear") or an nn.attention_patterns object: the same field as GPTConfig's.
    attention: str | AttentionPattern = "dense"

    def __post_init__(self):
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"BertConfig: hidden_size ({self.hidden_size}) must be divisible by "
                             f"num_attention_heads ({self.num_attention_heads})")
        if self.hidden_act not in HIDDEN_ACTIVATIONS:
            raise ValueError(f"BertConfig: hidden_act {self.hidden_act!r} is not supported; "
                             f"expected one of {sorted(HIDDEN_ACTIVATIONS)}")

    # The two released sizes, and the small ones of Turc et al. (2019), "Well-Read Students
    # Learn Better", which train on a CPU.
    @classmethod
    def bert_base(cls, **overrides):
        return cls(**overrides)

    @classmethod
    def bert_large(cls, **overrides):
        return cls(**{"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                      "intermediate_size": 4096, **overrides})

    @classmethod
    def bert_small(cls, **overrides):
        return cls(**{"hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
                      "intermediate_size": 2048, **overrides})

    @classmethod
    def bert_mini(cls, **overrides):
        """4 layers of width 256 (11M parameters with the full vocabulary): the benchmark."""
        return cls(**{"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
                      "intermediate_size": 1024, **overrides})

    @classmethod
    def bert_tiny(cls, **overrides):
        return cls(**{"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
                      "intermediate_size": 512, **overrides})

    @classmethod
    def preset(cls, name, **overrides):
        """A configuration by name: 'bert-base', 'bert-large', 'bert-small', 'bert-mini',
        'bert-tiny'."""
        presets = {"bert-base": cls.bert_base, "bert-large": cls.bert_large,
                   "bert-small": cls.bert_small, "bert-mini": cls.bert_mini,
                   "bert-tiny": cls.bert_tiny}
        if name not in presets:
            raise ValueError(f"BertConfig.preset: unknown preset {name!r}; expected one of "
                             f"{sorted(presets)}")
        return presets[name](**overrides)

    @classmethod
    def from_hf(cls, hf):
        """From a Hugging Face config.json dict; variants this model does not implement are
        errors rather than silently different outputs."""
        unsupported = {"is_decoder": False, "add_cross_attention": False,
                       "position_embedding_type": "absolute", "tie_word_embeddings": True}
        bad = [f"{k}={hf[k]!r}" for k, default in unsupported.items() if hf.get(k, default)
               != default]
        if bad:
            raise ValueError(f"BertConfig.from_hf: unsupported BERT variant ({', '.join(bad)})")
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in hf.items() if k in fields}
        values["num_labels"] = num_labels_from_hf(hf)  # HF derives it from the label names
        return cls(**values)

    def to_hf(self, architecture="BertModel"):
        """As a Hugging Face BertConfig dict (`architecture`: the class it was saved from)."""
        if self.attention != "dense":
            raise ValueError(f"BertConfig.to_hf: Hugging Face's BERT has only dense attention; "
                             f"this model uses {self.attention!r}, which a BERT checkpoint would "
                             "silently drop")
        hf = dataclasses.asdict(self)
        hf.pop("attention")
        hf.update(labels_to_hf(hf.pop("num_labels")))
        return {"model_type": "bert", "architectures": [architecture],
                "position_embedding_type": "absolute", "tie_word_embeddings": True, **hf}


# --- the encoder --------------------------------------------------------------------------------
def encoder_layer(config, **options):
    """One BERT layer. The one place the encoder's attention is built: a different attention
    pattern is chosen here."""
    return EncoderBlock(config.hidden_size, config.num_attention_heads, config.intermediate_size,
                        dropout=config.hidden_dropout_prob,
                        attn_dropout=config.attention_probs_dropout_prob,
                        activation=HIDDEN_ACTIVATIONS[config.hidden_act], norm_first=False,
                        norm_eps=config.layer_norm_eps, fused_qkv=False, **options)


class BertEmbeddings(nn.Module):
    """input_ids (B, T) -> LayerNorm(word + position + token-type embeddings), dropped out."""

    def __init__(self, config, **options):
        super().__init__()
        c = config
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size,
                                            padding_idx=c.pad_token_id, **options)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size,
                                                **options)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size, **options)
        self.norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps, **options)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, input_ids=None, token_type_ids=None, position_ids=None, inputs_embeds=None):
        x = self.word_embeddings(input_ids) if inputs_embeds is None else inputs_embeds
        B, T, C = x.shape
        if position_ids is None:
            position_ids = tg.arange(T, device=x.device)  # (T,), broadcast over the batch
        if token_type_ids is None:
            token_type_ids = tg.zeros(T, dtype=tg.int64, device=x.device)  # all segment A
        x = x + self.token_type_embeddings(token_type_ids) + self.position_embeddings(position_ids)
        return self.dropout(self.norm(x))  # (B, T, C)


class BertPooler(nn.Module):
    """(B, T, C) -> (B, C): tanh(dense(h[:, 0])), the [CLS] token's summary of the sequence."""

    def __init__(self, config, **options):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size, **options)

    def forward(self, hidden):
        return tg.tanh(self.dense(hidden[:, 0]))  # (B, C)


class BertPreTrainedModel(nn.Module):
    """What every BERT class shares: HF's initialisation, checkpoints, name mapping, summary.
    Subclasses hold the encoder as `bert` (the heads) or are it (BertModel)."""

    architecture = None  # the Hugging Face class of the same name

    def reset_parameters(self):
        """BERT's initialisation: weight matrices and embeddings ~ N(0, initializer_range^2),
        the padding token's embedding 0, biases 0, LayerNorms 1 and 0."""
        std = self.config.initializer_range
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, std)
            if isinstance(module, nn.Embedding) and module.padding_idx is not None:
                with tg.no_grad():
                    module.weight[module.padding_idx] = 0.0
            if isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)

    def _encoder(self):
        return self if isinstance(self, BertModel) else self.bert

    def summary(self):
        """The parameter count broken down as BERT is usually described; `nn.Module.summary`
        gives the per-module table."""
        c, enc = self.config, self._encoder()
        emb, layer = enc.embeddings, enc.layers[0]
        n = c.hidden_size
        rows = [
            ("word embeddings", f"{c.vocab_size} x {n}", emb.word_embeddings),
            ("position embeddings", f"{c.max_position_embeddings} x {n}",
             emb.position_embeddings),
            ("token type embeddings", f"{c.type_vocab_size} x {n}", emb.token_type_embeddings),
            ("embedding LayerNorm", "", emb.norm),
            (f"{c.num_hidden_layers} layers", "", enc.layers),
            ("  per layer: attention", "q, k, v, out", layer.self_attn),
            ("  per layer: attention output LayerNorm", "", layer.attn_norm),
            ("  per layer: intermediate + output", f"{n} -> {c.intermediate_size} -> {n}",
             layer.ffn),
            ("  per layer: output LayerNorm", "", layer.ffn_norm),
        ]
        if enc.pooler is not None:
            rows.append(("pooler", f"{n} x {n}", enc.pooler))
        if enc is not self:
            rows += [(f"head: {name}", "", module) for name, module in self.named_children()
                     if name != "bert" and module.num_parameters()]
        return parameter_table([(name, shape, m.num_parameters()) for name, shape, m in rows],
                               self.num_parameters())

    # --- Hugging Face checkpoints ---------------------------------------------------------------
    def hf_parameter_names(self):
        """{Hugging Face parameter name: ours} for this model as configured, head included, as
        the HF class of the same name lists them (tied weights once)."""
        return {hf_name(name): name for name, _ in self.named_parameters()}

    @classmethod
    def from_pretrained(cls, path, device=None, **config_overrides):
        """Load a local Hugging Face BERT folder (config.json + model.safetensors), saved from
        any BERT class: the encoder must be there; a head the checkpoint lacks (a classifier on
        a pre-trained encoder) keeps its fresh initialisation, with a warning, as in HF. The
        model is returned in eval mode. config_overrides: e.g. num_labels=8."""
        hf_config, hf_state = hub.read_folder(path, device=device)
        config = dataclasses.replace(BertConfig.from_hf(hf_config), **config_overrides)
        model = cls(config, device=device)
        state, fresh = state_dict_from_hf(hf_state, model)
        if fresh:
            warnings.warn(f"{cls.__name__}.from_pretrained: {path} has no {', '.join(fresh)}; "
                          f"they keep their random initialisation (train them before use)",
                          stacklevel=2)
        model.load_state_dict(state)
        return model.eval()

    def save_pretrained(self, path):
        """Write config.json + model.safetensors with Hugging Face's names, so that the
        `transformers` class of the same name loads this model."""
        own = self.state_dict()
        state = {hf: own[ours] for hf, ours in self.hf_parameter_names().items()}
        hub.write_folder(path, self.config.to_hf(self.architecture), state)


class BertModel(BertPreTrainedModel):
    """The encoder. input_ids (B, T) -> BaseModelOutputWithPooling.

    Parameters: `embeddings` (word_embeddings, position_embeddings, token_type_embeddings,
    norm), `layers.{i}` (EncoderBlock: self_attn, attn_norm, ffn, ffn_norm), `pooler.dense`
    (without it, add_pooling_layer=False, pooler_output is None).
    """

    architecture = "BertModel"

    def __init__(self, config, add_pooling_layer=True, device=None, dtype=None):
        super().__init__()
        self.config = config
        options = dict(device=device, dtype=dtype)
        self.embeddings = BertEmbeddings(config, **options)
        self.layers = nn.ModuleList([encoder_layer(config, **options)
                                     for _ in range(config.num_hidden_layers)])
        pattern = make_pattern(config.attention)  # None: dense; one object, layouts made once
        for layer in self.layers:
            layer.self_attn.pattern = pattern
        self.pooler = BertPooler(config, **options) if add_pooling_layer else None
        self.reset_parameters()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, inputs_embeds=None, output_hidden_states=False,
                output_attentions=False):
        """input_ids: (B, T) int64, or inputs_embeds (B, T, C) instead.
        attention_mask: (B, T), 1 at tokens and 0 at padding (Hugging Face's convention), or
            (B, T, T) per query; padding is never attended to. A row with no token at all
            gives attention outputs of 0, as HF's default (SDPA) attention does.
        token_type_ids: (B, T) segment ids (default 0); position_ids: (B, T) or (T,)
            (default 0 .. T-1).
        output_hidden_states / output_attentions: also return every layer's output / attention
            probabilities."""
        x = self._check_inputs(input_ids, attention_mask, token_type_ids, position_ids,
                               inputs_embeds)
        x = self.embeddings(input_ids, token_type_ids, position_ids, inputs_embeds)  # (B, T, C)
        masks = {}
        if attention_mask is not None and attention_mask.ndim == 2:
            masks["key_padding_mask"] = padding_mask_from_attention_mask(attention_mask)
        elif attention_mask is not None:  # (B, Tq, Tk) -> (B, 1, Tq, Tk), True = may attend
            masks["attn_mask"] = (attention_mask != 0).unsqueeze(1)
        hidden_states, attentions = [x], []
        for layer in self.layers:
            if output_attentions:  # post-LN: the attention reads the layer's input as it is
                attentions.append(layer.self_attn.attention_weights(x, **masks))
            x = layer(x, **masks)  # (B, T, C)
            hidden_states.append(x)
        return BaseModelOutputWithPooling(
            last_hidden_state=x, pooler_output=None if self.pooler is None else self.pooler(x),
            hidden_states=tuple(hidden_states) if output_hidden_states else None,
            attentions=tuple(attentions) if output_attentions else None)

    def _check_inputs(self, input_ids, attention_mask, token_type_ids, position_ids,
                      inputs_embeds):
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("BertModel: pass exactly one of input_ids and inputs_embeds")
        if input_ids is not None and (input_ids.ndim != 2 or input_ids.dtype.kind not in "iu"):
            raise ValueError(f"BertModel: expected input_ids of shape (B, T) with integer ids, "
                             f"got {input_ids.dtype} of shape {input_ids.shape}")
        if inputs_embeds is not None and (inputs_embeds.ndim != 3
                                          or inputs_embeds.shape[-1] != self.config.hidden_size):
            raise ValueError(f"BertModel: expected inputs_embeds of shape (B, T, "
                             f"{self.config.hidden_size}), got {inputs_embeds.shape}")
        B, T = (input_ids if input_ids is not None else inputs_embeds).shape[:2]
        if position_ids is None and T > self.config.max_position_embeddings:
            raise ValueError(f"BertModel: {T} tokens exceed max_position_embeddings="
                             f"{self.config.max_position_embeddings}")
        shapes = {"attention_mask": (attention_mask, ((B, T), (B, T, T))),
                  "token_type_ids": (token_type_ids, ((B, T), (T,))),
                  "position_ids": (position_ids, ((B, T), (T,)))}
        for name, (value, allowed) in shapes.items():
            if value is not None and tuple(value.shape) not in allowed:
                raise ValueError(f"BertModel: {name} must have shape "
                                 f"{' or '.join(map(str, allowed))}, got {value.shape}")


# --- checkpoint name mapping --------------------------------------------------------------------
# Hugging Face names -> ours, by module (each with .weight and/or .bias). Inside a layer:
_LAYER_MODULES = {
    "attention.self.query": "self_attn.q_proj", "attention.self.key": "self_attn.k_proj",
    "attention.self.value": "self_attn.v_proj", "attention.output.dense": "self_attn.out_proj",
    "attention.output.LayerNorm": "attn_norm", "intermediate.dense": "ffn.up_proj",
    "output.dense": "ffn.down_proj", "output.LayerNorm": "ffn_norm",
}
# Everywhere else (a module not listed has the same name in both: word_embeddings, pooler.dense,
# classifier, qa_outputs). "cls.predictions" holds the masked-LM bias.
_TOP_MODULES = {
    "embeddings.LayerNorm": "embeddings.norm", "cls.predictions.transform.dense": "mlm.dense",
    "cls.predictions.transform.LayerNorm": "mlm.norm", "cls.predictions": "mlm",
    "cls.seq_relationship": "nsp",
}
_LAYER_TO_HF = {ours: hf for hf, ours in _LAYER_MODULES.items()}
_TOP_TO_HF = {ours: hf for hf, ours in _TOP_MODULES.items()}
_HEAD_PREFIXES = ("cls.", "classifier.", "qa_outputs.")  # in HF checkpoints of any head class
# Stored by some checkpoints and not parameters here: the position-id buffer of older
# transformers, and the masked-LM decoder, which is the word embedding matrix.
_IGNORED = ("embeddings.position_ids", "cls.predictions.decoder.weight")
_LEGACY = {".gamma": ".weight", ".beta": ".bias"}  # TensorFlow-era LayerNorm names


def hf_name(name):
    """Our parameter name -> Hugging Face's ("bert." stays: the heads hold the encoder as
    `bert`, as HF's do)."""
    prefix = "bert." if name.startswith("bert.") else ""
    module, _, kind = name[len(prefix):].rpartition(".")
    if module.startswith("layers."):
        _, i, inner = module.split(".", 2)
        module = f"encoder.layer.{i}.{_LAYER_TO_HF[inner]}"
    else:
        module = _TOP_TO_HF.get(module, module)
    return f"{prefix}{module}.{kind}"


def _modern(key):
    """A checkpoint key under today's Hugging Face names."""
    for old, new in _LEGACY.items():
        if key.endswith(old):
            key = key[:-len(old)] + new
    # Older checkpoints store the masked-LM bias (also) as the decoder's; they are one tensor.
    return "cls.predictions.bias" if key == "cls.predictions.decoder.bias" else key


def state_dict_from_hf(hf_state, model):
    """(our state dict, [names left at their initialisation]) from a Hugging Face BERT state
    dict saved by any BERT class, under today's names or the legacy ones, with or without the
    `bert.` prefix. Missing encoder tensors and tensors no BERT class has are errors; a missing
    pooler or head is reported; another class's head is skipped."""
    wanted = model.hf_parameter_names()
    bare = isinstance(model, BertModel)
    state, unknown = {}, []
    for key, tensor in hf_state.items():
        key = _modern(key)
        if bare and key.startswith("bert."):
            key = key[len("bert."):]
        elif not bare and not key.startswith(("bert.",) + _HEAD_PREFIXES):
            key = f"bert.{key}"
        if key in wanted:
            state[wanted[key]] = tensor
        elif not key.endswith(_IGNORED) and not key.startswith(_HEAD_PREFIXES):
            unknown.append(key)
    missing = [hf for hf, ours in wanted.items() if ours not in state]
    required = [hf for hf in missing if ".embeddings." in f".{hf}" or ".encoder." in f".{hf}"]
    if unknown or required:
        c = model.config
        raise ValueError(f"{type(model).__name__}.from_pretrained: the checkpoint does not fit a "
                         f"BERT of {c.num_hidden_layers} layers of width {c.hidden_size}: "
                         f"unknown tensors {unknown[:8]}, missing {required[:8]}")
    own = model.state_dict()
    for hf in missing:
        state[wanted[hf]] = own[wanted[hf]]
    return state, missing
