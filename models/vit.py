"""ViT: "An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale"
(Dosovitskiy et al., 2021).

An image is cut into non-overlapping p x p patches; each patch is flattened and projected to
hidden_size (one convolution with kernel = stride = p, or equally a reshape and a matmul:
`patchify`); a learned [CLS] token goes in front and a learned position embedding is added to
every token (interpolated bicubically for other image sizes). A pre-LN Transformer encoder
(`nn.EncoderBlock`: x = x + attn(ln(x)); x = x + mlp(ln(x)), exact GELU) follows, then a final
LayerNorm; the classifier reads the [CLS] token. `ViTModel` may also carry Hugging Face's
pooler (dense + tanh on the [CLS] token).

This file holds the configuration, the embeddings, the two models and the mapping to Hugging
Face's checkpoint names, in that order. Attention pictures are in `attention_maps.py`.
"""
import dataclasses

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad import nn
from tensorgrad.nn.transformer import EncoderBlock

from . import hub
from .classification import classification_loss, labels_to_hf, num_labels_from_hf
from .outputs import BaseModelOutputWithPooling, LogitsOutput, parameter_table

# Hugging Face's hidden_act names -> FeedForward's activation names.
HF_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
                  "relu": "relu", "silu": "silu", "swish": "silu"}
_POOLER_ACTIVATIONS = {"tanh": tg.tanh, "relu": tg.relu, "gelu": tg.gelu}


