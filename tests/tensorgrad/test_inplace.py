"""In-place ops and the augmented operators (+=, -=, ...), with PyTorch's meaning: on a leaf that
requires grad they raise, outside the graph they write memory (views see it, versions move), on
a tensor inside the graph the Tensor object takes the out-of-place result."""
import numpy as np
import pytest

import tensorgrad as tg

torch = pytest.importorskip("torch")

LEAF_ERROR = "a leaf Variable that requires grad is being used in an in-place operation"
OVERLAP_ERROR = ("unsupported operation: more than one element of the written-to tensor refers "
                 "to a single memory location. Please clone\\(\\) the tensor before performing "
                 "the operation.")


def test_manual_sgd_loop_changes_the_parameters(device):
    x = tg.randn(64, 3, device=device)
    y = x @ tg.tensor([[1.0], [-2.0], [0.5]], device=device)
    w = tg.zeros(3, 1, device=device, requires_grad=True)
    start = ((x @ w - y) ** 2).mean().item()
    for _ in range(50):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with tg.no_grad():
            w -= 0.1 * w.grad  # the update must reach w itself, not rebind a local name
        w.grad = None
    assert w.is_leaf and w.requires_grad
    assert ((x @ w - y) ** 2).mean().item() < 1e-3 * start
    np.testing.assert_allclose(np.asarray(w.detach()).ravel(), [1.0, -2.0, 0.5], atol=0.02)


@pytest.mark.parametrize("update", [
    lambda p: p.__iadd__(1), lambda p: p.__isub__(1), lambda p: p.__imul__(2),
    lambda p: p.__itruediv__(2), lambda p: p.__ipow__(2), lambda p: p.__ifloordiv__(2),
    lambda p: p.__imod__(2), lambda p: p.add_(1, alpha=2), lambda p: p.mul_(3),
    lambda p: p.masked_fill_(p.detach() > 0.5, 0.0),
])
def test_a_leaf_that_requires_grad_refuses_in_place_ops(update):
    ours, theirs = tg.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=LEAF_ERROR):
        update(theirs)
    with pytest.raises(RuntimeError, match=LEAF_ERROR):
        update(ours)
    assert ours.tolist() == [1.0, 1.0]


def test_outside_the_graph_memory_is_written_views_see_it_and_versions_move(device):
    w = tg.arange(4.0, device=device).requires_grad_()
    view = w.detach()[1:3]
    version = w._version[0]
    with tg.no_grad():
        w += 1
        w *= 2
        w **= 2
        w.sub_(tg.ones(4, device=device), alpha=3)
    assert w._version[0] == version + 4
    assert w.tolist() == [1.0, 13.0, 33.0, 61.0] and view.tolist() == [13.0, 33.0]
    x = tg.randn(4, requires_grad=True, device=device)
    y = x * w  # saves w
    with tg.no_grad():
        w /= 2
    with pytest.raises(RuntimeError, match="modified in place"):
        y.sum().backward()


def test_inside_the_graph_the_tensor_takes_the_result_with_torchs_gradient():
    def run(lib, x):
        y = x * 2.0
        ref = y
        y += 1.0
        y *= x
        y -= x.exp()
        y /= 3.0
        y **= 2
        assert ref is y  # the same object, as in PyTorch
        (y * lib.tensor([1.0, -2.0, 0.5], dtype=x.dtype)).sum().backward()
        return y

    values = np.array([0.3, -1.2, 0.7])
    x, px = tg.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    y, py = run(tg, x), run(torch, px)
    np.testing.assert_allclose(np.asarray(y.detach()), py.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(x.grad), px.grad.numpy(), rtol=1e-12)
    assert y.grad_fn is not None and not y.is_leaf


def test_a_plain_tensor_updated_with_one_that_requires_grad_joins_the_graph():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    total = tg.zeros(2)
    total += w * 3.0
    total.sum().backward()
    assert total.requires_grad and w.grad.tolist() == [3.0, 3.0]


