"""
GPT-2: 124,439,808 parameters, and the residual stream
======================================================

First the parameter count of GPT-2 small, worked out by hand from its configuration and checked
against the model. Then a GPT-mini trained for a minute on Python source, and what happens to a
prompt inside it: the residual stream after each block, read through the model's own output
head (the "logit lens").
"""
import inspect
import json
import textwrap

import matplotlib.pyplot as plt

import tensorgrad as tg
from tensorgrad.models import GPT, CharTokenizer, GPTConfig

# %%
# Counting GPT-2
# --------------
# GPT-2 small: a vocabulary of 50,257 byte-level BPE tokens, 1,024 positions, 12 blocks of width
# 768 with 12 heads and a feed-forward layer four times as wide. The output head reuses the
# token embedding (weight tying), so it adds nothing.
c = GPTConfig.gpt2()
d, V, T, L = c.n_embd, c.vocab_size, c.block_size, c.n_layer
embeddings = V * d + T * d                       # token and position tables
attention = d * 3 * d + 3 * d + d * d + d        # qkv projection + output projection, with biases
feed_forward = d * 4 * d + 4 * d + 4 * d * d + d
norms = 2 * 2 * d                                # two LayerNorms, weight and bias
per_block = attention + feed_forward + norms
total = embeddings + L * per_block + 2 * d       # + the final LayerNorm
print(f"embeddings {embeddings:>12,}\nper block  {per_block:>12,}  x {L}\n"
      f"final norm {2 * d:>12,}\ntotal      {total:>12,}")

model = GPT(c)
assert model.num_parameters() == total == 124_439_808
print(model.summary())
del model

# %%
# Where they go: almost a third of GPT-2 small is its token and position tables; in the larger
# sizes the blocks dominate, since they grow with the square of the width, the tables linearly.
for name in ("gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"):
    cfg = GPTConfig.preset(name)
    table = cfg.vocab_size * cfg.n_embd + cfg.block_size * cfg.n_embd
    blocks = cfg.n_layer * (12 * cfg.n_embd ** 2 + 13 * cfg.n_embd)
    print(f"{name:12s} {table + blocks + 2 * cfg.n_embd:>14,}  embeddings "
          f"{table / (table + blocks):5.1%}")

# %%
# A GPT-mini to look inside
# -------------------------
# Two blocks of width 64 on characters of Python source from the standard library, trained for
# 300 steps of 16 windows of 64 characters.
tg.manual_seed(0)
modules = (json.decoder, json.encoder, textwrap, inspect)
text = "\n".join(inspect.getsource(m) for m in modules)
tok = CharTokenizer.from_text(text)
data = tg.tensor(tok.encode(text))
split = int(0.9 * len(data))
config = GPTConfig.mini(vocab_size=tok.vocab_size, block_size=64, n_layer=2, n_embd=64,
                        n_head=4, d_ff=256)
model = GPT(config)
print(f"{model.num_parameters():,} parameters, {len(text):,} characters")


def batch(start, stop, size=16):
    i = tg.randint(start, stop - config.block_size - 1, (size,))
    rows = i.unsqueeze(1) + tg.arange(config.block_size + 1)   # (B, T + 1)
    w = data[rows]
    return w[:, :-1], w[:, 1:]


opt = tg.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
curve = []
for _ in range(300):
    x, y = batch(0, split)
    _, loss = model(x, targets=y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    curve.append(loss.item())
model.eval()
with tg.no_grad():
    val_loss = sum(model(*batch(split, len(data)))[1].item() for _ in range(4)) / 4
print(f"train_loss {sum(curve[-20:]) / 20:.3f}  val_loss {val_loss:.3f} nats/char "
      f"(uniform guessing: {tg.tensor(float(tok.vocab_size)).log().item():.2f})")
plt.figure(figsize=(6, 2.5))
plt.plot(curve)
plt.xlabel("step")
plt.ylabel("train_loss")
plt.tight_layout()
plt.show()

# %%
# The trained model's graph for one batch, in the explorer: open a block (``blocks.0``), hover
# an op for its shapes and value statistics, and switch to the backward view.
x, y = batch(split, len(data), size=2)
tg.viz.explore(model(x, targets=y)[1], model, path="../generated/explore/gpt_mini.html")

# %%
# .. raw:: html
#
#    <iframe src="../../gpt_mini.html" width="100%" height="520"></iframe>

# %%
# The residual stream
# -------------------
# Each block reads the stream, computes attention and a feed-forward layer, and *adds* their
# results back: ``x = x + attn(ln(x)); x = x + ffn(ln(x))``. Forward hooks on the blocks record
# the stream after each one; passing it through the final LayerNorm and the tied head asks
# what the model would predict if it stopped there.
prompt = "    def __init__(self"
ids = tg.tensor([tok.encode(prompt)])
stream = []
handles = [b.register_forward_hook(lambda mod, inp, out: stream.append(out))
           for b in model.blocks]
with tg.no_grad():
    logits, _ = model(ids)
    embedded = model.wte(ids) + model.wpe(tg.arange(ids.shape[1]))
for h in handles:
    h.remove()
layers = [embedded] + stream                          # (1, T, C) each
names = ["embeddings"] + [f"after block {i}" for i in range(len(stream))]

with tg.no_grad():
    for name, x in zip(names, layers):
        lens = model.ln_f(x) @ model.wte.weight.T        # (1, T, V)
        top = lens[0, -1].softmax(-1).topk(3)
        guesses = ", ".join(f"{tok.decode([i])!r} {p:.2f}"
                            for p, i in zip(top.values.tolist(), top.indices.tolist()))
        print(f"{name:15s} |x| = {x[0, -1].norm().item():6.2f}   next after {prompt[-6:]!r}: "
              f"{guesses}")

# %%
# The stream's size at each position, layer by layer: each block adds to it, none replaces it.
norms = tg.stack([x[0].norm(dim=-1) for x in layers])    # (layers, T)
plt.figure(figsize=(8, 2.8))
plt.imshow(norms.numpy(), aspect="auto", cmap="magma")
plt.yticks(range(len(names)), names)
plt.xticks(range(len(prompt)), list(prompt))
plt.colorbar(label="|x|")
plt.title("residual stream norm")
plt.tight_layout()
plt.show()

# %%
# And what the first block's heads look at on the same prompt: ``attention_weights`` gives the
# probabilities a forward would use, for the block's normalised input.
block = model.blocks[0]
with tg.no_grad():
    weights = block.self_attn.attention_weights(block.attn_norm(embedded), is_causal=True)[0]
fig, axes = plt.subplots(1, weights.shape[0], figsize=(12, 3))
for h, ax in enumerate(axes):
    ax.imshow(weights[h].numpy(), cmap="viridis")
    ax.set_title(f"head {h}")
    ax.set_xticks(range(len(prompt)), list(prompt), fontsize=6)
    ax.set_yticks([])
plt.tight_layout()
plt.show()
