"""tg.autograd.backward and Tensor.backward take torch's arguments: several tensors with their
gradients, and `inputs`, the only tensors whose .grad is accumulated into."""
import numpy as np
import pytest

import tensorgrad as tg

torch = pytest.importorskip("torch")


def _graph(lib, x0, w0):
    x = lib.tensor(x0, requires_grad=True)
    w = lib.tensor(w0, requires_grad=True)
    h = (x * w).tanh()
    h.retain_grad()
    return x, w, h, (h * h).sum(), h * 3.0


def _grads(*tensors):
    return [None if t.grad is None else np.asarray(t.grad.detach().numpy()) for t in tensors]


@pytest.mark.parametrize("inputs", [None, "x", "w and h", "h"])
def test_backward_of_several_tensors_with_inputs_matches_torch(inputs):
    rng = np.random.default_rng(0)
    x0, w0, g0 = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), \
        rng.standard_normal((3, 4))
    results = []
    for lib in (tg, torch):
        x, w, h, loss, scaled = _graph(lib, x0, w0)
        chosen = {None: None, "x": x, "w and h": [w, h], "h": [h]}[inputs]
        lib.autograd.backward([loss, scaled], [None, lib.tensor(g0)], inputs=chosen)
        results.append(_grads(x, w) + ([] if inputs is None else _grads(h)))
    for ours, theirs in zip(*results):
        if theirs is None:
            assert ours is None
        else:
            np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_tensor_backward_inputs_accumulate_and_leave_the_rest():
    x, w = tg.randn(4, requires_grad=True), tg.randn(4, requires_grad=True)
    (x * w).sum().backward(inputs=[x], retain_graph=True)
    assert w.grad is None
    np.testing.assert_allclose(x.grad.numpy(), w.detach().numpy())
    (x * w).sum().backward(inputs=x)
    np.testing.assert_allclose(x.grad.numpy(), 2 * w.detach().numpy())
    seed = tg.ones(4)
    (x * 1.0).backward(seed, inputs=[x])
    x.grad.data[...] = 0.0  # the seed is not the .grad array
    np.testing.assert_array_equal(seed.numpy(), np.ones(4))


def test_a_non_leaf_input_gets_its_grad_as_in_torch():
    for lib in (tg, torch):
        x = lib.ones(3, requires_grad=True)
        y = x * 2.0
        (y * y).sum().backward(inputs=[y])
        assert x.grad is None
        np.testing.assert_array_equal(y.grad.numpy(), [4.0, 4.0, 4.0])


def test_backward_argument_errors():
    x = tg.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        tg.autograd.backward(x.sum(), inputs=[])
    with pytest.raises(RuntimeError, match="input 0 .* does not require grad"):
        tg.autograd.backward(x.sum(), inputs=[tg.ones(3)])
    with pytest.raises(RuntimeError, match="2 gradients for 1 tensors"):
        tg.autograd.backward([x.sum()], [None, None])
    with pytest.raises(RuntimeError, match="single-element output"):
        tg.autograd.backward([x * 2.0])
