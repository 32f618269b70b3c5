"""A character-level language model (an LSTM, or a GRU with --cell gru) on text that ships with
Python (the source of the standard library's `textwrap` module), written for PyTorch: it runs
unchanged on PyTorch and on tensorgrad (`python -m tensorgrad.as_torch char_rnn.py`).

Embedding -> 2-layer LSTM -> linear head; Adam with gradient clipping (clip_grad_norm_); the
validation loss in nats per character; then a sample, drawn with torch.multinomial.

    python -m tensorgrad.as_torch examples/pytorch/char_rnn.py --steps 20
"""
import argparse
import math
import textwrap

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=600)
parser.add_argument("--cell", choices=["lstm", "gru"], default="lstm")
parser.add_argument("--hidden", type=int, default=128)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

torch.manual_seed(args.seed)
SEQ, BATCH, HIDDEN = 64, 32, args.hidden

# --- data: every character of textwrap.py, 90% to train, the rest to validate ---------------
with open(textwrap.__file__, encoding="utf-8") as f:
    text = f.read()
chars = sorted(set(text))
index = {c: i for i, c in enumerate(chars)}
data = torch.tensor([index[c] for c in text], dtype=torch.long)
split = int(0.9 * len(data))
train, val = data[:split], data[split:]


def batch(source):
    """BATCH windows of SEQ characters and the characters one step later."""
    starts = torch.randint(0, len(source) - SEQ - 1, (BATCH,))
    x = torch.stack([source[s:s + SEQ] for s in starts.tolist()])
    y = torch.stack([source[s + 1:s + SEQ + 1] for s in starts.tolist()])
    return x, y


# --- model ------------------------------------------------------------------------------------
class CharRNN(nn.Module):
    def __init__(self, vocab, hidden, cell):
        super().__init__()
        self.embed = nn.Embedding(vocab, 64)
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(64, hidden, num_layers=2, batch_first=True, dropout=0.1)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, state=None):
        out, state = self.rnn(self.embed(x), state)  # (B, T, hidden)
        return self.head(out), state


model = CharRNN(len(chars), HIDDEN, args.cell)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)


def validation_loss():
    """The mean loss over every character of the validation text, cut into windows of SEQ: the
    same characters on every run and framework (random windows would differ between them)."""
    model.eval()
    n = (len(val) - 1) // SEQ
    x, y = val[:n * SEQ].reshape(n, SEQ), val[1:n * SEQ + 1].reshape(n, SEQ)
    with torch.no_grad():
        loss = F.cross_entropy(model(x)[0].reshape(-1, len(chars)), y.reshape(-1)).item()
    model.train()
    return loss


# --- training ---------------------------------------------------------------------------------
print(f"{len(text)} characters, {len(chars)} distinct; uniform guess {math.log(len(chars)):.3f}")
for step in range(1, args.steps + 1):
    x, y = batch(train)
    logits, _ = model(x)
    loss = F.cross_entropy(logits.reshape(-1, len(chars)), y.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    if step % 100 == 0 or step == args.steps:
        print(f"step {step}: train loss {loss.item():.3f}, validation loss "
              f"{validation_loss():.3f}")

# --- sampling: one character at a time, carrying the recurrent state -------------------------
model.eval()
with torch.no_grad():
    x, state, out = torch.tensor([[index["d"]]]), None, ["d"]
    for _ in range(200):
        logits, state = model(x, state)
        probs = F.softmax(logits[0, -1] / 0.8, dim=-1)
        x = torch.multinomial(probs, 1).reshape(1, 1)
        out.append(chars[x.item()])
print("".join(out))
