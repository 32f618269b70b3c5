"""
Positional encodings compared
=============================

Attention treats its keys as a set: permute the tokens and each output is permuted the same way.
Order has to be put in. Four ways, all in ``tensorgrad.nn``, each used by a model here:
sinusoidal (the 2017 Transformer), learned (GPT-2, BERT, ViT), rotary (RoPE: LLaMA and most
recent decoders) and ALiBi (a bias on the scores).
"""
import matplotlib.pyplot as plt

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad import nn
from tensorgrad.nn import positional

tg.manual_seed(0)

# %%
# Without positions, order is invisible
# -------------------------------------
x = tg.randn(1, 5, 8)
perm = tg.tensor([3, 0, 4, 1, 2])
out = F.scaled_dot_product_attention(x, x, x)
out_perm = F.scaled_dot_product_attention(x[:, perm], x[:, perm], x[:, perm])
print("attention commutes with a permutation:", tg.allclose(out[:, perm], out_perm, atol=1e-6))

# %%
# Sinusoidal: a fixed table added to the embeddings
# -------------------------------------------------
# PE[p, 2i] = sin(p / 10000^(2i/d)) and PE[p, 2i+1] = cos(...): each pair of features turns at
# its own rate, from one turn every 6 positions to one every 60,000. The dot product of two
# rows depends only on their distance, and falls as they move apart.
table = positional.sinusoidal_encoding(128, 64)                  # (T, d)
similarity = table @ table.T                            # (T, T)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
axes[0].imshow(table.numpy().T, aspect="auto", cmap="RdBu")
axes[0].set_xlabel("position")
axes[0].set_ylabel("feature")
axes[0].set_title("sinusoidal table")
axes[1].plot(similarity[40].numpy())
axes[1].set_xlabel("position j")
axes[1].set_title("PE[40] . PE[j]")
plt.tight_layout()
plt.show()
shift = (table[10] @ table[13]).item(), (table[70] @ table[73]).item()
print(f"PE[10].PE[13] = {shift[0]:.4f}, PE[70].PE[73] = {shift[1]:.4f}: a function of the distance")

# %%
# Learned: a table of parameters
# ------------------------------
# GPT-2 learns one vector per position, 1,024 x 768 = 786,432 parameters. Nothing ties position
# 5 to position 6 except what training finds, and a position past the table has no vector at
# all: the model cannot read a longer context than it was built for.
learned = nn.LearnedPositionalEncoding(16, 8)
print(learned, "->", sum(p.numel() for p in learned.parameters()), "parameters")
try:
    learned(tg.randn(1, 20, 8))
except (ValueError, IndexError, RuntimeError) as error:
    print("20 positions through a table of 16:", type(error).__name__)

# %%
# Rotary: rotate queries and keys
# -------------------------------
# RoPE rotates each pair of query and key features by an angle proportional to the position.
# A rotation by a angle and one by b have a dot product that depends on a - b only, so the score
# q_i . k_j sees the *relative* position i - j, and nothing is added to the residual stream.
rope = nn.RotaryEmbedding(16)
q = tg.randn(1, 1, 1, 16).expand(1, 1, 64, 16)           # the same query at every position
k = tg.randn(1, 1, 1, 16).expand(1, 1, 64, 16)           # and the same key
qr, kr = rope(q, k)
scores = (qr @ kr.transpose(-2, -1))[0, 0]               # (T, T)
print(f"score(5, 2) = {scores[5, 2].item():.5f}, score(45, 42) = {scores[45, 42].item():.5f}")
assert abs(scores[5, 2].item() - scores[45, 42].item()) < 1e-4

# %%
# ALiBi: a penalty on the scores
# ------------------------------
# ALiBi adds -m_h |i - j| to the scores of head h, with a geometric series of slopes m_h: steep
# heads look locally, shallow ones far. No parameters and no table, so it runs at any length.
slopes = positional.alibi_slopes(8)
bias = positional.alibi_bias(slopes, 32)                          # (H, T, T)
fig, axes = plt.subplots(1, 4, figsize=(11, 3))
for ax, h in zip(axes, (0, 2, 5, 7)):
    scores = bias[h].masked_fill(~tg.ones(32, 32, dtype=tg.bool).tril(), float("-inf"))
    ax.imshow(scores.softmax(-1).numpy(), cmap="viridis")
    ax.set_title(f"head {h}, slope {slopes[h].item():.3f}")
    ax.axis("off")
fig.suptitle("ALiBi alone: the causal attention each head gives to equal scores")
plt.tight_layout()
plt.show()

# %%
# Side by side
# ------------
#
# ============= ======================= ================= ==================================
# encoding      where it acts           parameters        longer than trained
# ============= ======================= ================= ==================================
# sinusoidal    added to the embeddings none              defined, but the model never saw it
# learned       added to the embeddings block_size x d    impossible: no vector
# rotary        rotates q and k         none              relative, degrades gracefully
# ALiBi         bias on the scores      none              designed for it
# ============= ======================= ================= ==================================
#
# In ``nn.Attention`` rotary is ``rotary=nn.RotaryEmbedding(head_dim)`` and ALiBi
# ``alibi=True``; T5 uses a fifth kind, a learned bias per bucket of relative distance
# (``nn.RelativePositionBias``).
attn = nn.Attention(32, 4, rotary=nn.RotaryEmbedding(8))
print(attn(tg.randn(2, 10, 32), is_causal=True).shape)
