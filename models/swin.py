"""Swin Transformer: "Swin Transformer: Hierarchical Vision Transformer using Shifted Windows"
(Liu et al., 2021).

The image is cut into p x p patches (4 x 4 in every released Swin) and projected to embed_dim,
then a LayerNorm. Four stages follow; in each, pre-LN blocks attend only within w x w windows
of the patch grid (with a learned bias per head and relative offset, read from a
(2w - 1)^2 table), and every second block first rolls the grid by w/2 (shifted windows) so
that information crosses window borders; a mask keeps the pieces the roll brought together
from attending to each other. Between stages, patch merging concatenates each 2 x 2 group of
tokens (4C), normalises and projects it to 2C: the grid halves and the width doubles. A final
LayerNorm, an average over tokens (the pooler) and a linear classifier end the model. Grids
that are not a multiple of the window are padded at the bottom and right, as in the original.

This file holds the configuration, the blocks, the models and the mapping to Hugging Face's
checkpoint names, in that order; the window helpers are in swin_windows.py. Embedding helpers,
the output record and the loading code are shared with vit.py.
"""
import dataclasses

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad import nn

from . import hub
from .classification import classification_loss, labels_to_hf, num_labels_from_hf
from .outputs import BaseModelOutputWithPooling, LogitsOutput, parameter_table
from .swin_windows import (
    relative_position_index, shifted_window_mask, window_partition, window_reverse,
)
from .vit import HF_ACTIVATIONS, PatchEmbeddings, drop_qkv_biases, resize_positions


@dataclasses.dataclass
class SwinConfig:
    # Field names are Hugging Face's SwinConfig's, so config.json maps one to one.
    image_size: int = 224
    patch_size: int = 4
    num_channels: int = 3
    embed_dim: int = 96  # the width of stage 1; stage i has embed_dim * 2^i
    depths: list = dataclasses.field(default_factory=lambda: [2, 2, 6, 2])  # blocks per stage
    num_heads: list = dataclasses.field(default_factory=lambda: [3, 6, 12, 24])  # per stage
    window_size: int = 7
    mlp_ratio: float = 4.0
    qkv_bias: bool = True
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    drop_path_rate: float = 0.1  # stochastic depth, rising linearly to this over the blocks
    hidden_act: str = "gelu"
    use_absolute_embeddings: bool = False  # learned positions as ViT's; the paper drops them
    layer_norm_eps: float = 1e-5
    num_labels: int = 2  # Hugging Face's default; the ImageNet presets pass 1000
    problem_type: str | None = None  # as ViTConfig.problem_type
    initializer_range: float = 0.02

    def __post_init__(self):
        self.depths, self.num_heads = list(self.depths), list(self.num_heads)
        if len(self.depths) != len(self.num_heads):
            raise ValueError(f"SwinConfig: depths {self.depths} and num_heads {self.num_heads} "
                             f"must name the same number of stages")
        for i, heads in enumerate(self.num_heads):
            if (self.embed_dim * 2 ** i) % heads:
                raise ValueError(f"SwinConfig: stage {i} has width {self.embed_dim * 2 ** i}, "
                                 f"not divisible by its {heads} heads")
        if self.hidden_act not in HF_ACTIVATIONS:
            raise ValueError(f"SwinConfig: hidden_act {self.hidden_act!r} is not one of "
                             f"{sorted(HF_ACTIVATIONS)}")

    @property
    def num_features(self):
        """The width after the last stage (and of the pooled output)."""
        return self.embed_dim * 2 ** (len(self.depths) - 1)

    # The paper's Swin-T, S, B at 224 px with window 7, and small ones for CPU work and tests.
    @classmethod
    def swin_tiny_patch4_window7_224(cls, **overrides):
        return cls(**overrides)

    @classmethod
    def swin_small_patch4_window7_224(cls, **overrides):
        return cls(**{"depths": [2, 2, 18, 2], "drop_path_rate": 0.3, **overrides})

    @classmethod
    def swin_base_patch4_window7_224(cls, **overrides):
        return cls(**{"embed_dim": 128, "depths": [2, 2, 18, 2], "num_heads": [4, 8, 16, 32],
                      "drop_path_rate": 0.5, **overrides})

    @classmethod
    def digits(cls, **overrides):
        """16x16 grey digits in 2x2 patches: an 8x8 grid in 4x4 windows (shifted by 2), merged
        to 4x4 (one window) for the second stage."""
        return cls(**{"image_size": 16, "patch_size": 2, "num_channels": 1, "embed_dim": 32,
                      "depths": [2, 2], "num_heads": [2, 4], "window_size": 4,
                      "drop_path_rate": 0.0, "num_labels": 10, **overrides})

    @classmethod
    def tiny(cls, **overrides):
        """A few thousand parameters, for tests."""
        return cls(**{"image_size": 16, "patch_size": 2, "embed_dim": 8, "depths": [2, 1],
                      "num_heads": [2, 2], "window_size": 4, "drop_path_rate": 0.0,
                      "num_labels": 3, **overrides})

    @classmethod
    def from_hf(cls, hf):
        """A SwinConfig from a Hugging Face config.json dict."""
        if hf.get("model_type", "swin") != "swin":
            raise ValueError(f"SwinConfig.from_hf: model_type {hf['model_type']!r} is not 'swin'")
        fields = {f.name for f in dataclasses.fields(cls)} - {"num_labels"}
        return cls(**{k: v for k, v in hf.items() if k in fields},
                   num_labels=num_labels_from_hf(hf))

    def to_hf(self):
        """This configuration as a Hugging Face SwinConfig dict (config.json)."""
        hf = dataclasses.asdict(self)
        del hf["num_labels"]
        return {**hf, "model_type": "swin", "num_layers": len(self.depths),
                "hidden_size": self.num_features, "encoder_stride": 32,
                **labels_to_hf(self.num_labels)}


