"""End to end: an MLP learns scikit-learn's bundled digits (no download). How fast a step runs
is the benchmarks' business (benchmarks/, the mlp_step row), not a wall-clock assert here that a
loaded machine could fail."""
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import optim
from tensorgrad.nn.optim import lr_scheduler


def test_mlp_learns_digits_to_95_percent():
    datasets = pytest.importorskip("sklearn.datasets")
    digits = datasets.load_digits()
    x = tg.tensor(digits.data / 16.0, dtype=tg.float32)
    y = tg.tensor(digits.target, dtype=tg.int64)
    order = tg.randperm(x.shape[0])
    train, test = order[:1400], order[1400:]
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
    steps = 300
    scheduler = lr_scheduler.WarmupCosineLR(opt, warmup_steps=10, total_steps=steps)
    for _ in range(steps):
        batch = train[tg.randint(0, train.shape[0], (64,))]
        loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
        scheduler.step()
    with tg.no_grad():
        accuracy = (model(x[test]).argmax(dim=1) == y[test]).float().mean().item()
    assert accuracy >= 0.95, f"test accuracy {accuracy:.3f} after {steps} steps"
    assert all(p.dtype == tg.float32 for p in model.parameters())
