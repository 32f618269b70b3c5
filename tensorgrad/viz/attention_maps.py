"""Where a ViT looks: attention rollout, per-head attention maps and patch-embedding filters.

- Attention rollout (Abnar & Zuidema, 2020, "Quantifying Attention Flow in Transformers"):
  each layer's attention, averaged over heads, gets the identity added for the residual
  connection and its rows renormalised; the product over layers says how much each input
  token flows into each output token. The [CLS] row, over the patches, is a saliency map.
- Per-head maps: one layer's attention from [CLS] to every patch, per head.
- Filters: the patch projection's weights as p x p images (the paper's Figure 7, left).
`save_attention_grid` and `save_filter_grid` draw them with matplotlib (needed only there).
"""
import os

import tensorgrad as tg
from tensorgrad.serialization import atomic_write


def attention_rollout(attentions, head_fusion="mean", residual=True):
    """attentions: a sequence of (B, H, T, T) probabilities, first layer first (as
    `ViTModel(..., output_attentions=True).attentions`). head_fusion: "mean", "max" or "min"
    over heads. residual: add the identity before renormalising (the residual stream).
    Returns (B, T, T): row i says how much of each input token reaches output token i."""
    if head_fusion not in ("mean", "max", "min"):
        raise ValueError(f"attention_rollout: head_fusion must be 'mean', 'max' or 'min', got "
                         f"{head_fusion!r}")
    rollout = None
    for weights in attentions:
        if weights.ndim != 4 or weights.shape[-1] != weights.shape[-2]:
            raise ValueError(f"attention_rollout: expected (B, H, T, T) attention, got "
                             f"{weights.shape}")
        if head_fusion == "mean":
            a = weights.mean(dim=1)  # (B, T, T)
        else:
            a = getattr(weights, head_fusion)(dim=1).values  # (B, T, T)
        if residual:
            a = a + tg.eye(a.shape[-1], dtype=a.dtype, device=a.device)
        a = a / a.sum(dim=-1, keepdim=True)
        rollout = a if rollout is None else a @ rollout  # (B, T, T) @ (B, T, T)
    return rollout


def _grid(row, grid_size):
    """(B, ..., N) over the patches -> (B, ..., h, w)."""
    return row.reshape(*row.shape[:-1], *grid_size)


def vit_attention_maps(model, pixel_values, layer=-1):
    """Saliency maps for a ViT (ViTModel or ViTForImageClassification) on pixel_values
    (B, C, H, W): {"rollout": (B, h, w) the [CLS] row of the rollout over the patches,
    "heads": (B, heads, h, w) layer `layer`'s attention from [CLS] to each patch}, each map
    scaled to [0, 1] per image (and head)."""
    vit = getattr(model, "vit", model)
    p = vit.config.patch_size
    grid_size = (pixel_values.shape[-2] // p, pixel_values.shape[-1] // p)
    with tg.no_grad():
        out = vit(pixel_values, interpolate_pos_encoding=True, output_attentions=True)
        rollout = attention_rollout(out.attentions)[:, 0, 1:]  # (B, N)
        heads = out.attentions[layer][:, :, 0, 1:]  # (B, heads, N)
    return {"rollout": _unit(_grid(rollout, grid_size)), "heads": _unit(_grid(heads, grid_size))}


def patch_filters(model):
    """The patch projection's filters as images, (D, C, p, p), each scaled to [0, 1]."""
    embeddings = getattr(model, "vit", model).embeddings
    with tg.no_grad():
        return _unit(embeddings.patch_embeddings.projection.weight.detach())


def _unit(maps):
    """Each (..., h, w) map scaled to [0, 1] (a constant map becomes 0)."""
    flat = maps.reshape(*maps.shape[:-2], -1)
    low = flat.min(dim=-1, keepdim=True).values
    span = flat.max(dim=-1, keepdim=True).values - low
    return ((flat - low) / span.clamp_min(1e-12)).reshape(maps.shape)


def save_attention_grid(path, images, maps, labels=None, predictions=None):
    """One row per image: the image, its rollout map over it, then each head's map.
    images: (B, 1 or 3, H, W) in [0, 1]; maps: from vit_attention_maps. Returns path."""
    plt = _pyplot()
    heads = maps["heads"].shape[1]
    rows, cols = images.shape[0], 2 + heads
    fig, axes = plt.subplots(rows, cols, figsize=(1.4 * cols, 1.5 * rows), squeeze=False)
    size = tuple(images.shape[-2:])
    for i in range(rows):
        picture = _picture(images[i])
        title = "" if labels is None else f"label {int(labels[i].item())}"
        if predictions is not None:
            title += f", pred {int(predictions[i].item())}"
        panels = [(picture, None, title),
                  (picture, _upsample(maps["rollout"][i], size), "rollout")]
        panels += [(None, maps["heads"][i, h].numpy(), f"head {h}") for h in range(heads)]
        for ax, (base, overlay, name) in zip(axes[i], panels):
            if base is not None:
                ax.imshow(base, cmap="gray", vmin=0, vmax=1)
            if overlay is not None:
                ax.imshow(overlay, cmap="inferno", alpha=0.55 if base is not None else 1.0)
            ax.set_title(name, fontsize=7)
            ax.axis("off")
    fig.suptitle("[CLS] attention: rollout over all layers and the last layer's heads",
                 fontsize=9)
    return _save(fig, plt, path)


def save_filter_grid(path, filters, columns=8):
    """The patch-embedding filters (D, C, p, p) from patch_filters, as a grid of images."""
    plt = _pyplot()
    count = filters.shape[0]
    rows = -(-count // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(columns, rows), squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k < count:
            ax.imshow(_picture(filters[k]), cmap="gray", vmin=0, vmax=1)
        ax.axis("off")
    fig.suptitle(f"patch embedding filters ({count})", fontsize=9)
    return _save(fig, plt, path)


def _picture(image):
    """(C, H, W) -> an array matplotlib shows: (H, W) grey or (H, W, 3)."""
    image = image.detach()
    return image[0].numpy() if image.shape[0] == 1 else image.permute(1, 2, 0).numpy()


def _upsample(grid, size):
    """An (h, w) map at an image's (H, W) resolution, each patch a block of pixels."""
    h, w = grid.shape
    return grid.repeat_interleave(size[0] // h, dim=0).repeat_interleave(size[1] // w,
                                                                         dim=1).numpy()


def _pyplot():
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError("drawing attention maps needs matplotlib (pip install matplotlib)") \
            from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, plt, path):
    fig.tight_layout()
    # Atomic, so a failed save leaves an earlier picture whole. The format comes from the
    # suffix as savefig's would (PNG without one, written at `path` itself).
    suffix = os.path.splitext(os.fspath(path))[1][1:].lower()
    try:
        atomic_write(path, lambda f: fig.savefig(f, format=suffix or None, dpi=120))
    finally:
        plt.close(fig)
    return path
