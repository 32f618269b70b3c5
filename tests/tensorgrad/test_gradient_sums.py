"""How the backward walk sums the gradients that reach one tensor along several paths: slices
add into one buffer (the getitem primitive's `accumulate` rule, instead of a zero-filled array
per slice), later paths add in place into arrays the walk made itself, and none of it may touch
an array anyone else holds (a seed gradient, a gradient already handed on)."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.autograd.graph import PRIMITIVES

torch = pytest.importorskip("torch")


def _both(build, shape=(4, 6, 5), seed=0):
    """Gradients of sum(build(y) * probe) with y = 1.5 x - 1 a non-leaf, tensorgrad and torch."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    results = []
    for lib in (tg, torch):
        leaf = lib.tensor(x, requires_grad=True)
        pieces = build(leaf * 1.5 - 1.0)
        loss = sum((p * lib.tensor(np.random.default_rng(i).standard_normal(tuple(p.shape))))
                   .sum() for i, p in enumerate(pieces))
        loss.backward()
        results.append(np.asarray(leaf.grad.detach().numpy()))
    return results


CASES = {
    "q, k, v slices": lambda y: [y[:, :2], y[:, 2:4], y[:, 4:]],
    "overlapping slices": lambda y: [y[:, :4], y[:, 2:], y[1:3, 1]],
    "slices and the whole": lambda y: [y[:, :3], y * 2.0, y[:, 3:]],
    "the whole, then slices": lambda y: [y.exp(), y[:, 1:], y[2]],
    "strided": lambda y: [y[::2, ::3], y[1::2, :, 1:4]],
    "repeated integer indices": lambda y: [y[[0, 0, 3]], y[:, [1, 1, 1, 5]], y[:2]],
    "bool mask": lambda y: [y[y > 0], y[:, 0]],
    "slices of slices": lambda y: [y[:, :4][:, 1:3], y[:, :4][:, :1], y[:, 4:]],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_summed_gradients_match_torch(name):
    ours, theirs = _both(CASES[name])
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_slices_of_a_non_leaf_are_summed_without_their_vjp(monkeypatch):
    """The shortcut is taken (no zero-filled array per slice) for a non-leaf's slices; a leaf's
    own slices still go through the VJP, which hands the leaf a fresh array."""
    getitem = PRIMITIVES["getitem"]
    calls = []
    rule = getitem.vjp
    monkeypatch.setattr(getitem, "vjp", lambda ctx, g: calls.append(1) or rule(ctx, g))
    x = tg.randn(3, 6, requires_grad=True)
    y = x * 2.0
    (y[:, :2].sum() + y[:, 2:].sum() * 3.0).backward()
    assert calls == []
    np.testing.assert_allclose(x.grad.numpy(), np.repeat([[2.0] * 2 + [6.0] * 4], 3, axis=0))
    (x[:, :2].sum() + x[:, 2:].sum()).backward()
    assert len(calls) == 2


def test_the_seed_gradient_and_handed_on_gradients_are_left_alone():
    x = tg.randn(4, 3, requires_grad=True)
    y = x * 1.0
    seed_y, seed_slice = tg.ones(4, 3), tg.full((2, 3), 5.0)
    (gx,) = tg.grad([y, y[:2]], [x], [seed_y, seed_slice])  # the seed arrives, then the slice
    np.testing.assert_array_equal(seed_y.numpy(), np.ones((4, 3)))
    np.testing.assert_array_equal(gx.numpy(), np.array([[6.0]] * 2 + [[1.0]] * 2) * np.ones(3))
    # y's summed buffer goes on to both leaves of a + b: each .grad is its own array
    a, b = tg.randn(4, 3, requires_grad=True), tg.randn(4, 3, requires_grad=True)
    y = a + b
    (y[:2].sum() + y[1:].sum()).backward()
    a.grad.data[...] = 0.0
    np.testing.assert_array_equal(b.grad.numpy(), np.array([[1.0], [2.0], [1.0], [1.0]])
                                  * np.ones(3))


def test_retain_graph_hooks_and_grad_see_one_sum():
    x = tg.randn(5, 4, requires_grad=True)
    y = x * 3.0
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    loss = y[:2].sum() + y[1:].sum() * 2.0 + (y * y).sum()
    slices = np.array([[1.0], [3.0], [2.0], [2.0], [2.0]])  # rows in y[:2], in y[1:] twice
    expected = slices * np.ones((5, 4)) + 2 * y.detach().numpy()
    loss.backward(retain_graph=True)
    loss.backward()
    assert len(seen) == 2
    for g in seen:
        np.testing.assert_allclose(g, expected, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 2 * 3.0 * expected, rtol=1e-6)
    y = x * 3.0  # a fresh graph: the last backward freed the first
    (gy,) = tg.grad(y[:3].sum() + y[2:].sum(), [y])
    np.testing.assert_array_equal(gy.numpy(), np.array([[1.0]] * 2 + [[2.0]] + [[1.0]] * 2)
                                  * np.ones((5, 4)))


def test_second_order_through_slices_is_unchanged():
    """Under create_graph the VJP runs (its ops are recorded), so gradients of gradients hold."""
    x = tg.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
    y = x * x
    (g,) = tg.grad((y[:, :2] ** 2).sum() + y[:, 1:].sum(), [x], create_graph=True)
    g.sum().backward()
    xs = x.detach().numpy()
    # g = 4 x^3 on the first two columns plus 2 x on the last three; its own derivative:
    second = 12 * xs ** 2 * (np.arange(4) < 2) + 2 * (np.arange(4) >= 1)
    np.testing.assert_allclose(x.grad.numpy(), second, rtol=1e-12)
