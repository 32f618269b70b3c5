"""GPT-2: "Language Models are Unsupervised Multitask Learners" (Radford et al., 2019).

A decoder-only Transformer: token embeddings plus learned position embeddings, n_layer pre-LN
decoder blocks (causal self-attention, then a tanh-GELU feed-forward network, each inside a
residual connection with the LayerNorm before it), a final LayerNorm, and a language-model head
that reuses the token embedding matrix (weight tying, Press & Wolf, 2017).

The blocks are `nn.DecoderBlock`s, whose forward reads x = x + attn(ln_1(x)); x = x + mlp(ln_2(x))
(there: self_attn, attn_norm, ffn, ffn_norm). This file holds the configuration, the model and
the mapping to Hugging Face's GPT-2 checkpoint names, in that order.
"""
import dataclasses
import math

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad import nn
from tensorgrad.nn.attention import KVCache
from tensorgrad.nn.attention_patterns import AttentionPattern, make_pattern
from tensorgrad.nn.masks import padding_mask_from_attention_mask
from tensorgrad.nn.transformer import DecoderBlock
from tensorgrad.utils.checkpoint import checkpoint

from . import generation, hub
from .outputs import parameter_table


@dataclasses.dataclass
class GPTConfig:
    vocab_size: int = 50257  # GPT-2's BPE: 50,000 merges + 256 bytes + <|endoftext|>
    block_size: int = 1024  # the longest context: the number of learned positions
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    # The feed-forward inner size. None follows n_embd at GPT-2's ratio, 4 * n_embd, so a
    # narrower model needs no second number (Hugging Face's n_inner=None means the same).
    d_ff: int | None = None
    dropout: float = 0.1  # on the embeddings and each residual branch (GPT-2's embd/resid_pdrop)
    attn_dropout: float = 0.1  # on the attention probabilities
    # Which keys a query sees: "dense" (GPT-2), a pattern's name ("sliding_window", "bigbird",
    # "strided", "linear": nn.attention_patterns.PATTERNS, with their defaults) or a pattern
    # object. One field whatever the pattern, so that every model's config selects it alike.
    attention: str | AttentionPattern = "dense"
    layer_norm_eps: float = 1e-5
    # Recompute each block's activations at backward instead of keeping them (training only):
    # less memory for one more forward (tensorgrad.utils.checkpoint; benchmarks/README.md).
    gradient_checkpointing: bool = False

    def __post_init__(self):
        if self.d_ff is None:
            self.d_ff = 4 * self.n_embd
        if self.n_embd % self.n_head:
            raise ValueError(f"GPTConfig: n_embd ({self.n_embd}) must be divisible by n_head "
                             f"({self.n_head})")

    # The four released sizes (the paper's Table 2) and small ones for CPU training.
    @classmethod
    def gpt2(cls, **overrides):
        return cls(**overrides)

    @classmethod
    def gpt2_medium(cls, **overrides):
        return cls(**{"n_layer": 24, "n_head": 16, "n_embd": 1024, **overrides})

    @classmethod
    def gpt2_large(cls, **overrides):
        return cls(**{"n_layer": 36, "n_head": 20, "n_embd": 1280, **overrides})

    @classmethod
    def gpt2_xl(cls, **overrides):
        return cls(**{"n_layer": 48, "n_head": 25, "n_embd": 1600, **overrides})

    @classmethod
    def mini(cls, **overrides):
        """0.8M parameters over bytes or characters: trains on a laptop CPU in minutes (the
        benchmark workload)."""
        return cls(**{"vocab_size": 256, "block_size": 128, "n_layer": 4, "n_head": 4,
                      "n_embd": 128, "d_ff": 512, "dropout": 0.0, "attn_dropout": 0.0,
                      **overrides})

    @classmethod
    def tiny(cls, **overrides):
        """A few thousand parameters, for tests."""
        return cls(**{"vocab_size": 64, "block_size": 32, "n_layer": 2, "n_head": 2,
                      "n_embd": 16, "dropout": 0.0, "attn_dropout": 0.0, **overrides})

    @classmethod
    def preset(cls, name, **overrides):
        """A configuration by name: 'gpt2', 'gpt2-medium', 'gpt2-large', 'gpt2-xl', 'mini',
        'tiny'."""
        presets = {"gpt2": cls.gpt2, "gpt2-medium": cls.gpt2_medium, "gpt2-large": cls.gpt2_large,
                   "gpt2-xl": cls.gpt2_xl, "mini": cls.mini, "tiny": cls.tiny}
        if name not in presets:
            raise ValueError(f"GPTConfig.preset: unknown preset {name!r}; expected one of "
                             f"{sorted(presets)}")
        return presets[name](**overrides)