def drop_path(x, p, training):
    """Stochastic depth (Huang et al., 2016): in training, zero a sample's whole residual
    branch with probability p and scale the survivors by 1 / (1 - p). x: (B, ...)."""
    if p == 0.0 or not training:
        return x
    keep = (tg.rand(x.shape[0], *([1] * (x.ndim - 1)), dtype=x.dtype, device=x.device)
            >= p).to(x.dtype)
    return x * keep / (1.0 - p)


# --- blocks -----------------------------------------------------------------------------------
class WindowAttention(nn.Attention):
    """nn.Attention within windows, plus Swin's relative position bias: a learned
    `relative_position_bias_table` ((2 w - 1)^2, heads), read through the
    `relative_position_index` buffer and added to the scores with the shift mask.
    x: (B * nW, w^2, C) -> same shape."""

    def __init__(self, dim, num_heads, window, dropout=0.0, qkv_bias=True, device=None,
                 dtype=None):
        super().__init__(dim, num_heads, dropout=dropout, fused=False, device=device,
                         dtype=dtype)
        if not qkv_bias:
            drop_qkv_biases(self)
        self.window = window
        self.relative_position_bias_table = nn.Parameter(
            tg.zeros((2 * window - 1) ** 2, num_heads, device=device, dtype=dtype))
        self.register_buffer("relative_position_index",
                             relative_position_index(window).to(device=device), persistent=False)

    def scores_bias(self, windows_per_image, window, mask=None):
        """The additive attention mask: (H, w^2, w^2) bias, or (B nW, H, w^2, w^2) with the
        (nW, w^2, w^2) shift mask added."""
        index = self.relative_position_index
        if window != self.window:  # a grid smaller than the window: the window shrinks
            index = relative_position_index(window, self.window).to(device=index.device)
        bias = self.relative_position_bias_table[index]  # (w^2, w^2, H)
        bias = bias.permute(2, 0, 1)  # (H, w^2, w^2)
        if mask is None:
            return bias
        bias = bias + mask.unsqueeze(1)  # (nW, H, w^2, w^2)
        B = windows_per_image
        return bias.unsqueeze(0).expand(B, *bias.shape).reshape(-1, *bias.shape[1:])


