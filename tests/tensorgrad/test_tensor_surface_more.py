"""The everyday Tensor surface, round 2, against PyTorch: hooks and retained gradients, dtype
and layout attributes, inference mode, print options, tg.Size."""
import numpy as np
import pytest

import tensorgrad as tg

torch = pytest.importorskip("torch")


def both(fn):
    """Run `fn(lib)` with tensorgrad and with torch; return both results."""
    return fn(tg), fn(torch)


def same(a, b):
    np.testing.assert_allclose(np.asarray(a.detach()), b.detach().numpy(), rtol=1e-6)


# --- 1. hooks, retain_grad, detach_ ---------------------------------------------------------
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


# --- 2. dtype and layout attributes -----------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "uint8",
                                   "bool"])
def test_dtype_attributes_match_torch(dtype):
    def run(lib):
        x = lib.zeros(2, 3, dtype=getattr(lib, dtype))
        return (x.is_floating_point(), x.is_complex(), x.element_size(), x.itemsize, x.nbytes,
                lib.is_floating_point(x), lib.is_complex(x), lib.numel(x), lib.is_tensor(x))
    ours, theirs = both(run)
    assert ours == theirs


def test_strides_offsets_and_contiguity_match_torch():
    def run(lib):
        x = lib.arange(24.0).reshape(4, 6)
        views = [x, x.t(), x[:, 1:], x[1::2, ::3], x[2], x.unsqueeze(1), x[:1].expand(3, 6),
                 x.permute(1, 0)[1:]]
        return [(v.stride(), v.stride(0), v.stride(-1), v.is_contiguous(), v.storage_offset())
                for v in views]
    ours, theirs = both(run)
    assert ours == theirs


def test_contiguous_makes_a_row_major_copy_only_when_needed():
    x = tg.arange(6.0, requires_grad=True)
    y = x.reshape(2, 3)
    assert y.contiguous() is y
    t = y.t().contiguous()
    assert t.is_contiguous() and t.stride() == (2, 1)
    assert t.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    (t * tg.arange(6.0).reshape(3, 2)).sum().backward()  # the copy stays in the graph
    assert x.grad.tolist() == [0.0, 2.0, 4.0, 1.0, 3.0, 5.0]


@pytest.mark.parametrize("size", [(1, 3), (3,), (2, 1), (1, 1), (2, 3), ()])
def test_sum_to_size_matches_torch(size):
    def run(lib):
        x = lib.arange(6.0).reshape(2, 3).requires_grad_()
        out = x.sum_to_size(*size) if size else x.sum_to_size(size)
        (out * 2).sum().backward()
        return out, x.grad
    for a, b in zip(*both(run)):
        same(a, b)
    assert tg.ones(2, 3).sum_to_size(list(size)).shape == size  # a sequence works too


def test_sum_to_size_rejects_a_size_that_does_not_broadcast():
    with pytest.raises(RuntimeError, match=r"sum_to_size: size \[3, 3\] is not expandable to "
                                           r"size \[2, 3\]"):
        tg.ones(2, 3).sum_to_size(3, 3)


def test_conjugate_transposes_of_real_tensors():
    def run(lib):
        m = lib.arange(6.0).reshape(2, 3)
        b = lib.arange(24.0).reshape(2, 3, 4)
        return m.H, b.mH
    for a, b in zip(*both(run)):
        same(a, b)
    with pytest.raises(RuntimeError, match="tensor.H is only supported"):
        _ = tg.ones(2, 3, 4).H
    with pytest.raises(RuntimeError, match="tensor.mH is only supported"):
        _ = tg.ones(3).mH


# --- 3. inference mode, print options ---------------------------------------------------------
def test_inference_mode_switches_as_torch_does():
    def run(lib):
        seen = []

        def state():
            seen.append((lib.is_inference_mode_enabled(), lib.is_grad_enabled()))

        @lib.inference_mode
        def bare():
            state()

        @lib.inference_mode()
        def called(n):  # recursion: each call has its own switch
            return called(n - 1) if n else state()

        state()
        bare()
        called(2)
        with lib.inference_mode():
            state()
            with lib.inference_mode(False):
                state()
            state()
        with lib.no_grad(), lib.inference_mode(False):
            state()
        state()
        return seen
    ours, theirs = both(run)
    assert ours == theirs