@dataclasses.dataclass
class ViTConfig:
    # Field names are Hugging Face's ViTConfig's, so config.json maps one to one.
    image_size: int = 224
    patch_size: int = 16
    num_channels: int = 3
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072  # the MLP's inner size, 4 hidden_size in every released ViT
    hidden_act: str = "gelu"  # exact (erf) GELU, as the paper's JAX code
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    layer_norm_eps: float = 1e-12  # Hugging Face's default (the JAX original uses 1e-6)
    qkv_bias: bool = True
    num_labels: int = 2  # Hugging Face's default; the ImageNet presets pass 1000
    pooler_output_size: int | None = None  # None: hidden_size
    pooler_act: str = "tanh"
    # How the classifier's loss reads labels, as Hugging Face's problem_type: None infers it
    # (1 label: regression; integer labels: single-label; float labels: multi-label).
    problem_type: str | None = None
    initializer_range: float = 0.02

    def __post_init__(self):
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"ViTConfig: hidden_size ({self.hidden_size}) must be divisible by "
                             f"num_attention_heads ({self.num_attention_heads})")
        if self.image_size % self.patch_size:
            raise ValueError(f"ViTConfig: image_size ({self.image_size}) must be a multiple of "
                             f"patch_size ({self.patch_size})")
        if self.hidden_act not in HF_ACTIVATIONS:
            raise ValueError(f"ViTConfig: hidden_act {self.hidden_act!r} is not one of "
                             f"{sorted(HF_ACTIVATIONS)}")
        if self.pooler_output_size is None:
            self.pooler_output_size = self.hidden_size

    @property
    def num_patches(self):
        return (self.image_size // self.patch_size) ** 2

    # The paper's Table 1 sizes at 224 px, and small ones for CPU training and tests.
    @classmethod
    def vit_base_patch16_224(cls, **overrides):
        return cls(**overrides)

    @classmethod
    def vit_large_patch16_224(cls, **overrides):
        return cls(**{"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                      "intermediate_size": 4096, **overrides})

    @classmethod
    def vit_huge_patch14_224(cls, **overrides):
        return cls(**{"patch_size": 14, "hidden_size": 1280, "num_hidden_layers": 32,
                      "num_attention_heads": 16, "intermediate_size": 5120, **overrides})

    @classmethod
    def digits(cls, **overrides):
        """137k parameters for 16x16 grey digits in 4x4 patches (16 tokens + [CLS]): over 97%
        on scikit-learn's digits in a few CPU minutes (examples/train_vit_digits.py)."""
        return cls(**{"image_size": 16, "patch_size": 4, "num_channels": 1, "hidden_size": 64,
                      "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 128,
                      "layer_norm_eps": 1e-6, "num_labels": 10, **overrides})

    @classmethod
    def tiny(cls, **overrides):
        """A few thousand parameters, for tests."""
        return cls(**{"image_size": 8, "patch_size": 4, "num_channels": 3, "hidden_size": 16,
                      "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32,
                      "num_labels": 3, **overrides})

    @classmethod
    def from_hf(cls, hf):
        """A ViTConfig from a Hugging Face config.json dict; what this model does not implement
        is an error rather than a silently different model."""
        if hf.get("model_type", "vit") != "vit":
            raise ValueError(f"ViTConfig.from_hf: model_type {hf['model_type']!r} is not 'vit'")
        fields = {f.name for f in dataclasses.fields(cls)} - {"num_labels"}
        config = {k: v for k, v in hf.items() if k in fields}
        config["num_labels"] = num_labels_from_hf(hf)
        return cls(**config)

    def to_hf(self):
        """This configuration as a Hugging Face ViTConfig dict (config.json)."""
        hf = dataclasses.asdict(self)
        hf.update(model_type="vit", encoder_stride=self.patch_size, **labels_to_hf(self.num_labels))
        del hf["num_labels"]
        return hf


def drop_qkv_biases(attention):
    """Hugging Face's qkv_bias=False: no bias on the query, key and value projections, while
    the output projection keeps its own."""
    for proj in (attention.q_proj, attention.k_proj, attention.v_proj):
        proj.bias = None


# --- embeddings -------------------------------------------------------------------------------
def patchify(pixel_values, patch_size):
    """(B, C, H, W) -> (B, N, C p p): the patches in row-major order, each flattened as (C, p, p),
    the layout of a Conv2d weight, so that patchify(x, p) @ W.reshape(D, -1).T + b equals the
    convolution with kernel = stride = p (rows and columns past the last whole patch dropped,
    as the convolution drops them)."""
    B, C, H, W = pixel_values.shape
    p = patch_size
    h, w = H // p, W // p
    x = pixel_values[:, :, :h * p, :w * p].reshape(B, C, h, p, w, p)  # (B, C, h, p, w, p)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (B, h, w, C, p, p)
    return x.reshape(B, h * w, C * p * p)  # (B, N, C p p)


class PatchEmbeddings(nn.Module):
    """pixel_values (B, C, H, W) -> (B, H/p * W/p, hidden_size) through `projection`, a Conv2d
    with kernel = stride = patch_size (Hugging Face's name for it)."""

    def __init__(self, num_channels, hidden_size, patch_size, device=None, dtype=None):
        super().__init__()
        self.num_channels, self.patch_size = num_channels, patch_size
        self.projection = nn.Conv2d(num_channels, hidden_size, patch_size, stride=patch_size,
                                    device=device, dtype=dtype)

    def forward(self, pixel_values):
        if pixel_values.ndim != 4 or pixel_values.shape[1] != self.num_channels:
            raise ValueError(f"{type(self).__name__}: expected pixel_values of shape (B, "
                             f"{self.num_channels}, H, W), got {pixel_values.shape}")
        x = self.projection(pixel_values)  # (B, D, H/p, W/p)
        return x.flatten(2).transpose(1, 2)  # (B, N, D)

    def as_matmul(self, pixel_values):
        """The same embedding as one matmul over `patchify`'s patches (equal to forward)."""
        weight = self.projection.weight.reshape(self.projection.out_channels, -1)  # (D, C p p)
        return F.linear(patchify(pixel_values, self.patch_size), weight, self.projection.bias)


class ViTEmbeddings(nn.Module):
    """Patch embeddings with the [CLS] token in front and learned positions added.
    pixel_values (B, C, H, W) -> (B, 1 + N, hidden_size)."""

    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        options = dict(device=device, dtype=dtype)
        self.image_size, self.patch_size = config.image_size, config.patch_size
        self.cls_token = nn.Parameter(tg.zeros(1, 1, config.hidden_size, **options))
        self.position_embeddings = nn.Parameter(
            tg.zeros(1, config.num_patches + 1, config.hidden_size, **options))
        self.patch_embeddings = PatchEmbeddings(config.num_channels, config.hidden_size,
                                                config.patch_size, **options)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, pixel_values, interpolate_pos_encoding=False):
        B, _, H, W = pixel_values.shape
        if not interpolate_pos_encoding and (H, W) != (self.image_size, self.image_size):
            raise ValueError(f"ViT: the input image size ({H}*{W}) doesn't match the model "
                             f"({self.image_size}*{self.image_size}); pass "
                             f"interpolate_pos_encoding=True to interpolate the positions")
        patches = self.patch_embeddings(pixel_values)  # (B, N, D)
        cls = self.cls_token.expand(B, 1, patches.shape[-1])  # (B, 1, D)
        x = tg.cat([cls, patches], dim=1)  # (B, 1 + N, D)
        positions = self.position_embeddings
        if interpolate_pos_encoding:
            positions = self.interpolate_pos_encoding(patches.shape[1], H, W)
        return self.dropout(x + positions)

    def interpolate_pos_encoding(self, num_patches, height, width):
        """The learned positions resized to a (height/p, width/p) patch grid by bicubic
        interpolation (align_corners=False), as Hugging Face and DINO do; the [CLS] position
        is kept. Returns (1, 1 + N', D); the positions themselves for the trained grid."""
        num_positions = self.position_embeddings.shape[1] - 1
        if num_patches == num_positions and height == width:
            return self.position_embeddings
        grid = resize_positions(self.position_embeddings[:, 1:], height // self.patch_size,
                                width // self.patch_size)  # (1, h' w', D)
        return tg.cat([self.position_embeddings[:, :1], grid], dim=1)  # [CLS]'s kept


def resize_positions(positions, height, width):
    """Learned positions of a square grid, (1, s^2, D), resized to (1, height * width, D) by
    bicubic interpolation with align_corners=False (Hugging Face's choice, from DINO)."""
    D = positions.shape[-1]
    side = int(round(positions.shape[1] ** 0.5))
    grid = positions.reshape(1, side, side, D).permute(0, 3, 1, 2)  # (1, D, s, s)
    grid = F.interpolate(grid, size=(height, width), mode="bicubic", align_corners=False)
    return grid.permute(0, 2, 3, 1).reshape(1, height * width, D)  # (1, h w, D)


# --- models -----------------------------------------------------------------------------------
class ViTPooler(nn.Module):
    """Hugging Face's pooler: dense + activation on the [CLS] token. (B, T, D) -> (B, D')."""

    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.pooler_output_size, device=device,
                               dtype=dtype)
        if config.pooler_act not in _POOLER_ACTIVATIONS:
            raise ValueError(f"ViTPooler: pooler_act {config.pooler_act!r} is not one of "
                             f"{sorted(_POOLER_ACTIVATIONS)}")
        self.activation = _POOLER_ACTIVATIONS[config.pooler_act]

    def forward(self, x):
        return self.activation(self.dense(x[:, 0]))  # (B, D')


class ViTModel(nn.Module):
    """The ViT encoder. pixel_values (B, C, H, W) -> a BaseModelOutputWithPooling: last_hidden_state
    (B, 1 + N, hidden_size), token 0 being [CLS].

    Parameters: `embeddings` (cls_token, position_embeddings, patch_embeddings.projection),
    `blocks.{i}` (EncoderBlock: attn_norm, self_attn.{q,k,v,out}_proj, ffn_norm,
    ffn.{up,down}_proj), `layernorm`, and `pooler.dense` with add_pooling_layer (Hugging Face's
    ViTModel default: True).
    """

    def __init__(self, config, add_pooling_layer=True, device=None, dtype=None):
        super().__init__()
        self.config = config
        options = dict(device=device, dtype=dtype)
        self.embeddings = ViTEmbeddings(config, **options)
        self.blocks = nn.ModuleList([
            EncoderBlock(config.hidden_size, config.num_attention_heads, config.intermediate_size,
                         dropout=config.hidden_dropout_prob,
                         attn_dropout=config.attention_probs_dropout_prob,
                         activation=HF_ACTIVATIONS[config.hidden_act], norm_first=True,
                         norm_eps=config.layer_norm_eps, fused_qkv=False, **options)
            for _ in range(config.num_hidden_layers)])
        if not config.qkv_bias:
            for block in self.blocks:
                drop_qkv_biases(block.self_attn)
        self.layernorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, **options)
        self.pooler = ViTPooler(config, **options) if add_pooling_layer else None
        hub.reset_parameters(self, config.initializer_range)

    def forward(self, pixel_values, interpolate_pos_encoding=False, output_hidden_states=False,
                output_attentions=False):
        """pixel_values: (B, C, H, W), cast to the model's dtype. interpolate_pos_encoding:
        accept other image sizes by resizing the learned positions. output_hidden_states,
        output_attentions: also return every block's input/output and attention probabilities
        (the probabilities cost one more attention product per block)."""
        pixel_values = pixel_values.to(self.embeddings.cls_token.dtype)
        x = self.embeddings(pixel_values, interpolate_pos_encoding)  # (B, T, D)
        hidden, attentions = [x], []
        for block in self.blocks:
            if output_attentions:
                attentions.append(block.self_attn.attention_weights(block.attn_norm(x)))
            x = block(x)  # (B, T, D)
            hidden.append(x)
        x = self.layernorm(x)  # (B, T, D)
        return BaseModelOutputWithPooling(x, self.pooler(x) if self.pooler is not None else None,
                            tuple(hidden) if output_hidden_states else None,
                            tuple(attentions) if output_attentions else None)

    def summary(self):
        return _summary(self, self.config, self.blocks)

    def hf_parameter_names(self):
        """{Hugging Face ViTModel name: our name}."""
        return {_hf_name(ours): ours for ours in self.state_dict()}

    def peft_parameter_names(self):
        """{name in transformers 5's in-memory ViTModel: our name}: what peft's adapter keys
        are made of (peft names the modules it finds in memory)."""
        return {_memory_name(hf): ours for hf, ours in self.hf_parameter_names().items()}

    @classmethod
    def from_pretrained(cls, path, device=None):
        """Load a Hugging Face ViT checkpoint folder (config.json + model.safetensors); a
        ViTForImageClassification checkpoint loads too (its head is left out). Eval mode."""
        return _from_pretrained(cls, path, device)

    def save_pretrained(self, path):
        """Write a folder that `transformers.ViTModel.from_pretrained(path)` loads."""
        hub.save_hf_folder(self, path, "ViTModel")


class ViTForImageClassification(nn.Module):
    """ViT with a linear classifier on the final [CLS] token.
    pixel_values (B, C, H, W) -> LogitsOutput (logits (B, num_labels), loss or None).

    Parameters: `vit` (a ViTModel without pooler, as Hugging Face's), `classifier`.
    """

    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        self.config = config
        self.vit = ViTModel(config, add_pooling_layer=False, device=device, dtype=dtype)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels, device=device,
                                    dtype=dtype) if config.num_labels > 0 else nn.Identity()
        hub.reset_parameters(self.classifier, config.initializer_range)

    def forward(self, pixel_values, labels=None, interpolate_pos_encoding=False):
        """labels: (B,) int64 class ids (or floats, see ViTConfig.problem_type).
        Returns a LogitsOutput: .logits (B, num_labels), .loss (the mean loss; None without
        labels), and out[0] is the loss when there is one, as in Hugging Face."""
        x = self.vit(pixel_values, interpolate_pos_encoding).last_hidden_state  # (B, T, D)
        logits = self.classifier(x[:, 0])  # (B, num_labels)
        loss = None
        if labels is not None:
            loss = classification_loss(logits, labels, self.config.problem_type)
        return LogitsOutput(loss=loss, logits=logits)

    def summary(self):
        return _summary(self, self.config, self.vit.blocks)

    def hf_parameter_names(self):
        """{Hugging Face ViTForImageClassification name: our name}."""
        return {_hf_name(ours): ours for ours in self.state_dict()}

    def peft_parameter_names(self):
        """{name in transformers 5's in-memory ViTForImageClassification: our name}: what
        peft's adapter keys are made of (peft names the modules it finds in memory)."""
        return {_memory_name(hf): ours for hf, ours in self.hf_parameter_names().items()}

    @classmethod
    def from_pretrained(cls, path, device=None):
        """Load a Hugging Face ViT checkpoint folder; from a ViTModel checkpoint the classifier
        keeps its fresh initialisation (with a warning), as in `transformers`. Eval mode."""
        return _from_pretrained(cls, path, device)

    def save_pretrained(self, path):
        """Write a folder that `transformers.ViTForImageClassification.from_pretrained` loads."""
        hub.save_hf_folder(self, path, "ViTForImageClassification")


