"""
LoRA: rank against quality against trainable parameters
=======================================================

Fine-tuning every weight of a large model needs a copy of the model per task, and Adam's two
moments for each weight. LoRA (Hu et al., 2021) freezes each chosen weight W and learns a
low-rank update: W + (alpha / r) B A, with A (r, d_in) and B (d_out, r). This tutorial trains
a small character GPT on Python source, then fine-tunes it on English prose in full and with
LoRA at ranks 1, 4 and 16, and measures what each costs and what it learns and forgets.
"""
import inspect

import matplotlib.pyplot as plt

import tensorgrad as tg
from tensorgrad.models import GPT, CharTokenizer, GPTConfig, LoraConfig, get_peft_model

tg.manual_seed(0)

# %%
# Two texts
# ---------
# The "old" text is Python source code, the "new" one English: the docstrings of the same
# standard-library modules. Both use one character vocabulary.
import argparse, collections, json, logging, textwrap  # noqa: E401,E402

modules = (argparse, collections, json, logging, textwrap)
code = "\n".join(inspect.getsource(m) for m in modules)
prose = "\n\n".join(inspect.getdoc(obj) for m in modules for _, obj in inspect.getmembers(m)
                    if callable(obj) and inspect.getdoc(obj) and
                    getattr(obj, "__module__", "") == m.__name__)
tok = CharTokenizer.from_text(code + prose)
old, new = tg.tensor(tok.encode(code)), tg.tensor(tok.encode(prose))
print(f"old text {len(old):,} characters of code, new text {len(new):,} characters of prose")
BLOCK = 64


def windows(data, n, val=False):
    split = int(0.9 * len(data))
    lo, hi = (split, len(data)) if val else (0, split)
    starts = tg.randint(lo, hi - BLOCK - 1, (n,))
    rows = data[starts.unsqueeze(1) + tg.arange(BLOCK + 1)]
    return rows[:, :-1], rows[:, 1:]


def train(model, data, steps, lr):
    opt = tg.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    for _ in range(steps):
        _, loss = model(*windows(data, 16))
        opt.zero_grad()
        loss.backward()
        opt.step()


VAL = {"old": windows(old, 128, val=True), "new": windows(new, 128, val=True)}  # fixed


def val_loss(model, text):
    x, y = VAL[text]
    with tg.no_grad():
        return sum(model(x[i:i + 32], y[i:i + 32])[1].item() for i in range(0, 128, 32)) / 4


# %%
# The base model
# --------------
config = GPTConfig.mini(vocab_size=tok.vocab_size, block_size=BLOCK, n_layer=2, n_embd=64,
                        n_head=4, d_ff=256)
base = GPT(config)
train(base, old, 300, 3e-3)
base_state = {k: v.detach().clone() for k, v in base.state_dict().items()}
print(f"base: {base.num_parameters():,} parameters; val_loss old {val_loss(base, 'old'):.3f}, "
      f"new {val_loss(base, 'new'):.3f}")

# %%
# Fine-tuning
# -----------
# Full fine-tuning trains every parameter. LoRA wraps every Linear (``"all-linear"``: the
# attention projections and the feed-forward layers) with an adapter whose B starts at zero, so
# the model starts exactly where the base is. alpha is fixed at 16, so a larger rank starts with
# a smaller scale per direction. Each run takes 150 steps on the new text, from the same base.
runs = {}
for name, rank in [("full", None), ("r=1", 1), ("r=4", 4), ("r=16", 16)]:
    tg.manual_seed(1)
    model = GPT(config)
    model.load_state_dict(base_state)
    if rank is not None:
        model = get_peft_model(model, LoraConfig(r=rank, lora_alpha=16,
                                                 target_modules="all-linear"))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    train(model, new, 150, 1e-3 if rank is None else 5e-3)
    runs[name] = (trainable, val_loss(model, "new"), val_loss(model, "old"))
    print(f"{name:5s} trainable {trainable:>8,} ({trainable / base.num_parameters():6.2%})  "
          f"val_loss new {runs[name][1]:.3f}  old {runs[name][2]:.3f}")

# %%
# What it shows
# -------------
# On the new text the loss falls with the rank, towards full fine-tuning's, while the number of
# trainable parameters grows linearly with r (2% to 30% here: in a model only 64 wide a rank-16
# update is not small; GPT-2 with r=8 on its attention trains 0.24% of 124M parameters). The
# low-rank update also moves the model less, so it forgets less of the old text (right panel):
# full fine-tuning learns the new text best and forgets the most. A LoRA checkpoint holds only
# the adapter.
names = list(runs)
fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.4))
a.scatter([runs[n][0] for n in names], [runs[n][1] for n in names])
for n in names:
    a.annotate(n, (runs[n][0], runs[n][1]), textcoords="offset points", xytext=(5, 5))
a.set_xscale("log")
a.set_xlabel("trainable parameters")
a.set_ylabel("val_loss on the new text")
b.bar(names, [runs[n][2] for n in names], color="tab:orange")
b.axhline(val_loss(base, "old"), color="grey", ls=":", label="base model")
b.set_ylabel("val_loss on the old text")
b.set_ylim(bottom=min(runs[n][2] for n in names) * 0.9)
b.legend()
plt.tight_layout()
plt.show()
