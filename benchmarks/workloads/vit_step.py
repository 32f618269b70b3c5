"""One AdamW training step of a small ViT on CIFAR-sized images: 32x32x3 in 4x4 patches (64
tokens + [CLS]), width 192, 6 pre-LN blocks of 3 heads, MLP 768, exact GELU, 10 classes,
batch 32 (DeiT-Tiny's width on CIFAR).

tensorgrad.models.ViTForImageClassification against the idiomatic PyTorch ViT below: a Conv2d
patch embedding, nn.TransformerEncoder(norm_first=True) (fused in-projection, PyTorch's
attention kernel), a final LayerNorm and a linear head on [CLS]. Same shapes, same parameter
count (tests/test_benchmarks.py's torch-side test runs it).
"""
from . import row
from ..timing import rate, scale

FRAMEWORKS = ("tensorgrad", "torch")
DESCRIPTION = "ms per AdamW step of a ViT (32px, patch 4, width 192, 6 blocks), images/s"
SMALL = dict(image_size=32, patch_size=4, num_channels=3, hidden_size=192, num_hidden_layers=6,
             num_attention_heads=3, intermediate_size=768, num_labels=10)
TINY = dict(image_size=8, patch_size=4, num_channels=3, hidden_size=16, num_hidden_layers=2,
            num_attention_heads=2, intermediate_size=32, num_labels=10)
SIZES = {"full": (SMALL, 32), "quick": (SMALL, 32), "tiny": (TINY, 2)}  # (config, batch)
LR, WEIGHT_DECAY = 1e-3, 0.05


def run(env):
    config, batch = SIZES[env.mode]
    size = config["image_size"]
    pixels = env.randn(batch, config["num_channels"], size, size)
    labels = env.randint(config["num_labels"], batch)
    step = _STEPS[env.framework](env, config)
    stats = env.measure(lambda: step(pixels, labels), factor=3.0)
    case = f"B={batch} {size}px/{config['patch_size']}"
    return [row(case, "ms/step", scale(stats, 1e3)),
            row(case, "images/s", rate(stats, batch), better="higher")]


def _tensorgrad(env, config):
    from tensorgrad import nn
    from tensorgrad.models.vit import ViTConfig, ViTForImageClassification

    model = ViTForImageClassification(ViTConfig(**config), device=env.device)
    optimizer = nn.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)

    def step(pixels, labels):
        optimizer.zero_grad()
        model(pixels, labels=labels).loss.backward()
        optimizer.step()
    return step


def torch_vit(config):
    """The PyTorch model: what a PyTorch user would write for this ViT."""
    import torch
    from torch import nn

    class ViT(nn.Module):
        def __init__(self, c):
            super().__init__()
            d, p = c["hidden_size"], c["patch_size"]
            self.patch = nn.Conv2d(c["num_channels"], d, p, stride=p)
            self.cls = nn.Parameter(torch.zeros(1, 1, d))
            self.pos = nn.Parameter(torch.zeros(1, (c["image_size"] // p) ** 2 + 1, d))
            layer = nn.TransformerEncoderLayer(d, c["num_attention_heads"],
                                               c["intermediate_size"], dropout=0.0,
                                               activation="gelu", batch_first=True,
                                               norm_first=True, layer_norm_eps=1e-12)
            self.encoder = nn.TransformerEncoder(layer, c["num_hidden_layers"],
                                                 enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d, eps=1e-12)
            self.head = nn.Linear(d, c["num_labels"])

        def forward(self, pixels, labels):
            x = self.patch(pixels).flatten(2).transpose(1, 2)  # (B, N, D)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
            logits = self.head(self.norm(self.encoder(x))[:, 0])  # (B, num_labels)
            return logits, nn.functional.cross_entropy(logits, labels)
    return ViT(config)


def _torch(env, config):
    import torch

    model = torch_vit(config).to(env.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)

    def step(pixels, labels):
        optimizer.zero_grad()
        model(pixels, labels)[1].backward()
        optimizer.step()
    return step


_STEPS = {"tensorgrad": _tensorgrad, "torch": _torch}
