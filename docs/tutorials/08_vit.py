"""
ViT: images as sequences of patches, and attention rollout
==========================================================

A Vision Transformer cuts an image into patches, embeds each patch as a token, prepends a
learned [CLS] token and runs a Transformer encoder; the [CLS] output classifies. This tutorial
cuts scikit-learn's bundled digits into patches, shows that the patch embedding is one matrix
product, trains a small ViT for a few epochs, and asks where it looks with attention rollout.
"""
import matplotlib.pyplot as plt

import tensorgrad as tg
from tensorgrad.datasets.digits import RandomShift, load_digits
from tensorgrad.models import ViTConfig, ViTForImageClassification
from tensorgrad.models.vit import patchify
from tensorgrad.viz.attention_maps import vit_attention_maps

tg.manual_seed(0)

# %%
# Patches
# -------
# The 8x8 digits, upsampled to 16x16, in 4x4 patches: 16 tokens of 16 pixels each, in row-major
# order.
x_train, y_train, x_test, y_test = load_digits(16, seed=0)
image = x_test[:1]                                           # (1, 1, 16, 16)
patches = patchify(image, 4)                                 # (1, 16, 1 * 4 * 4)
print("image", image.shape, "-> patches", patches.shape)
fig, axes = plt.subplots(1, 2, figsize=(8, 3.5), gridspec_kw={"width_ratios": [1, 1.3]})
axes[0].imshow(image[0, 0].numpy(), cmap="gray_r")
axes[0].set_title(f"a {y_test[0].item()}, 16x16")
for edge in range(0, 17, 4):
    axes[0].axhline(edge - 0.5, color="tab:red")
    axes[0].axvline(edge - 0.5, color="tab:red")
axes[1].imshow(patches[0].numpy(), cmap="gray_r", aspect="auto")
axes[1].set_xlabel("pixel within the patch")
axes[1].set_ylabel("token (patch)")
axes[1].set_title("the sequence the Transformer reads")
plt.tight_layout()
plt.show()

# %%
# The patch embedding is a convolution with kernel = stride = patch size, which is the same as
# flattening each patch and multiplying by one matrix:
config = ViTConfig.digits()
model = ViTForImageClassification(config)
conv = model.vit.embeddings.patch_embeddings.projection     # Conv2d(1, 64, 4, stride=4)
by_conv = conv(image).flatten(2).transpose(1, 2)             # (1, 16, 64)
by_matmul = patches @ conv.weight.reshape(64, -1).T + conv.bias
print("conv against matmul:", (by_conv - by_matmul).abs().max().item())
print(f"{model.num_parameters():,} parameters; sequence = 16 patches + [CLS]")

# %%
# Training
# --------
# A ViT has no built-in notion that neighbouring pixels belong together or that a shifted digit
# is the same digit; with 1,347 training images it needs augmentation (random shifts of a
# pixel), a warm-up (attention is unstable at the full rate from step 0) and many epochs to do
# well. Eight epochs here; ``examples/train_vit_digits.py`` trains for 30.
epochs, batch = 8, 32
opt = tg.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
total = epochs * ((x_train.shape[0] + batch - 1) // batch)
schedule = tg.optim.lr_scheduler.WarmupCosineLR(opt, 100, total)
augment = RandomShift(1)


def accuracy(x, y):
    model.eval()
    with tg.no_grad():
        acc = (model(x).logits.argmax(-1) == y).float().mean().item()
    model.train()
    return acc


history = []
for epoch in range(1, epochs + 1):
    order = tg.randperm(x_train.shape[0])
    for i in range(0, x_train.shape[0], batch):
        idx = order[i:i + batch]
        loss = model(augment(x_train[idx]), labels=y_train[idx]).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
    history.append(accuracy(x_test, y_test))
    print(f"epoch {epoch}  last batch loss {loss.item():.3f}  val_acc {history[-1]:.3f}")

# %%
# Attention rollout
# -----------------
# One layer's attention says where [CLS] looks in that layer, but each token has already mixed
# with others in the layers below. Rollout (Abnar and Zuidema, 2020) multiplies the layers'
# attention matrices, each averaged over heads and with the identity added for the residual
# connection, to estimate how much each input patch reaches [CLS] at the top.
images = x_test[:6]
maps = vit_attention_maps(model, images)                     # rollout (6, 4, 4), heads (6, H, 4, 4)
with tg.no_grad():
    predictions = model(images).logits.argmax(-1)
fig, axes = plt.subplots(3, 6, figsize=(11, 5.6))
for j in range(6):
    axes[0, j].imshow(images[j, 0].numpy(), cmap="gray_r")
    axes[0, j].set_title(f"{y_test[j].item()} -> {predictions[j].item()}")
    axes[1, j].imshow(maps["rollout"][j].numpy(), cmap="magma")
    axes[2, j].imshow(maps["heads"][j, 0].numpy(), cmap="magma")
for ax in axes.flat:
    ax.axis("off")
axes[1, 0].set_title("rollout", loc="left", fontsize=9)
axes[2, 0].set_title("last layer, head 0", loc="left", fontsize=9)
plt.tight_layout()
plt.show()
