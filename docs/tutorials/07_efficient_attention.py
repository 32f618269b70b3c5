"""
Efficient attention: masks, cost against T, quality
===================================================

Dense attention scores every query against every key: T x T numbers per head, so doubling the
context quadruples the time. The patterns in ``tensorgrad.nn.attention_patterns`` keep a subset
of the keys (a sliding window with a few global tokens, BigBird's window + global + random
blocks, the Sparse Transformer's strided pattern), or replace the softmax by a kernel that makes
attention linear in T. This tutorial draws what each one sees, times them against T, checks that
each equals dense attention under its own mask, and trains one small model with each.
"""
import time

import matplotlib.pyplot as plt

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad.models import GPT, CharTokenizer, GPTConfig
from tensorgrad.nn.attention_patterns import BigBird, LinearAttention, SlidingWindow, Strided

tg.manual_seed(0)
PATTERNS = {
    "sliding window (32) + 2 global": SlidingWindow(32, global_tokens=2, block_size=16),
    "BigBird (blocks of 16)": BigBird(block_size=16, window_blocks=3, global_blocks=1,
                                      random_blocks=2),
    "strided (16)": Strided(16, column_block=16),
}

# %%
# What each pattern sees
# ----------------------
# ``pattern.mask(T)`` is the (T, T) boolean matrix the pattern is equal to (True = may attend);
# it exists for pictures and tests, the computation never builds it.
T = 128
fig, axes = plt.subplots(1, 4, figsize=(13, 3.4))
masks = {"dense (causal)": tg.ones(T, T, dtype=tg.bool).tril()}
masks.update({name: p.mask(T, causal=True) for name, p in PATTERNS.items()})
for ax, (name, m) in zip(axes, masks.items()):
    ax.imshow(m.numpy(), cmap="Greys", interpolation="nearest")
    ax.set_title(f"{name}\n{m.float().mean().item():.0%} of the matrix", fontsize=9)
    ax.axis("off")
plt.tight_layout()
plt.show()

# %%
# Equal to dense attention under the mask
# ---------------------------------------
# The sparse patterns compute blocks of queries against the keys they gather, and merge partial
# softmaxes over disjoint key sets by their log-sum-exps. The result is exact: dense attention
# with the pattern's mask gives the same numbers, and the same gradients.
B, H, E = 1, 2, 16
q, k, v = (tg.randn(B, H, T, E, dtype=tg.float64, requires_grad=True) for _ in range(3))
for name, pattern in PATTERNS.items():
    ours = pattern(q, k, v, is_causal=True)
    dense = F.scaled_dot_product_attention(q, k, v, attn_mask=pattern.mask(T, causal=True))
    g_ours = tg.grad(ours.square().sum(), (q, k, v))
    g_dense = tg.grad(dense.square().sum(), (q, k, v))
    err = max((a - b).abs().max().item() for a, b in zip(g_ours, g_dense))
    print(f"{name:32s} values {(ours - dense).abs().max().item():.1e}   gradients {err:.1e}")

# %%
# Linear attention is another function, not a subset of keys: phi(Q) (phi(K)^T V) with
# phi = elu + 1, normalised by phi(Q) phi(K)^T 1. Written as a product of (T, E) and (E, E)
# matrices it costs T E^2 instead of T^2 E; the quadratic form gives the same numbers, up to
# the small epsilon the denominator carries.
linear = LinearAttention()
phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
scores = (phi_q @ phi_k.transpose(-2, -1)).tril()                   # (B, H, T, T), causal
quadratic = (scores @ v) / scores.sum(-1, keepdim=True)
print("linear attention against its quadratic form:",
      f"{(linear(q, k, v, is_causal=True) - quadratic).abs().max().item():.1e}")

# %%
# Cost against T
# --------------
# Forward and backward of causal attention, one head batch, float32. Dense attention's time
# grows with T^2; the patterns' with T (each query sees a fixed number of keys).
def step_time(attend, T, repeats=2):
    q, k, v = (tg.randn(1, 4, T, 32, requires_grad=True) for _ in range(3))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        attend(q, k, v).sum().backward()
        best = min(best, time.perf_counter() - start)
    return best * 1000


lengths = [256, 512, 1024, 2048]
def dense_attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5       # the whole (T, T) matrix
    return scores.masked_fill(~tg.ones(q.shape[-2], q.shape[-2], dtype=tg.bool).tril(),
                              float("-inf")).softmax(-1) @ v


timed = {"dense (whole matrix)": dense_attention,
         "sliding window (64)": lambda q, k, v: SlidingWindow(64)(q, k, v, is_causal=True),
         "linear": lambda q, k, v: LinearAttention()(q, k, v, is_causal=True)}
plt.figure(figsize=(6, 3.5))
for name, attend in timed.items():
    ms = [step_time(attend, T) for T in lengths]
    plt.loglog(lengths, ms, "o-", label=name)
    print(f"{name:22s}", "  ".join(f"T={T}: {m:7.1f} ms" for T, m in zip(lengths, ms)))
plt.xlabel("T")
plt.ylabel("ms, forward + backward")
plt.legend()
plt.title("cost against T (log-log: slope 2 is quadratic)")
plt.tight_layout()
plt.show()

# %%
# Quality
# -------
# The same small GPT, from the same weights, on the same batches of Python source, with each
# pattern at a 256-character context, for 60 steps. ``GPTConfig(attention=...)`` takes a
# pattern's name or object. Sixty steps rank nothing reliably; what they show is that each
# pattern learns, and that the window patterns lose little here, because most of what predicts
# the next character of code is nearby. ``examples/long_context.py`` runs the longer
# comparison at 1,024 characters.
import inspect  # noqa: E402
import json  # noqa: E402

text = inspect.getsource(json.decoder) + inspect.getsource(json.encoder)
tok = CharTokenizer.from_text(text)
data = tg.tensor(tok.encode(text))
context, steps = 256, 60
windows = tg.randint(0, len(data) - context - 1, (steps, 4))    # the same batches for all
choices = {"dense": "dense", "sliding window": SlidingWindow(64, global_tokens=1),
           "strided": Strided(32), "linear": "linear"}
curves = {}
for name, attention in choices.items():
    tg.manual_seed(0)
    model = GPT(GPTConfig.mini(vocab_size=tok.vocab_size, block_size=context, n_layer=2,
                               n_embd=64, d_ff=256, attention=attention))
    opt = tg.optim.AdamW(model.parameters(), lr=3e-3)
    curves[name] = []
    for starts in windows:
        rows = data[starts.unsqueeze(1) + tg.arange(context + 1)]
        _, loss = model(rows[:, :-1], targets=rows[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        curves[name].append(loss.item())
plt.figure(figsize=(6, 3.5))
for name, curve in curves.items():
    smooth = [sum(curve[max(0, i - 9):i + 1]) / len(curve[max(0, i - 9):i + 1])
              for i in range(len(curve))]
    plt.plot(smooth, label=f"{name}: {sum(curve[-10:]) / 10:.2f}")
plt.xlabel("step")
plt.ylabel("train_loss (10-step mean)")
plt.legend()
plt.tight_layout()
plt.show()