def test_inference_mode_records_nothing_and_makes_plain_tensors():
    w = tg.ones(3, requires_grad=True)
    with tg.inference_mode():
        y = w * 2
    assert not y.requires_grad and y.grad_fn is None
    # The documented difference: y is an ordinary tensor, usable in autograd and in place.
    y.add_(1)
    (y * w).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0, 3.0]


@pytest.fixture
def print_options():
    yield
    tg.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


@pytest.mark.parametrize("options", [
    {}, {"precision": 2}, {"sci_mode": False}, {"precision": 6}, {"profile": "short"},
    {"profile": "full"},
])
def test_set_printoptions_changes_repr_as_in_torch(print_options, options):
    """Small tensors print as PyTorch prints them; the layout of summaries and of lines broken
    at linewidth is NumPy's (checked below by what it shows, not character by character)."""
    values = [[1.123456789, 2e-5, 3.0], [1.5, 2.25, -0.125], [1.0, 2.0, 30.0], [0.5]]

    def run(lib):
        lib.set_printoptions(**options)
        return [repr(lib.tensor(v)) for v in values] + [repr(lib.arange(5))]
    ours, theirs = both(run)
    assert ours == theirs


def test_print_options_summarise_wrap_and_choose_notation(print_options):
    tg.set_printoptions(threshold=5, edgeitems=2)
    assert repr(tg.arange(10)) == "tensor([0, 1, ..., 8, 9])"
    assert "..." not in repr(tg.arange(5))
    tg.set_printoptions(profile="default", linewidth=30)
    lines = repr(tg.arange(20.0)).splitlines()
    assert len(lines) > 1 and max(len(line) for line in lines) <= 30
    tg.set_printoptions(profile="default", sci_mode=True, precision=3)
    assert repr(tg.tensor([1.5, 250.0])) == "tensor([1.500e+00, 2.500e+02])"
    tg.set_printoptions(profile="full")
    assert "..." not in repr(tg.zeros(5000))
    tg.set_printoptions(profile="default")
    assert "..." in repr(tg.zeros(1001)) and "..." not in repr(tg.zeros(1000))


def test_sci_mode_is_reset_by_a_call_that_does_not_name_it(print_options):
    tg.set_printoptions(sci_mode=False)
    tg.set_printoptions(precision=4)  # PyTorch resets sci_mode to automatic here too
    assert repr(tg.tensor([1.0, 2e-5])) == "tensor([1.0000e+00, 2.0000e-05])"
    with pytest.raises(ValueError, match="unknown profile 'long'"):
        tg.set_printoptions(profile="long")


# --- 4. tg.Size -----------------------------------------------------------------------------
def test_size_behaves_as_torch_size():
    def run(lib):
        s = lib.zeros(2, 3, 4).size()
        e = lib.Size([])
        return [type(s).__name__, repr(s), str(s), s.numel(), e.numel(), repr(e), s == (2, 3, 4),
                hash(s) == hash((2, 3, 4)), type(s[1:]).__name__, list(s[1:]), s[-1],
                type(s + (5,)).__name__, type((5,) + s).__name__, type(s * 2).__name__,
                list((5,) + s), s.count(3), s.index(4), list(lib.Size([lib.tensor(3)]))]
    ours, theirs = both(run)
    ours[1:3] = [r.replace("tensorgrad.", "torch.") for r in ours[1:3]]
    ours[5] = ours[5].replace("tensorgrad.", "torch.")
    assert ours == theirs


def test_size_rejects_what_is_not_an_int():
    with pytest.raises(TypeError, match=r"Size\(\) takes an iterable of 'int' \(item 1 is "
                                        r"'float'\)"):
        tg.Size([2, 2.5])


def test_shape_stays_a_tuple_and_size_of_a_dim_is_an_int():
    x = tg.zeros(2, 3)
    assert type(x.shape) is tuple  # the documented difference (read by every op)
    assert x.size() == x.shape and x.size(1) == 3 and x.size(-2) == 2
    assert x.sum_to_size(tg.Size([1, 3])).shape == (1, 3)


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