def _summary(model, config, blocks):
    """Parameter counts the way ViT is usually described; `nn.Module.summary(model)` gives the
    per-module table."""
    embeddings = model.embeddings if isinstance(model, ViTModel) else model.vit.embeddings
    rows = [("patch embedding", f"{config.num_channels}x{config.patch_size}x{config.patch_size} "
             f"-> {config.hidden_size}", embeddings.patch_embeddings.num_parameters()),
            ("[CLS] + positions", f"(1 + {config.num_patches}) x {config.hidden_size}",
             embeddings.cls_token.numel() + embeddings.position_embeddings.numel()),
            (f"{len(blocks)} encoder blocks", "", sum(b.num_parameters() for b in blocks)),
            ("  per block: attention", "q, k, v, out", blocks[0].self_attn.num_parameters()),
            ("  per block: MLP", f"{config.hidden_size} -> {config.intermediate_size} -> "
             f"{config.hidden_size}", blocks[0].ffn.num_parameters())]
    rest = model.num_parameters() - sum(r[2] for r in rows[:3])
    rows += [("final LayerNorm, pooler, head", "", rest)]
    return parameter_table(rows, model.num_parameters())


# --- checkpoint name mapping --------------------------------------------------------------------
# Hugging Face ViT names inside `encoder.layer.{i}.` -> ours inside `blocks.{i}.`. Everything
# else (embeddings, layernorm, pooler, classifier, the `vit.` prefix) has the same name.
_BLOCK_NAMES = {
    "layernorm_before": "attn_norm", "attention.attention.query": "self_attn.q_proj",
    "attention.attention.key": "self_attn.k_proj", "attention.attention.value": "self_attn.v_proj",
    "attention.output.dense": "self_attn.out_proj", "layernorm_after": "ffn_norm",
    "intermediate.dense": "ffn.up_proj", "output.dense": "ffn.down_proj",
}
# transformers 5 names its modules differently in memory (`layers.{i}.attention.q_proj`,
# `mlp.fc1`, ...) while writing the names above to disk; state dicts taken from such a model
# in memory load too.
_MEMORY_NAMES = {"attention.q_proj": "attention.attention.query",
                 "attention.k_proj": "attention.attention.key",
                 "attention.v_proj": "attention.attention.value",
                 "attention.o_proj": "attention.output.dense",
                 "mlp.fc1": "intermediate.dense", "mlp.fc2": "output.dense"}
