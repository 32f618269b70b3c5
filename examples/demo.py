"""A two-layer network written with raw tensors, trained on two interleaving half-moons.

No modules, no optimizer classes: parameters are plain tensors with requires_grad=True, the
update is written out under no_grad. This is everything tensorgrad.nn builds on. Writes into
--out (out/demo): curves.png (training loss and test accuracy; needs matplotlib) and
demo.safetensors (the four parameter tensors, reloaded with tg.load and scored again).

    python examples/demo.py
"""
import argparse
import math
import os

import tensorgrad as tg
from common import HelpFormatter, Progress, plot_curves

# --- configuration -----------------------------------------------------------------------

parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
parser.add_argument("--steps", type=int, default=300, help="gradient steps")
parser.add_argument("--seed", type=int, default=0, help="random seed: data and weights")
parser.add_argument("--quick", action="store_true", help="100 steps: checks that it learns")
parser.add_argument("--out", default=os.path.join("out", "demo"), help="folder for what it writes")
args = parser.parse_args()

SEED = args.seed
N_POINTS = 1000          # per moon
NOISE = 0.15
HIDDEN = 32
STEPS = 100 if args.quick else args.steps
LEARNING_RATE = 0.5
BATCH = 256
EVAL_EVERY = 25

tg.manual_seed(SEED)


# --- data: two half-moons, generated (no download) ------------------------------------------
def two_moons(n, noise):
    """Points on two interleaving half circles; label 0 for the upper, 1 for the lower."""
    angle = tg.rand(n) * math.pi
    upper = tg.stack([angle.cos(), angle.sin()], dim=1)
    lower = tg.stack([1.0 - angle.cos(), 0.5 - angle.sin()], dim=1)
    points = tg.cat([upper, lower]) + noise * tg.randn(2 * n, 2)
    labels = tg.cat([tg.zeros(n, dtype=tg.int64), tg.ones(n, dtype=tg.int64)])
    order = tg.randperm(2 * n)
    return points[order], labels[order]


x_train, y_train = two_moons(N_POINTS, NOISE)
x_test, y_test = two_moons(N_POINTS // 2, NOISE)

# --- model: 2 -> HIDDEN -> 2, tanh, written with raw tensors -----------------------------------
w1 = (tg.randn(2, HIDDEN) * (1 / math.sqrt(2))).requires_grad_()
b1 = tg.zeros(HIDDEN, requires_grad=True)
w2 = (tg.randn(HIDDEN, 2) * (1 / math.sqrt(HIDDEN))).requires_grad_()
b2 = tg.zeros(2, requires_grad=True)
params = [w1, b1, w2, b2]


def model(x, w1, b1, w2, b2):
    hidden = (x @ w1 + b1).tanh()       # (N, HIDDEN)
    return hidden @ w2 + b2             # (N, 2) logits


def accuracy(x, y, weights=params):
    with tg.no_grad():
        return (model(x, *weights).argmax(dim=1) == y).float().mean().item()


# --- training loop: minibatch SGD ------------------------------------------------------------
losses, val_steps, val_accs = [], [], []
progress = Progress(0, STEPS)
for step in range(1, STEPS + 1):
    batch = tg.randint(0, x_train.shape[0], (BATCH,))
    loss = tg.cross_entropy(model(x_train[batch], *params), y_train[batch])
    for p in params:
        p.grad = None
    loss.backward()
    with tg.no_grad():
        for p in params:
            p -= LEARNING_RATE * p.grad
    losses.append(loss.item())
    if step % EVAL_EVERY == 0 or step == STEPS:
        val_steps.append(step)
        val_accs.append(accuracy(x_test, y_test))
    progress.update(step, loss=losses[-1], val_acc=val_accs[-1] if val_accs else None)
progress.close()

# --- results: the curve, the checkpoint, reloaded and scored again ----------------------------
os.makedirs(args.out, exist_ok=True)
plot_curves(os.path.join(args.out, "curves.png"), "two moons, raw-tensor MLP", "step",
            ("loss", {"loss": (range(1, STEPS + 1), losses)}),
            ("accuracy", {"val_acc": (val_steps, val_accs)}))
path = os.path.join(args.out, "demo.safetensors")
tg.save(dict(zip(["w1", "b1", "w2", "b2"], params)), path)
reloaded = tg.load(path)
print(f"checkpoint: {path}")
test_acc = accuracy(x_test, y_test, [reloaded[k] for k in ("w1", "b1", "w2", "b2")])
print(f"test accuracy: {test_acc:.3f}")
