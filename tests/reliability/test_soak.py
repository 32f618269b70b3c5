"""Long runs that must not drift: a 1,000-step training soak with flat memory, and a
100,000-op chain that back-propagates (and is freed) without recursion."""
import math
import sys
import weakref

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.models.gpt import GPT, GPTConfig
from tensorgrad.nn import optim

WARMUP_STEPS = 100  # allocator pools, Numba caches and optimizer state settle by then
STEPS = 1000
RSS_GROWTH_MB = 4.0  # after warm-up (0.5 MB measured here); leaking 5 KB a step fails it


def rss_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS line in /proc/self/status")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_training_soak_keeps_memory_flat():
    config = GPTConfig.tiny()
    model = GPT(config)
    opt = optim.AdamW(model.parameters(), lr=3e-3)
    B, T = 8, config.block_size
    # a learnable stream: each sequence counts up from a random start, mod the vocabulary
    starts = np.random.default_rng(0).integers(0, config.vocab_size, (STEPS, B, 1))
    data = tg.tensor((starts + np.arange(T + 1)) % config.vocab_size)  # (STEPS, B, T + 1)

    rss, losses, graphs = [], [], []
    for step in range(STEPS):
        batch = data[step]
        _, loss = model(batch[:, :-1], targets=batch[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        graphs.append(weakref.ref(loss._node))
        del loss
        rss.append(rss_mb())

    alive = sum(ref() is not None for ref in graphs)
    assert alive == 0, f"{alive} of {STEPS} steps' graphs are still alive after their step"
    settled = rss[WARMUP_STEPS]
    growth = max(rss[WARMUP_STEPS:]) - settled
    assert growth < RSS_GROWTH_MB, (
        f"RSS grew {growth:.1f} MB between step {WARMUP_STEPS} ({settled:.1f} MB) and step "
        f"{STEPS} (max {max(rss):.1f} MB); more than {RSS_GROWTH_MB} MB means something "
        "accumulates per step")
    first, last = sum(losses[:50]) / 50, sum(losses[-50:]) / 50
    assert last < 0.5 * first, f"the soak did not train: loss {first:.3f} -> {last:.3f}"


def _recursion_limit_near_here(room):
    """A recursion limit `room` frames above the current depth."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth + room


CHAIN_OPS = 100_000


def test_a_100000_op_chain_backpropagates_without_recursion():
    x0 = [0.3, -0.7, 1.1]
    x = tg.tensor(x0, dtype=tg.float64, requires_grad=True)
    y = x
    for _ in range(CHAIN_OPS // 2):  # alternating sin and a scale: 100,000 recorded ops
        y = y.sin() * 1.00001
    # the same chain on floats, with the chain rule by hand
    want_value, want_grad = list(x0), [1.0] * 3
    for _ in range(CHAIN_OPS // 2):
        want_grad = [g * math.cos(v) * 1.00001 for g, v in zip(want_grad, want_value)]
        want_value = [math.sin(v) * 1.00001 for v in want_value]

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(_recursion_limit_near_here(200))  # a recursive walk would need 100,000
    try:
        y.sum().backward()
        del y  # freeing the released chain must not recurse either
    finally:
        sys.setrecursionlimit(old)
    assert x.grad.tolist() == pytest.approx(want_grad, rel=1e-9)


def test_dropping_an_unused_100000_op_graph_does_not_recurse():
    x = tg.tensor([0.5], dtype=tg.float64, requires_grad=True)
    y = x
    for _ in range(CHAIN_OPS):
        y = y * 1.0
    node = weakref.ref(y._node)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(_recursion_limit_near_here(200))
    try:
        del y  # the whole graph, saved tensors and all, goes at once
    finally:
        sys.setrecursionlimit(old)
    assert node() is None