_CHECKPOINT_TO_MEMORY = {disk: memory for memory, disk in _MEMORY_NAMES.items()}
_OURS_IN_BLOCK = {ours: hf for hf, ours in _BLOCK_NAMES.items()}


def _hf_name(ours):
    """Our parameter name -> Hugging Face's (checkpoint) name."""
    head, sep, rest = ours.partition("blocks.")
    if not sep:
        return ours
    index, _, leaf = rest.partition(".")
    module, _, kind = leaf.rpartition(".")
    return f"{head}encoder.layer.{index}.{_OURS_IN_BLOCK[module]}.{kind}"


def _respell(key, layers, new_layers, modules):
    """key with its `layers`{i}.{module}.{kind} part written `new_layers`{i}.{modules[module]}."""
    head, sep, rest = key.partition(layers)
    if not sep:
        return key
    index, _, leaf = rest.partition(".")
    module, _, kind = leaf.rpartition(".")
    return f"{head}{new_layers}{index}.{modules.get(module, module)}.{kind}"


def _memory_name(hf):
    """A checkpoint name -> transformers 5's in-memory spelling (the inverse of the next)."""
    return _respell(hf, "encoder.layer.", "layers.", _CHECKPOINT_TO_MEMORY)


def _canonical_hf_name(key):
    """A key in transformers 5's in-memory spelling -> the checkpoint spelling."""
    if "encoder." in key.partition("layers.")[0]:
        return key
    return _respell(key, "layers.", "encoder.layer.", _MEMORY_NAMES)


def _from_pretrained(cls, path, device):
    hf_config, hf_state = hub.read_folder(path, device=device)
    return hub.load_hf_state(cls(ViTConfig.from_hf(hf_config), device=device), hf_state, "vit.",
                             _canonical_hf_name)
