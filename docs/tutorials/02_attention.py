"""
Attention from scratch
======================

Scaled dot-product attention, built one step at a time from matrix products (queries, keys and
values, the 1/sqrt(d) scaling, the causal and padding masks, several heads), and checked at each
step against ``F.scaled_dot_product_attention`` and ``nn.MultiheadAttention``.
"""
import math

import matplotlib.pyplot as plt

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad import nn

tg.manual_seed(0)

# %%
# Queries, keys and values
# ------------------------
# Each of the T tokens (here 6, of width 16) asks a question (its query), advertises what it
# holds (its key) and offers content (its value). The score of query i for key j is their dot
# product; a softmax over j turns a row of scores into weights that sum to 1, and the output of
# token i is the weighted mean of the values.
B, T, C = 1, 6, 16
x = tg.randn(B, T, C)
Wq, Wk, Wv = (tg.randn(C, C) / math.sqrt(C) for _ in range(3))
q, k, v = x @ Wq, x @ Wk, x @ Wv                      # (B, T, C) each

scores = q @ k.transpose(-2, -1)                       # (B, T, T)
weights = scores.softmax(dim=-1)
out = weights @ v                                      # (B, T, C)
print("rows sum to 1:", weights.sum(-1))

# %%
# Why divide by sqrt(d)
# ---------------------
# With unit-variance entries, a dot product of d terms has variance d: the wider the head, the
# larger the scores, and the softmax saturates into a one-hot row whose gradient vanishes.
# Dividing by sqrt(d) keeps the scores' variance at 1 whatever the width.
for d in (4, 64, 1024):
    qd, kd = tg.randn(1000, d), tg.randn(1000, d)
    s = (qd * kd).sum(-1)
    print(f"d={d:5d}  std of q.k = {s.std().item():6.2f}   after / sqrt(d): "
          f"{(s / math.sqrt(d)).std().item():.2f}")

# %%
# The largest weight of a softmax row, unscaled against scaled, for a width of 256:
d = 256
row = tg.randn(1, 32, d) @ tg.randn(1, d, 32)
plt.figure(figsize=(6, 2.5))
plt.plot(row.softmax(-1)[0].max(-1).values.numpy(), "o-", label="softmax(q k^T)")
plt.plot((row / math.sqrt(d)).softmax(-1)[0].max(-1).values.numpy(), "o-",
         label="softmax(q k^T / sqrt(d))")
plt.ylabel("largest weight in the row")
plt.xlabel("query")
plt.legend()
plt.tight_layout()
plt.show()

# %%
# So the attention of the paper is softmax(Q K^T / sqrt(d)) V, which is what
# ``F.scaled_dot_product_attention`` computes:
def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])   # (..., Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))       # True = may attend
    return scores.softmax(dim=-1) @ v


ours = attention(q, k, v)
print("largest difference from F.scaled_dot_product_attention:",
      (ours - F.scaled_dot_product_attention(q, k, v)).abs().max().item())
assert tg.allclose(ours, F.scaled_dot_product_attention(q, k, v), atol=1e-5)

# %%
# Masks
# -----
# A decoder must not look ahead: token i may attend to keys j <= i, a lower-triangular mask.
# Setting the other scores to -inf before the softmax gives them weight exactly 0. A padding
# mask does the same for the keys of padding tokens.
causal = tg.ones(T, T, dtype=tg.bool).tril()
lengths = tg.tensor([4])                                  # the last 2 tokens are padding
keep_keys = tg.arange(T).unsqueeze(0) < lengths.unsqueeze(1)  # (B, T)
mask = causal & keep_keys.unsqueeze(1)                   # (T, T) & (B, 1, T) -> (B, T, T)

masked = attention(q, k, v, mask)
assert tg.allclose(masked, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-5)
assert tg.allclose(attention(q, k, v, causal),
                   F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=1e-5)

fig, axes = plt.subplots(1, 3, figsize=(9, 3))
panels = [("no mask", None), ("causal", causal), ("causal + padding", mask)]
for ax, (title, m) in zip(axes, panels):
    s = q @ k.transpose(-2, -1) / math.sqrt(C)
    if m is not None:
        s = s.masked_fill(~m, float("-inf"))
    ax.imshow(s.softmax(-1)[0].numpy(), cmap="viridis", vmin=0, vmax=1)
    ax.set_title(title)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
plt.tight_layout()
plt.show()

# %%
# Heads
# -----
# One softmax row can only average one way. Several heads split the width into H parts of size
# C / H, attend independently and concatenate: the same cost, H patterns. The reshape and
# transpose move the heads next to the batch, so one batched product serves all of them.
H = 4
hs = C // H


def split_heads(t):
    return t.reshape(B, T, H, hs).transpose(1, 2)       # (B, T, C) -> (B, H, T, hs)


heads = attention(split_heads(q), split_heads(k), split_heads(v), causal)   # (B, H, T, hs)
merged = heads.transpose(1, 2).reshape(B, T, C)                             # (B, T, C)
assert tg.allclose(heads, F.scaled_dot_product_attention(
    split_heads(q), split_heads(k), split_heads(v), is_causal=True), atol=1e-5)

# %%
# ``nn.MultiheadAttention`` is PyTorch's module: the three projections as one ``in_proj_weight``,
# the heads, and an output projection. Rebuilt from its own weights with the function above:
mha = nn.MultiheadAttention(C, H, batch_first=True)
Wq, Wk, Wv = mha.in_proj_weight.chunk(3, dim=0)          # (C, C) each, applied as x @ W^T
qh, kh, vh = (split_heads(x @ W.T + b) for W, b in zip((Wq, Wk, Wv), mha.in_proj_bias.chunk(3)))
ours = attention(qh, kh, vh, causal).transpose(1, 2).reshape(B, T, C)
ours = ours @ mha.out_proj.weight.T + mha.out_proj.bias
# PyTorch's bool attn_mask means the opposite: True = may NOT attend
theirs, _ = mha(x, x, x, attn_mask=~causal)
print("nn.MultiheadAttention, largest difference:", (ours - theirs).abs().max().item())
assert tg.allclose(ours, theirs, atol=1e-5)

# %%
# The gradients agree too: the composite above and the fused primitive differentiate alike.
qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
attention(qg, kg, vg, causal).square().sum().backward()
grads = [t.grad for t in (qg, kg, vg)]
for t in (qg, kg, vg):
    t.grad = None
F.scaled_dot_product_attention(qg, kg, vg, is_causal=True).square().sum().backward()
for name, g, t in zip("qkv", grads, (qg, kg, vg)):
    print(f"d/d{name}: largest difference {(g - t.grad).abs().max().item():.1e}")
    assert tg.allclose(g, t.grad, atol=1e-4)