class SwinBlock(nn.Module):
    """(Shifted-)window attention then the MLP, each pre-LN in a residual connection.
    x: (B, H * W, C) tokens of an H x W grid -> same shape.

    Parameters: `attn_norm`, `attn` (WindowAttention), `ffn_norm`, `ffn` (FeedForward).
    As Hugging Face's SwinLayer, stochastic depth applies to the attention branch (the original
    code applies it to both); dropout to both branches' outputs.
    """

    def __init__(self, config, dim, num_heads, shift, drop_path_rate, device=None, dtype=None):
        super().__init__()
        options = dict(device=device, dtype=dtype)
        self.window_size, self.shift_size, self.drop_path_rate = (
            config.window_size, shift, drop_path_rate)
        self.attn_norm = nn.LayerNorm(dim, eps=config.layer_norm_eps, **options)
        self.attn = WindowAttention(dim, num_heads, config.window_size,
                                    config.attention_probs_dropout_prob, config.qkv_bias,
                                    **options)
        self.ffn_norm = nn.LayerNorm(dim, eps=config.layer_norm_eps, **options)
        self.ffn = nn.FeedForward(dim, int(config.mlp_ratio * dim),
                                  HF_ACTIVATIONS[config.hidden_act], **options)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self._masks = {}  # (H, W, window, shift, dtype, device) -> shift mask

    def forward(self, x, H, W, output_attentions=False):
        """Returns x, or (x, attention probabilities (B nW, heads, w^2, w^2))."""
        B, L, C = x.shape
        window, shift = self.window_size, self.shift_size
        if min(H, W) <= window:  # one window covers the grid: nothing to shift (as HF)
            window, shift = min(H, W), 0
        h = self.attn_norm(x).reshape(B, H, W, C)  # (B, H, W, C)
        pad_bottom, pad_right = -H % window, -W % window
        if pad_bottom or pad_right:
            h = F.pad(h, (0, 0, 0, pad_right, 0, pad_bottom))  # (B, Hp, Wp, C)
        Hp, Wp = H + pad_bottom, W + pad_right
        if shift:
            h = tg.roll(h, shifts=(-shift, -shift), dims=(1, 2))
        windows = window_partition(h, window)  # (B nW, w^2, C)
        mask = self._shift_mask(Hp, Wp, window, shift, x) if shift else None
        bias = self.attn.scores_bias(B, window, mask)
        out = self.attn(windows, attn_mask=bias)  # (B nW, w^2, C)
        h = window_reverse(out, window, Hp, Wp)  # (B, Hp, Wp, C)
        if shift:
            h = tg.roll(h, shifts=(shift, shift), dims=(1, 2))
        if pad_bottom or pad_right:
            h = h[:, :H, :W, :]  # (B, H, W, C)
        h = self.dropout(h.reshape(B, L, C))  # (B, L, C)
        x = x + drop_path(h, self.drop_path_rate, self.training)
        x = x + self.dropout(self.ffn(self.ffn_norm(x)))  # (B, L, C)
        if output_attentions:
            return x, self.attn.attention_weights(windows, attn_mask=bias)
        return x

    def _shift_mask(self, H, W, window, shift, like):
        key = (H, W, window, shift, like.dtype, like.device)
        if key not in self._masks:
            self._masks[key] = shifted_window_mask(H, W, window, shift, like.dtype, like.device)
        return self._masks[key]

    def extra_repr(self):
        return f"window_size={self.window_size}, shift_size={self.shift_size}"


