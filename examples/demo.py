"""A two-layer network written with raw tensors, trained on two interleaving half-moons.

No modules, no optimizer classes: parameters are plain tensors with requires_grad=True, the
update is written out under no_grad. This is everything tensorgrad.nn builds on.

    python examples/demo.py
"""
import argparse
import math

import tensorgrad as tg
from common import HelpFormatter

# --- configuration -----------------------------------------------------------------------

parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
parser.add_argument("--steps", type=int, default=300, help="gradient steps")
parser.add_argument("--seed", type=int, default=0, help="random seed: data and weights")
parser.add_argument("--quick", action="store_true", help="100 steps: checks that it learns")
args = parser.parse_args()

SEED = args.seed
N_POINTS = 1000          # per moon
NOISE = 0.15
HIDDEN = 32
STEPS = 100 if args.quick else args.steps
LEARNING_RATE = 0.5
BATCH = 256

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


def model(x):
    hidden = (x @ w1 + b1).tanh()       # (N, HIDDEN)
    return hidden @ w2 + b2             # (N, 2) logits


def accuracy(x, y):
    with tg.no_grad():
        return (model(x).argmax(dim=1) == y).float().mean().item()


# --- training loop: minibatch SGD ------------------------------------------------------------
for step in range(1, STEPS + 1):
    batch = tg.randint(0, x_train.shape[0], (BATCH,))
    loss = tg.cross_entropy(model(x_train[batch]), y_train[batch])
    for p in params:
        p.grad = None
    loss.backward()
    with tg.no_grad():
        for p in params:
            p -= LEARNING_RATE * p.grad
    if step % 50 == 0 or step == 1:
        print(f"step {step:4d}  loss {loss.item():.4f}  train acc {accuracy(x_train, y_train):.3f}")

# --- results -------------------------------------------------------------------------------
print(f"test accuracy: {accuracy(x_test, y_test):.3f}")