class GPT(nn.Module):
    """GPT-2. input_ids (B, T) int64 -> logits (B, T, vocab_size).

    Parameters: `wte` (token embeddings, also the output projection), `wpe` (one learned
    embedding per position), `blocks.{i}` (DecoderBlock: attn_norm, self_attn, ffn_norm, ffn),
    `ln_f`.
    """

    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        self.config = config
        options = dict(device=device, dtype=dtype)
        self.wte = nn.Embedding(config.vocab_size, config.n_embd, **options)
        self.wpe = nn.Embedding(config.block_size, config.n_embd, **options)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList([
            DecoderBlock(config.n_embd, config.n_head, config.d_ff, dropout=config.dropout,
                         attn_dropout=config.attn_dropout, activation="gelu_tanh",
                         norm_eps=config.layer_norm_eps, **options)
            for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_eps, **options)
        self.pattern = make_pattern(config.attention)  # None for dense attention
        for block in self.blocks:  # one pattern object: its block layouts are computed once
            block.self_attn.pattern = self.pattern
        self.reset_parameters()

    def reset_parameters(self):
        """GPT-2's initialisation: every weight matrix and embedding ~ N(0, 0.02^2), biases 0,
        LayerNorms 1 and 0; the projections that write into the residual stream (attention
        out_proj, FFN down_proj) get std 0.02 / sqrt(2 n_layer), so the stream's variance does
        not grow with depth (each block adds two of them)."""
        residual_std = 0.02 / math.sqrt(2 * self.config.n_layer)
        for name, p in self.named_parameters():
            if name.endswith(("out_proj.weight", "down_proj.weight")):
                nn.init.normal_(p, 0.0, residual_std)
            elif p.ndim == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    @property
    def max_positions(self):
        return self.config.block_size

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None):
        """Hugging Face's switch for config.gradient_checkpointing. gradient_checkpointing_kwargs:
        None or {"use_reentrant": bool}, as transformers accepts (both give the same here)."""
        unknown = set(gradient_checkpointing_kwargs or {}) - {"use_reentrant"}
        if unknown:
            raise ValueError(f"GPT.gradient_checkpointing_enable: unknown options {unknown}")
        self.config.gradient_checkpointing = True

    def gradient_checkpointing_disable(self):
        self.config.gradient_checkpointing = False

    @property
    def is_gradient_checkpointing(self):
        return self.config.gradient_checkpointing

    def make_cache(self):
        """A fresh key/value cache for incremental decoding: one per block (a KVCache, or the
        attention pattern's own: a rolling window, linear attention's state)."""
        if self.pattern is not None:
            return [self.pattern.make_cache() for _ in self.blocks]
        return [KVCache() for _ in self.blocks]

    def forward(self, input_ids, targets=None, attention_mask=None, position_ids=None,
                cache=None):
        """input_ids: (B, T) int64.
        targets: (B, T) int64, the next token at each position (input_ids shifted left by
            one); -100 marks positions to leave out of the loss.
        attention_mask: (B, T_past + T), 1 at tokens and 0 at padding (Hugging Face's
            convention); padding is never attended to.
        position_ids: (B, T) or (T,) positions; default T_past, T_past + 1, ... (what Hugging
            Face does too; `generation.positions_from_mask` makes positions that skip padding).
        cache: from `make_cache()`, extended in place (T_past is the length already cached).
        Returns (logits (B, T, vocab_size), loss: mean cross-entropy or None without targets).
        """
        B, T = input_ids.shape
        past = len(cache[0]) if cache else 0  # tokens already in the cache
        self._check_inputs(input_ids, attention_mask, position_ids, past)
        padding = None
        if attention_mask is not None:
            padding = padding_mask_from_attention_mask(attention_mask)  # (B, T_past + T)
        pos = position_ids
        if pos is None:
            pos = tg.arange(past, past + T, device=input_ids.device)  # (T,)
        tok_emb = self.wte(input_ids)  # token embeddings (B, T, C)
        pos_emb = self.wpe(pos)  # position embeddings (T, C), or (B, T, C) from position_ids
        x = self.drop(tok_emb + pos_emb)  # (B, T, C)
        caches = cache if cache is not None else [None] * len(self.blocks)
        recompute = self.config.gradient_checkpointing and self.training and cache is None
        for block, block_cache in zip(self.blocks, caches):
            if recompute:  # keep only the block's input; run it again at backward
                x = checkpoint(block, x, key_padding_mask=padding, use_reentrant=False)
            else:
                x = block(x, key_padding_mask=padding, cache=block_cache)  # (B, T, C)
        x = self.ln_f(x)  # (B, T, C)
        logits = F.linear(x, self.wte.weight)  # tied head: (B, T, C) @ (C, V) -> (B, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))
        return logits, loss

    def _check_inputs(self, input_ids, attention_mask, position_ids, past):
        if input_ids.ndim != 2 or input_ids.dtype.kind not in "iu":
            raise ValueError(f"GPT: expected input_ids of shape (B, T) with integer ids, got "
                             f"{input_ids.dtype} of shape {input_ids.shape}")
        B, T = input_ids.shape
        if position_ids is None and past + T > self.config.block_size:
            raise ValueError(f"GPT: {past} cached + {T} new tokens exceed block_size="
                             f"{self.config.block_size} learned positions")
        if position_ids is not None and tuple(position_ids.shape) not in ((T,), (B, T)):
            raise ValueError(f"GPT: position_ids must be (T,) or (B, T) = {(B, T)}, got "
                             f"{position_ids.shape}")
        if attention_mask is not None and tuple(attention_mask.shape) != (B, past + T):
            raise ValueError(f"GPT: attention_mask must be (B, T_past + T) = {(B, past + T)}, "
                             f"got {attention_mask.shape}")

    def generate(self, input_ids, max_new_tokens=20, temperature=1.0, top_k=None, **options):
        """Extend prompts by up to max_new_tokens tokens, nanoGPT's way by default: sampled at
        temperature 1.0 (temperature=0 or do_sample=False: greedy). transformers' arguments
        (num_beams, no_repeat_ngram_size, eos_token_id, ...) as `models.generation.generate`."""
        return generation.generate(self, input_ids, max_new_tokens, temperature, top_k, **options)

    def summary(self):
        """The parameter count broken down the way GPT-2 is usually described (embeddings,
        blocks, final norm, tied head); `nn.Module.summary(model)` gives the per-module table."""
        c = self.config
        block = self.blocks[0]
        rows = [
            ("token embeddings (wte)", f"{c.vocab_size} x {c.n_embd}", self.wte.num_parameters()),
            ("position embeddings (wpe)", f"{c.block_size} x {c.n_embd}",
             self.wpe.num_parameters()),
            (f"{c.n_layer} blocks" if c.n_layer != 1 else "1 block", "",
             sum(b.num_parameters() for b in self.blocks)),
            ("  per block: attention", "qkv + out proj", block.self_attn.num_parameters()),
            ("  per block: feed-forward", f"{c.n_embd} -> {c.d_ff} -> {c.n_embd}",
             block.ffn.num_parameters()),
            ("  per block: 2 LayerNorms", "",
             block.attn_norm.num_parameters() + block.ffn_norm.num_parameters()),
            ("final LayerNorm (ln_f)", "", self.ln_f.num_parameters()),
            ("LM head", "tied to wte", 0),
        ]
        return parameter_table(rows, self.num_parameters())

    # --- Hugging Face checkpoints ----------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, path, device=None):
        """Load a Hugging Face GPT-2 checkpoint folder (config.json + model.safetensors) from
        local disk. The model is returned in eval mode."""
        hf_config, hf_state = hub.read_folder(path, device=device)
        model = cls(config_from_hf(hf_config), device=device)
        model.load_state_dict(state_dict_from_hf(hf_state, model.config.n_layer))
        return model.eval()

    def hf_parameter_names(self):
        """{Hugging Face GPT2LMHeadModel parameter name: ours} for this model, e.g.
        'transformer.h.0.attn.c_attn.weight' -> 'blocks.0.self_attn.qkv_proj.weight' (what
        LoRA adapter files are named by)."""
        return hf_names(self.config.n_layer)

    def save_pretrained(self, path):
        """Write config.json + model.safetensors with Hugging Face's names and layout, so that
        `transformers.GPT2LMHeadModel.from_pretrained(path)` loads this model."""
        hub.write_folder(path, config_to_hf(self.config),
                         state_dict_to_hf(self.state_dict(), self.config.n_layer))