class PatchMerging(nn.Module):
    """Each 2 x 2 group of tokens concatenated (Hugging Face's order: top-left, bottom-left,
    top-right, bottom-right), `norm`ed and projected by `reduction` (4C -> 2C, no bias).
    x: (B, H * W, C) -> (B, ceil(H/2) * ceil(W/2), 2C); odd sizes are padded with zeros."""

    def __init__(self, dim, device=None, dtype=None):
        super().__init__()
        self.norm = nn.LayerNorm(4 * dim, device=device, dtype=dtype)  # eps 1e-5, as HF
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False, device=device, dtype=dtype)

    def forward(self, x, H, W):
        B, L, C = x.shape
        x = x.reshape(B, H, W, C)  # (B, H, W, C)
        if H % 2 or W % 2:
            x = F.pad(x, (0, 0, 0, W % 2, 0, H % 2))  # (B, H + H%2, W + W%2, C)
        x = tg.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]],
                   dim=-1)  # (B, H/2, W/2, 4C)
        x = x.reshape(B, -1, 4 * C)  # (B, L/4, 4C)
        return self.reduction(self.norm(x))  # (B, L/4, 2C)


class SwinStage(nn.Module):
    """`blocks` (alternating plain and shifted windows) then `downsample` (PatchMerging, all
    stages but the last). x: (B, H * W, C) -> (x', H', W')."""

    def __init__(self, config, index, drop_path_rates, device=None, dtype=None):
        super().__init__()
        dim = config.embed_dim * 2 ** index
        self.blocks = nn.ModuleList([
            SwinBlock(config, dim, config.num_heads[index],
                      0 if j % 2 == 0 else config.window_size // 2, rate, device, dtype)
            for j, rate in enumerate(drop_path_rates)])
        last = index == len(config.depths) - 1
        self.downsample = None if last else PatchMerging(dim, device=device, dtype=dtype)

    def forward(self, x, H, W, output_attentions=False):
        """Returns (x, H, W, the last block's attention probabilities or None)."""
        weights = None
        for block in self.blocks:
            if output_attentions:
                x, weights = block(x, H, W, output_attentions=True)
            else:
                x = block(x, H, W)
        if self.downsample is not None:
            x = self.downsample(x, H, W)
            H, W = (H + 1) // 2, (W + 1) // 2
        return x, H, W, weights


# --- models -----------------------------------------------------------------------------------
class SwinEmbeddings(nn.Module):
    """pixel_values (B, C, H, W), padded to multiples of the patch -> (tokens (B, h w, D),
    h, w): `patch_embeddings.projection`, `norm`, optional `position_embeddings`."""

    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        options = dict(device=device, dtype=dtype)
        self.patch_size = config.patch_size
        self.patch_embeddings = PatchEmbeddings(config.num_channels, config.embed_dim,
                                                config.patch_size, **options)
        self.norm = nn.LayerNorm(config.embed_dim, **options)  # eps 1e-5, as HF
        self.position_embeddings = None
        if config.use_absolute_embeddings:
            side = config.image_size // config.patch_size
            self.position_embeddings = nn.Parameter(
                tg.zeros(1, side * side, config.embed_dim, **options))
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, pixel_values, interpolate_pos_encoding=False):
        _, _, H, W = pixel_values.shape
        p = self.patch_size
        if H % p or W % p:
            pixel_values = F.pad(pixel_values, (0, -W % p, 0, -H % p))  # (B, C, H', W')
        h, w = -(-H // p), -(-W // p)
        x = self.norm(self.patch_embeddings(pixel_values))  # (B, h w, D)
        if self.position_embeddings is not None:
            positions = self.position_embeddings
            if interpolate_pos_encoding and (x.shape[1] != positions.shape[1] or h != w):
                positions = resize_positions(positions, H // p, W // p)
            x = x + positions
        return self.dropout(x), h, w


class SwinModel(nn.Module):
    """The Swin encoder. pixel_values (B, C, H, W) -> a BaseModelOutputWithPooling:
    last_hidden_state (B, h w, num_features) for the last stage's h x w grid, and pooler_output,
    its mean over tokens (B, num_features), with add_pooling_layer (Hugging Face's default: True).

    Parameters: `embeddings`, `stages.{i}.blocks.{j}`, `stages.{i}.downsample`, `layernorm`.
    """

    def __init__(self, config, add_pooling_layer=True, device=None, dtype=None):
        super().__init__()
        self.config, self.add_pooling_layer = config, add_pooling_layer
        options = dict(device=device, dtype=dtype)
        self.embeddings = SwinEmbeddings(config, **options)
        total = sum(config.depths)
        rates = [config.drop_path_rate * i / max(total - 1, 1) for i in range(total)]
        starts = [sum(config.depths[:i]) for i in range(len(config.depths) + 1)]
        self.stages = nn.ModuleList([
            SwinStage(config, i, rates[starts[i]:starts[i + 1]], **options)
            for i in range(len(config.depths))])
        self.layernorm = nn.LayerNorm(config.num_features, eps=config.layer_norm_eps, **options)
        hub.reset_parameters(self, config.initializer_range)

    def forward(self, pixel_values, interpolate_pos_encoding=False, output_hidden_states=False,
                output_attentions=False):
        """As ViTModel.forward. hidden_states: the embeddings' output and each stage's (after
        its patch merging); attentions: each stage's last block's, (B nW, heads, w^2, w^2)."""
        pixel_values = pixel_values.to(self.layernorm.weight.dtype)
        x, H, W = self.embeddings(pixel_values, interpolate_pos_encoding)  # (B, H W, D)
        hidden, attentions = [x], []
        for stage in self.stages:
            x, H, W, weights = stage(x, H, W, output_attentions)  # (B, H' W', D')
            hidden.append(x)
            attentions.append(weights)
        x = self.layernorm(x)  # (B, H W, num_features)
        return BaseModelOutputWithPooling(x, x.mean(dim=1) if self.add_pooling_layer else None,
                            tuple(hidden) if output_hidden_states else None,
                            tuple(attentions) if output_attentions else None)

    def summary(self):
        return _summary(self)

    def hf_parameter_names(self):
        """{Hugging Face SwinModel name: our name}."""
        return {_hf_name(ours): ours for ours in self.state_dict()}

    @classmethod
    def from_pretrained(cls, path, device=None):
        """Load a Hugging Face Swin checkpoint folder (a classifier's head is left out)."""
        return _from_pretrained(cls, path, device)

    def save_pretrained(self, path):
        """Write a folder that `transformers.SwinModel.from_pretrained(path)` loads."""
        hub.save_hf_folder(self, path, "SwinModel")


class SwinForImageClassification(nn.Module):
    """Swin with a linear classifier on the pooled tokens.
    pixel_values (B, C, H, W) -> LogitsOutput (logits (B, num_labels), loss or None).
    Parameters: `swin` (a SwinModel with its pooler), `classifier`."""

    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        self.config = config
        self.swin = SwinModel(config, device=device, dtype=dtype)
        self.classifier = nn.Linear(config.num_features, config.num_labels, device=device,
                                    dtype=dtype) if config.num_labels > 0 else nn.Identity()
        hub.reset_parameters(self.classifier, config.initializer_range)

    def forward(self, pixel_values, labels=None, interpolate_pos_encoding=False):
        """As ViTForImageClassification.forward."""
        logits = self.classifier(self.swin(pixel_values, interpolate_pos_encoding).pooler_output)
        loss = None
        if labels is not None:
            loss = classification_loss(logits, labels, self.config.problem_type)
        return LogitsOutput(loss=loss, logits=logits)

    def summary(self):
        return _summary(self)

    def hf_parameter_names(self):
        """{Hugging Face SwinForImageClassification name: our name}."""
        return {_hf_name(ours): ours for ours in self.state_dict()}

    @classmethod
    def from_pretrained(cls, path, device=None):
        """Load a Hugging Face Swin checkpoint folder; from a SwinModel checkpoint the
        classifier keeps its fresh initialisation (with a warning). Eval mode."""
        return _from_pretrained(cls, path, device)

    def save_pretrained(self, path):
        """Write a folder that `transformers.SwinForImageClassification` loads."""
        hub.save_hf_folder(self, path, "SwinForImageClassification")


def _summary(model):
    """Parameters per stage; `nn.Module.summary(model)` gives the per-module table."""
    swin = model if isinstance(model, SwinModel) else model.swin
    c = swin.config
    rows = [("patch embedding + norm", f"{c.num_channels}x{c.patch_size}x{c.patch_size} -> "
             f"{c.embed_dim}", swin.embeddings.num_parameters())]
    for i, stage in enumerate(swin.stages):
        merge = " + merging" if stage.downsample is not None else ""
        rows.append((f"stage {i + 1}: {c.depths[i]} blocks{merge}",
                     f"width {c.embed_dim * 2 ** i}, {c.num_heads[i]} heads",
                     stage.num_parameters()))
    rows.append(("final LayerNorm, head", "", model.num_parameters() - sum(r[2] for r in rows)))
    return parameter_table(rows, model.num_parameters())


# --- checkpoint name mapping --------------------------------------------------------------------
# Hugging Face Swin names inside `encoder.layers.{i}.blocks.{j}.` -> ours inside
# `stages.{i}.blocks.{j}.`; `encoder.layers.{i}.downsample`, the embeddings, `layernorm` and
# `classifier` keep their names (and the `swin.` prefix under the classifier).
_BLOCK_NAMES = {
    "layernorm_before": "attn_norm", "attention.self.query": "attn.q_proj",
    "attention.self.key": "attn.k_proj", "attention.self.value": "attn.v_proj",
    "attention.self.relative_position_bias_table": "attn.relative_position_bias_table",
    "attention.output.dense": "attn.out_proj", "layernorm_after": "ffn_norm",
    "intermediate.dense": "ffn.up_proj", "output.dense": "ffn.down_proj",
}
_OURS_IN_BLOCK = {ours: hf for hf, ours in _BLOCK_NAMES.items()}
# transformers 5's in-memory spelling of the same tensors (it writes the names above to disk).
_MEMORY_NAMES = {
    "attention.q_proj": "attention.self.query", "attention.k_proj": "attention.self.key",
    "attention.v_proj": "attention.self.value", "attention.o_proj": "attention.output.dense",
    "attention.relative_position_bias.relative_position_bias_table":
        "attention.self.relative_position_bias_table",
    "mlp.fc1": "intermediate.dense", "mlp.fc2": "output.dense",
}


def _hf_name(ours):
    """Our parameter name -> Hugging Face's (checkpoint) name."""
    head, sep, rest = ours.partition("stages.")
    if not sep:
        return ours
    stage, _, rest = rest.partition(".")
    if rest.startswith("blocks."):
        block, _, leaf = rest.removeprefix("blocks.").partition(".")
        module, _, kind = leaf.rpartition(".")
        if module == "attn":  # the bias table is a parameter of the attention itself
            module, kind = "attn." + kind, ""
        rest = f"blocks.{block}.{_OURS_IN_BLOCK[module]}" + (f".{kind}" if kind else "")
    return f"{head}encoder.layers.{stage}.{rest}"


def _canonical_hf_name(key):
    for memory, disk in _MEMORY_NAMES.items():
        if f".{memory}." in key or key.endswith(f".{memory}"):
            return key.replace(f".{memory}", f".{disk}")
    return key


def _from_pretrained(cls, path, device):
    hf_config, hf_state = hub.read_folder(path, device=device)
    model = cls(SwinConfig.from_hf(hf_config), device=device)
    return hub.load_hf_state(model, hf_state, "swin.", _canonical_hf_name)
