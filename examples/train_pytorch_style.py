"""Handwritten digits, written the way a PyTorch user writes a training script.

A Dataset subclass, random_split into train/validation/test, DataLoaders (shuffled with a seeded
generator), an nn.Module with a forward, AdamW with a warmup-then-cosine LambdaLR, a train loop
and an eval loop under no_grad, the best epoch kept by validation accuracy and scored once on the
test split. The data is scikit-learn's bundled 8x8 digits (1,797 images, no download). Runs in a
few seconds on a laptop CPU; the same run gives the same numbers every time. Writes into --out
(out/pytorch_style): best.safetensors (the best epoch's weights) and curves.png (losses and
validation accuracy per epoch; needs matplotlib).

    python examples/train_pytorch_style.py      # --epochs 3 --seed 1: a shorter or another run
"""
import argparse
import math
import os
import time

from sklearn.datasets import load_digits

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad import nn
from tensorgrad.nn import optim
from tensorgrad.utils.data import DataLoader, Dataset, random_split
from common import HelpFormatter, Progress, plot_curves

tg.backend.tune_process()  # opt-in: malloc and thread settings for speed (backend/process.py)

# --- configuration -------------------------------------------------------------------------------
parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
parser.add_argument("--epochs", type=int, default=15, help="passes over the training set")
parser.add_argument("--seed", type=int, default=0,
                    help="random seed: weights, data order, sampling")
parser.add_argument("--out", default=os.path.join("out", "pytorch_style"),
                    help="folder for the checkpoint and the curves")
parser.add_argument("--quick", action="store_true", help="2 epochs: checks that it learns")
args = parser.parse_args()

SEED = args.seed
EPOCHS = 2 if args.quick else args.epochs
SPLIT = [0.7, 0.15, 0.15]   # train / validation / test fractions
BATCH_SIZE = 64
HIDDEN = 128
DROPOUT = 0.1
LR = 3e-3
WEIGHT_DECAY = 0.01
WARMUP_STEPS = 20           # about one epoch: Adam's early steps are noisy at the full rate

tg.manual_seed(SEED)                          # model initialisation and dropout
generator = tg.Generator().manual_seed(SEED)  # the split and the shuffle order


# --- data ----------------------------------------------------------------------------------------
class Digits(Dataset):
    """scikit-learn's digits: sample i is (64 grey levels scaled to [0, 1], its label 0-9)."""

    def __init__(self):
        digits = load_digits()
        self.images = tg.tensor(digits.data / 16.0, dtype=tg.float32)  # (1797, 64)
        self.labels = digits.target.tolist()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]  # default_collate: (B, 64) floats, (B,) int64


train_set, val_set, test_set = random_split(Digits(), SPLIT, generator=generator)
train_loader = DataLoader(train_set, batch_size=BATCH_SIZE, shuffle=True, drop_last=True,
                          generator=generator)
val_loader = DataLoader(val_set, batch_size=256)
test_loader = DataLoader(test_set, batch_size=256)
print(f"data: {len(train_set)} train / {len(val_set)} validation / {len(test_set)} test images, "
      f"{len(train_loader)} batches of {BATCH_SIZE} per epoch")


# --- model ---------------------------------------------------------------------------------------
class MLP(nn.Module):
    """64 pixels -> GELU hidden layer, LayerNorm, dropout -> 10 class logits."""

    def __init__(self, hidden, dropout):
        super().__init__()
        self.fc1 = nn.Linear(64, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.drop = nn.Dropout(dropout)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        h = self.drop(self.norm(F.gelu(self.fc1(x))))  # (B, 64) -> (B, hidden)
        return self.fc2(h)                               # (B, 10)


model = MLP(HIDDEN, DROPOUT)
optimizer = optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
total_steps = EPOCHS * len(train_loader)


def warmup_cosine(step):
    """Multiplier of LR: linear warmup, then a cosine down to zero at the last step."""
    if step < WARMUP_STEPS:
        return (step + 1) / WARMUP_STEPS
    progress = (step - WARMUP_STEPS) / max(1, total_steps - WARMUP_STEPS)
    return 0.5 * (1 + math.cos(math.pi * progress))


scheduler = optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine)


def evaluate(loader):
    """(mean loss, accuracy) over a loader, in eval mode (no dropout) and without a graph."""
    model.eval()
    total_loss, correct, seen = 0.0, 0, 0
    with tg.no_grad():
        for images, labels in loader:
            logits = model(images)
            total_loss += F.cross_entropy(logits, labels, reduction="sum").item()
            correct += (logits.argmax(dim=1) == labels).sum().item()
            seen += labels.shape[0]
    model.train()
    return total_loss / seen, correct / seen


# --- training loop -------------------------------------------------------------------------------
start = time.perf_counter()
best_acc, best_epoch, best_state = -1.0, 0, None
history = {"train_loss": [], "val_loss": [], "val_acc": []}
progress = Progress(0, total_steps)
for epoch in range(1, EPOCHS + 1):
    model.train()
    train_loss = 0.0
    for images, labels in train_loader:
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        train_loss += loss.item()
        progress.update(scheduler.last_epoch, loss=loss.item(),
                        val_acc=history["val_acc"][-1] if history["val_acc"] else None)
    val_loss, val_acc = evaluate(val_loader)
    for key, value in zip(history, (train_loss / len(train_loader), val_loss, val_acc)):
        history[key].append(value)
    if val_acc > best_acc:  # keep a copy: state_dict() shares the live parameters' memory
        best_acc, best_epoch = val_acc, epoch
        best_state = {name: t.clone() for name, t in model.state_dict().items()}
    progress.write(f"epoch {epoch:2d}  loss {train_loss / len(train_loader):.4f}  "
                   f"val_loss {val_loss:.4f}  val_acc {val_acc:.3f}  "
                   f"lr {scheduler.get_last_lr()[0]:.2e}")
progress.close()
elapsed = time.perf_counter() - start

# --- results -------------------------------------------------------------------------------------
model.load_state_dict(best_state)
test_loss, test_acc = evaluate(test_loader)
print(f"trained {EPOCHS} epochs ({total_steps} steps) in {elapsed:.1f} s; best validation "
      f"accuracy {best_acc:.3f} at epoch {best_epoch}; test loss {test_loss:.4f}, "
      f"test accuracy {test_acc:.3f}")
os.makedirs(args.out, exist_ok=True)
nn.save(best_state, os.path.join(args.out, "best.safetensors"))
epochs = range(1, EPOCHS + 1)
plot_curves(os.path.join(args.out, "curves.png"), "an MLP on 8x8 digits, PyTorch style", "epoch",
            ("cross-entropy", {"training loss": (epochs, history["train_loss"]),
                               "val_loss": (epochs, history["val_loss"])}),
            ("accuracy", {"val_acc": (epochs, history["val_acc"])}))