# --- checkpoint name mapping --------------------------------------------------------------------
# Hugging Face GPT2LMHeadModel names (under "transformer.") -> ours. GPT-2's Conv1D layers
# (_TRANSPOSED) store their weight as (in, out), the transpose of a Linear's (out, in).
_TOP_NAMES = {"wte.weight": "wte.weight", "wpe.weight": "wpe.weight",
              "ln_f.weight": "ln_f.weight", "ln_f.bias": "ln_f.bias"}
_BLOCK_MODULES = {  # each with a .weight and a .bias
    "ln_1": "attn_norm", "attn.c_attn": "self_attn.qkv_proj", "attn.c_proj": "self_attn.out_proj",
    "ln_2": "ffn_norm", "mlp.c_fc": "ffn.up_proj", "mlp.c_proj": "ffn.down_proj",
}
_TRANSPOSED = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
# Stored by older transformers versions and not parameters: the causal mask buffers, and the
# LM head, which is tied to wte.
_IGNORED = (".attn.bias", ".attn.masked_bias", "lm_head.weight")


def hf_names(n_layer):
    """{Hugging Face name: our name} for a model of n_layer blocks."""
    names = {f"transformer.{hf}": ours for hf, ours in _TOP_NAMES.items()}
    for i in range(n_layer):
        for hf, ours in _BLOCK_MODULES.items():
            for kind in ("weight", "bias"):
                names[f"transformer.h.{i}.{hf}.{kind}"] = f"blocks.{i}.{ours}.{kind}"
    return names