def test_copy_from_a_tensor_that_requires_grad_keeps_the_gradient_like_torch():
    def run(lib):
        w = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        buf = lib.zeros(2, 3)  # float32: the copy casts, and the gradient casts back
        buf.copy_(w * 2.0)
        (buf * lib.tensor([[1.0], [-1.0]])).sum().backward()
        return buf, w.grad

    (buf, grad), (tbuf, tgrad) = run(tg), run(torch)
    assert buf.requires_grad and buf.dtype == tg.float32
    np.testing.assert_array_equal(np.asarray(buf.detach()), tbuf.detach().numpy())
    np.testing.assert_array_equal(np.asarray(grad), tgrad.numpy())
    with tg.no_grad():
        plain = tg.zeros(3).copy_(tg.ones(3, requires_grad=True))
    assert not plain.requires_grad and plain.tolist() == [1.0, 1.0, 1.0]


def test_inside_the_graph_earlier_uses_are_checked_and_views_keep_the_old_values():
    x = tg.ones(3, requires_grad=True)
    y = x * 2.0
    z = y * y  # saves y as it was
    view = y[:2]
    y += 1.0
    # A documented difference: autograd records no writes into memory, so a view taken before
    # the update keeps the old values (PyTorch's view would show 3.0).
    assert y.tolist() == [3.0, 3.0, 3.0] and view.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="modified in place"):
        z.sum().backward()  # PyTorch raises here too
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_dtype_and_shape_rules_match_torch():
    for ours, theirs in ((tg.arange(3), torch.arange(3)),):
        for bad in (lambda t: t.__iadd__(1.5), lambda t: t.__itruediv__(2)):
            with pytest.raises(RuntimeError, match="result type Float can't be cast to the "
                                                   "desired output type Long"):
                bad(theirs)
            with pytest.raises(RuntimeError, match="result type float32 can't be cast to the "
                                                   "desired output type int64"):
                bad(ours)
    with pytest.raises(RuntimeError, match="output with shape \\[3\\] doesn't match the "
                                           "broadcast shape \\[2, 3\\]"):
        torch.zeros(3).add_(torch.ones(2, 3))
    with pytest.raises(RuntimeError, match="add_: output with shape \\[3\\] doesn't match the "
                                           "broadcast shape \\[2, 3\\]"):
        tg.zeros(3).add_(tg.ones(2, 3))
    f32 = tg.zeros(2)
    f32 += tg.tensor([1.5, 2.5], dtype=tg.float64)  # a float result goes down to float32
    assert f32.dtype == tg.float32 and f32.tolist() == [1.5, 2.5]
    i = tg.tensor([7, -7])
    i //= 2
    assert i.tolist() == [3, -4] and i.dtype == tg.int64


@pytest.mark.parametrize("update", [
    lambda t: t.add_(1), lambda t: t.__iadd__(1), lambda t: t.mul_(2),
    lambda t: t.copy_(t.detach().clone()), lambda t: t.__imod__(2),
])
def test_writing_into_an_expanded_view_is_torchs_error(update, device):
    with pytest.raises(RuntimeError, match=OVERLAP_ERROR):
        update(torch.zeros(3).expand(2, 3))
    base = tg.zeros(3, device=device)
    with pytest.raises(RuntimeError, match=OVERLAP_ERROR):
        update(base.expand(2, 3))
    with pytest.raises(RuntimeError, match=OVERLAP_ERROR):
        update(base[None].broadcast_to((4, 3)))
    assert base.tolist() == [0.0, 0.0, 0.0]


def test_method_forms_match_torch():
    values = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])
    other = np.array([2.0, -0.5, 1.5])
    steps = [lambda t, o: t.add_(o, alpha=2), lambda t, o: t.sub_(o, alpha=0.5),
             lambda t, o: t.mul_(o), lambda t, o: t.div_(o), lambda t, o: t.pow_(2),
             lambda t, o: t.div_(o, rounding_mode="floor"), lambda t, o: t.add_(3),
             lambda t, o: t.div_(-0.7, rounding_mode="trunc"), lambda t, o: t.sub_(1.5),
             lambda t, o: t.masked_fill_(o > 0, -1.0)]
    ours, theirs = tg.tensor(values), torch.tensor(values)
    for step in steps:
        assert step(ours, tg.tensor(other)) is ours
        step(theirs, torch.tensor(other))
        np.testing.assert_allclose(np.asarray(ours), theirs.numpy(), rtol=1e-12)
