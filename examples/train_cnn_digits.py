"""Handwritten digits with a small CNN: conv-pool-conv-pool-linear in tensorgrad.nn.

scikit-learn's bundled 8x8 digits (1,797 images, no download) as (N, 1, 8, 8) images; two
3x3 convolutions with batch norm and ReLU, each followed by a 2x2 max pool (8x8 -> 4x4 -> 2x2),
then one linear layer onto the 10 classes. AdamW with a short warmup and a cosine decay of the
learning rate. Reaches about 99% test accuracy in well under a minute on a laptop CPU, and
writes into --out (out/cnn_digits): cnn.safetensors (the model, reloaded for the last score)
and curves.png (training loss and test accuracy per epoch; needs matplotlib).

    python examples/train_cnn_digits.py                 # the full run
    python examples/train_cnn_digits.py --quick         # 2 epochs: checks that it learns
"""
import argparse
import os
import time

from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import optim
from common import HelpFormatter, Progress, plot_curves

tg.backend.tune_process()  # opt-in: malloc and thread settings for speed (backend/process.py)

# --- configuration -------------------------------------------------------------------------------
SEED = 0
CHANNELS = (16, 32)     # feature maps after the first and the second convolution
EPOCHS = 10
BATCH = 32
LR = 3e-3
WEIGHT_DECAY = 1e-4     # light: the convolutions have few weights to begin with
WARMUP_STEPS = 20

parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
parser.add_argument("--epochs", type=int, default=EPOCHS, help="passes over the training set")
parser.add_argument("--max-steps", type=int, default=None, help="stop after this many steps")
parser.add_argument("--seed", type=int, default=SEED,
                    help="weights and order; the train/test split stays the same")
parser.add_argument("--out", default=os.path.join("out", "cnn_digits"),
                    help="folder for the checkpoint and the curves")
parser.add_argument("--quick", action="store_true", help="2 epochs: checks that it learns")
args = parser.parse_args()
if args.quick:
    args.epochs = 2
tg.manual_seed(args.seed)

# --- data: 8x8 grey levels 0..16, scaled to [0, 1], one channel ------------------------------
digits = load_digits()
x_train, x_test, y_train, y_test = train_test_split(
    digits.images / 16.0, digits.target, test_size=0.25, random_state=SEED,
    stratify=digits.target)
x_train = tg.tensor(x_train, dtype=tg.float32).unsqueeze(1)  # (N, 1, 8, 8)
x_test = tg.tensor(x_test, dtype=tg.float32).unsqueeze(1)
y_train, y_test = tg.tensor(y_train, dtype=tg.int64), tg.tensor(y_test, dtype=tg.int64)
print(f"data: {x_train.shape[0]} train / {x_test.shape[0]} test images of shape "
      f"{x_train.shape[1:]}, 10 classes")

# --- model: (N, 1, 8, 8) -> (N, 16, 4, 4) -> (N, 32, 2, 2) -> (N, 10) --------------------------
def make_model():
    c1, c2 = CHANNELS
    return nn.Sequential(
        nn.Conv2d(1, c1, 3, padding=1, bias=False), nn.BatchNorm2d(c1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, 3, padding=1, bias=False), nn.BatchNorm2d(c2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(c2 * 2 * 2, 10),
    )  # no conv bias: the batch norm right after it would subtract it again


model = make_model()
print(model.summary())

steps_per_epoch = -(-x_train.shape[0] // BATCH)
total_steps = args.epochs * steps_per_epoch
if args.max_steps is not None:
    total_steps = min(total_steps, args.max_steps)
optimizer = optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
warmup = min(WARMUP_STEPS, total_steps - 1)
scheduler = optim.lr_scheduler.WarmupCosineLR(optimizer, warmup, total_steps)


def accuracy(x, y):
    model.eval()  # batch norm switches to its running statistics
    with tg.no_grad():
        correct = (model(x).argmax(dim=1) == y).float().mean().item()
    model.train()
    return correct


# --- training loop -------------------------------------------------------------------------------
start = time.perf_counter()
step = 0
history = {"epoch": [], "loss": [], "test_acc": []}
progress = Progress(0, total_steps)
while step < total_steps:
    order = tg.randperm(x_train.shape[0])
    epoch_loss, batches = 0.0, 0
    for i in range(0, x_train.shape[0], BATCH):
        batch = order[i:i + BATCH]
        loss = nn.functional.cross_entropy(model(x_train[batch]), y_train[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        step += 1
        epoch_loss, batches = epoch_loss + loss.item(), batches + 1
        progress.update(step, loss=loss.item(),
                        test_acc=history["test_acc"][-1] if history["test_acc"] else None)
        if step == total_steps:
            break
    history["epoch"].append(step / steps_per_epoch)
    history["loss"].append(epoch_loss / batches)
    history["test_acc"].append(accuracy(x_test, y_test))
progress.close()

# --- results -------------------------------------------------------------------------------------
elapsed = time.perf_counter() - start
print(f"trained {step} steps in {elapsed:.1f} s; train acc {accuracy(x_train, y_train):.3f}, "
      f"test acc {accuracy(x_test, y_test):.4f}")
os.makedirs(args.out, exist_ok=True)
plot_curves(os.path.join(args.out, "curves.png"), "CNN on 8x8 digits", "epoch",
            ("cross-entropy", {"training loss": (history["epoch"], history["loss"])}),
            ("accuracy", {"test accuracy": (history["epoch"], history["test_acc"])}))
path = os.path.join(args.out, "cnn.safetensors")
nn.save({"model": model.state_dict(), "step": step,
         "config": {"channels": list(CHANNELS), "seed": args.seed}}, path)
model = make_model()  # a fresh model: the last score comes from the file
model.load_state_dict(nn.load(path)["model"])
print(f"checkpoint: {path}; reloaded test acc {accuracy(x_test, y_test):.4f}")
