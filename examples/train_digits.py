"""Handwritten digits with an MLP: tensorgrad.nn end to end.

scikit-learn's bundled 8x8 digits (1,797 images, no download), a two-layer MLP, AdamW with
decoupled weight decay kept off biases and norms, linear warmup then cosine decay, gradient
clipping, and a checkpoint that resumes exactly. Runs in a few seconds on a laptop CPU, and
writes into --out (out/digits): digits.safetensors (model, optimizer, schedule and step, reloaded
for the last score) and curves.png (training loss and test accuracy per epoch; needs
matplotlib).

    python examples/train_digits.py
"""
import argparse
import os
import time

from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import optim
from tensorgrad.nn.optim import lr_scheduler
from common import HelpFormatter, Progress, plot_curves

tg.backend.tune_process()  # opt-in: malloc and thread settings for speed (backend/process.py)

# --- configuration -------------------------------------------------------------------------------

parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
parser.add_argument("--epochs", type=int, default=12, help="passes over the training set")
parser.add_argument("--seed", type=int, default=0, help="random seed: weights, split, order")
parser.add_argument("--out", default=os.path.join("out", "digits"), help="checkpoint folder")
parser.add_argument("--quick", action="store_true", help="3 epochs: checks that it learns")
args = parser.parse_args()

SEED = args.seed
HIDDEN = 128
DROPOUT = 0.1
EPOCHS = 3 if args.quick else args.epochs
BATCH = 64
LR = 3e-3
WEIGHT_DECAY = 0.05     # on the two weight matrices only
WARMUP_STEPS = 30
CLIP_NORM = 1.0
OUT_DIR = args.out

tg.manual_seed(SEED)

# --- data: 8x8 grey levels 0..16, scaled to [0, 1] -----------------------------------------------
digits = load_digits()
x_train, x_test, y_train, y_test = train_test_split(
    digits.data / 16.0, digits.target, test_size=0.25, random_state=SEED, stratify=digits.target)
x_train, x_test = tg.tensor(x_train, dtype=tg.float32), tg.tensor(x_test, dtype=tg.float32)
y_train, y_test = tg.tensor(y_train, dtype=tg.int64), tg.tensor(y_test, dtype=tg.int64)
print(f"data: {x_train.shape[0]} train / {x_test.shape[0]} test images of {x_train.shape[1]} "
      f"pixels, 10 classes")

# --- model ---------------------------------------------------------------------------------------
def make_model():
    return nn.Sequential(
        nn.Linear(64, HIDDEN), nn.GELU(), nn.LayerNorm(HIDDEN), nn.Dropout(DROPOUT),
        nn.Linear(HIDDEN, 10),
    )


model = make_model()
print(model.summary())

# Weight decay pulls weights toward zero; on biases and norm gains it only hurts.
decay = [p for p in model.parameters() if p.ndim == 2]
no_decay = [p for p in model.parameters() if p.ndim < 2]
optimizer = optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY},
                         {"params": no_decay, "weight_decay": 0.0}], lr=LR)
steps_per_epoch = -(-x_train.shape[0] // BATCH)
scheduler = lr_scheduler.WarmupCosineLR(optimizer, WARMUP_STEPS, EPOCHS * steps_per_epoch)


def accuracy(x, y):
    model.eval()
    with tg.no_grad():
        correct = (model(x).argmax(dim=1) == y).float().mean().item()
    model.train()
    return correct


# --- training loop -------------------------------------------------------------------------------
start = time.perf_counter()
step = 0
history = {"loss": [], "test_acc": []}
progress = Progress(0, EPOCHS * steps_per_epoch)
for _ in range(EPOCHS):
    order = tg.randperm(x_train.shape[0])
    total_loss = 0.0
    for i in range(0, x_train.shape[0], BATCH):
        batch = order[i:i + BATCH]
        loss = nn.functional.cross_entropy(model(x_train[batch]), y_train[batch])
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), CLIP_NORM)
        optimizer.step()
        scheduler.step()
        step += 1
        total_loss += loss.item()
        progress.update(step, loss=loss.item(),
                        test_acc=history["test_acc"][-1] if history["test_acc"] else None)
    history["loss"].append(total_loss / steps_per_epoch)
    history["test_acc"].append(accuracy(x_test, y_test))
progress.close()

# --- results -------------------------------------------------------------------------------------
elapsed = time.perf_counter() - start
print(f"trained {step} steps in {elapsed:.1f} s; train acc {accuracy(x_train, y_train):.3f}, "
      f"test acc {accuracy(x_test, y_test):.3f}")

os.makedirs(OUT_DIR, exist_ok=True)
epochs = range(1, EPOCHS + 1)
plot_curves(os.path.join(OUT_DIR, "curves.png"), "MLP on 8x8 digits", "epoch",
            ("cross-entropy", {"training loss": (epochs, history["loss"])}),
            ("accuracy", {"test accuracy": (epochs, history["test_acc"])}))
path = os.path.join(OUT_DIR, "digits.safetensors")
nn.save({"model": model.state_dict(), "optim": optimizer.state_dict(),
         "sched": scheduler.state_dict(), "step": step,
         "config": {"hidden": HIDDEN, "dropout": DROPOUT, "lr": LR, "seed": SEED}}, path)
model = make_model()  # a fresh model: everything below comes from the file
model.load_state_dict(nn.load(path)["model"])
print(f"checkpoint: {path} ({os.path.getsize(path) / 1024:.0f} KiB); reloaded test acc "
      f"{accuracy(x_test, y_test):.3f}")