def state_dict_from_hf(hf_state, n_layer):
    """Rename (and transpose the Conv1D weights of) a Hugging Face GPT-2 state dict; keys may
    carry the `transformer.` prefix or not (the original hub files have none)."""
    names = hf_names(n_layer)
    state, unknown = {}, []
    for key, tensor in hf_state.items():
        hf = key if key.startswith("transformer.") or key.startswith("lm_head.") \
            else f"transformer.{key}"
        if hf in names:
            state[names[hf]] = tensor.mT if hf.endswith(_TRANSPOSED) else tensor
        elif not hf.endswith(_IGNORED):
            unknown.append(key)
    if unknown:
        raise ValueError(f"GPT.from_pretrained: the checkpoint has tensors a GPT-2 of {n_layer} "
                         f"layers does not: {unknown[:8]}")
    return state


def state_dict_to_hf(state, n_layer):
    """Our state dict under Hugging Face's names, Conv1D weights transposed to (in, out)."""
    ours_to_hf = {ours: hf for hf, ours in hf_names(n_layer).items()}
    return {ours_to_hf[k]: (t.mT if ours_to_hf[k].endswith(_TRANSPOSED) else t)
            for k, t in state.items()}


def config_from_hf(hf):
    """A GPTConfig from a Hugging Face GPT-2 config.json dict; variants this model does not
    implement are errors rather than silently different outputs."""
    unsupported = {
        "activation_function": hf.get("activation_function", "gelu_new")
        not in ("gelu_new", "gelu_pytorch_tanh"),
        "scale_attn_weights": not hf.get("scale_attn_weights", True),
        "scale_attn_by_inverse_layer_idx": hf.get("scale_attn_by_inverse_layer_idx", False),
        "add_cross_attention": hf.get("add_cross_attention", False),
        "tie_word_embeddings": not hf.get("tie_word_embeddings", True),
    }
    bad = [f"{key}={hf[key]!r}" for key, differs in unsupported.items() if differs]
    if bad:
        raise ValueError(f"GPT.from_pretrained: unsupported GPT-2 variant ({', '.join(bad)})")
    return GPTConfig(vocab_size=hf["vocab_size"], block_size=hf["n_positions"],
                     n_layer=hf["n_layer"], n_head=hf["n_head"], n_embd=hf["n_embd"],
                     d_ff=hf.get("n_inner"), dropout=hf.get("resid_pdrop", 0.1),
                     attn_dropout=hf.get("attn_pdrop", 0.1),
                     layer_norm_eps=hf.get("layer_norm_epsilon", 1e-5))


def config_to_hf(config):
    """GPTConfig as a Hugging Face GPT2Config dict."""
    if config.attention != "dense":
        raise ValueError(f"GPT.save_pretrained: Hugging Face's GPT-2 has only dense attention; "
                         f"this model uses {config.attention!r}, which a GPT-2 checkpoint would "
                         "silently drop")
    return {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
            "vocab_size": config.vocab_size, "n_positions": config.block_size,
            "n_layer": config.n_layer, "n_head": config.n_head, "n_embd": config.n_embd,
            "n_inner": config.d_ff, "activation_function": "gelu_new",
            "resid_pdrop": config.dropout, "embd_pdrop": config.dropout,
            "attn_pdrop": config.attn_dropout, "layer_norm_epsilon": config.layer_norm_eps,
            "initializer_range": 0.02, "tie_word_embeddings": True}
