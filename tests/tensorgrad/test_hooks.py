"""Hooks against PyTorch (autograd/hooks.py): tensor hooks, retained gradients,
post-accumulate hooks, their handles and lifetimes, and detach_."""
import numpy as np
import pytest

import tensorgrad as tg

torch = pytest.importorskip("torch")


def both(fn):
    """Run `fn(lib)` with tensorgrad and with torch; return both results."""
    return fn(tg), fn(torch)


def same(a, b):
    np.testing.assert_allclose(np.asarray(a.detach()), b.detach().numpy(), rtol=1e-6)


def test_hooks_and_retained_grad_match_torch():
    def run(lib):
        seen = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(lambda g: seen.append(g.clone()))
        y = x * 2
        y.retain_grad()
        y.register_hook(lambda g: g * 10)  # a replacement, used by x's gradient and y.grad
        z = (y * y).sum() + y.sum()
        z.backward()
        return x.grad, y.grad, seen[0], y.retains_grad, x.retains_grad
    ours, theirs = both(run)
    for a, b in zip(ours[:3], theirs[:3]):
        same(a, b)
    assert ours[3:] == theirs[3:] == (True, False)


def test_leaf_hook_runs_once_on_the_gradient_summed_over_paths():
    def run(lib):
        calls = []
        a = lib.tensor([1.0, 3.0], requires_grad=True)
        a.register_hook(lambda g: calls.append(g.clone()))
        (a * a + a).sum().backward()
        return calls, a.grad
    (ours, g_ours), (theirs, g_theirs) = both(run)
    assert len(ours) == len(theirs) == 1
    same(ours[0], theirs[0])
    same(g_ours, g_theirs)


def test_post_accumulate_grad_hook_matches_torch():
    def run(lib):
        seen = []
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.clone()))
        (w * w).sum().backward()
        (w * 3).sum().backward()  # the hook sees .grad after accumulation: 2w + 3
        handle.remove()
        w.sum().backward()
        lib.autograd.grad((w * 5).sum(), w)  # fills no .grad, so no call either
        return seen
    ours, theirs = both(run)
    assert len(ours) == len(theirs) == 2
    for a, b in zip(ours, theirs):
        same(a, b)
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="non-leaf"):
            (lib.ones(2, requires_grad=True) * 2).register_post_accumulate_grad_hook(print)


def test_retained_grad_accumulates_and_is_a_copy():
    def run(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        y = a + 0  # add's VJP hands its gradient on unchanged: y.grad must not share a's
        y.retain_grad()
        s = y.sum()
        s.backward(retain_graph=True)
        s.backward()
        return a.grad, y.grad
    ours, theirs = both(run)
    same(ours[0], theirs[0])
    same(ours[1], theirs[1])
    with tg.no_grad():
        ours[0].add_(100.0)
    assert ours[1].tolist() == [2.0, 2.0]


def test_grad_runs_the_hooks_of_its_inputs():
    def run(lib):
        b = lib.tensor([1.0, 1.0], requires_grad=True)
        b.register_hook(lambda g: g * 5)
        c = b * 3
        c.register_hook(lambda g: g * 7)
        grad = lib.autograd.grad if lib is torch else lib.grad
        (gc,) = grad((c * 2).sum(), c, retain_graph=True)
        (gb,) = grad((c * 2).sum(), b)
        return gc, gb
    ours, theirs = both(run)
    same(ours[0], theirs[0])
    same(ours[1], theirs[1])


def test_in_place_change_moves_retained_grad_but_not_earlier_hooks():
    def run(lib):
        seen = {}
        p = lib.tensor([1.0, 2.0], requires_grad=True)
        q = p * 1
        q.retain_grad()
        q.register_hook(lambda g: seen.setdefault("before", g.clone()))
        q.mul_(3)
        q.register_hook(lambda g: seen.setdefault("after", g.clone()))
        (q * q).sum().backward()
        return q.grad, seen["before"], seen["after"], p.grad
    for a, b in zip(*both(run)):
        same(a, b)


def test_hook_handle_remove_and_context_manager():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    handle = x.register_hook(lambda g: g * 0)
    handle.remove()
    handle.remove()  # a second remove is harmless, as in PyTorch
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    with x.register_hook(lambda g: g * 2):
        x.grad = None
        (x * 3).sum().backward()
        assert x.grad.tolist() == [6.0, 6.0]
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_hooks_under_create_graph_stay_differentiable():
    def run(lib):
        x = lib.tensor([0.5, 1.5], requires_grad=True, dtype=lib.float64)
        y = x ** 3
        y.register_hook(lambda g: g * x)  # a hook that depends on x: its graph is recorded
        grad = lib.autograd.grad if lib is torch else lib.grad
        (g,) = grad(y.sum(), x, create_graph=True)
        (gg,) = grad(g.sum(), x)
        return g, gg
    for a, b in zip(*both(run)):
        same(a, b)


def test_hook_errors_name_what_went_wrong():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tg.ones(2).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        tg.ones(2).retain_grad()
    w = tg.ones(2, requires_grad=True)
    w.register_hook(lambda g: tg.ones(3))
    with pytest.raises(RuntimeError, match=r"changed the size of value.*\(3,\).*\(2,\)"):
        (w * 2).sum().backward()
    v = tg.ones(2, requires_grad=True)
    v.register_hook(lambda g: g.numpy())
    with pytest.raises(TypeError, match="returns None or a Tensor"):
        (v * 2).sum().backward()


def test_hooks_go_away_with_their_tensors():
    import gc

    from tensorgrad.autograd import hooks
    before = len(hooks.registry)
    x = tg.ones(2, requires_grad=True)
    y = x * 2
    x.register_hook(lambda g: None)
    y.retain_grad()
    assert len(hooks.registry) == before + 2
    del x, y
    gc.collect()
    assert len(hooks.registry) == before


def test_detach_in_place():
    def run(lib):
        p = lib.ones(2, requires_grad=True)
        r = p * 2
        out = r.detach_()
        return out is r, r.requires_grad, r.grad_fn is None, r.is_leaf
    ours, theirs = both(run)
    assert ours == theirs == (True, False, True, True)


def test_a_parameter_hook_sees_and_scales_its_gradient():
    def run(lib):
        lib.manual_seed(0)
        layer = lib.nn.Linear(3, 2)
        with lib.no_grad():
            layer.weight.copy_(lib.arange(6.0).reshape(2, 3))
            layer.bias.copy_(lib.tensor([0.5, -1.0]))
        seen = []
        layer.weight.register_hook(lambda g: (seen.append(g.clone()), g * 2)[1])
        x = lib.tensor([[1.0, -1.0, 2.0], [0.5, 0.0, 1.0]])
        (layer(x) ** 2).sum().backward()
        return seen[0], layer.weight.grad
    for a, b in zip(*both(run)):
        np.testing.assert_allclose(np.asarray(a.detach()), b.detach().numpy(), rtol=1e-5)
