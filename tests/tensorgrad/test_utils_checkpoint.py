"""tensorgrad/utils/checkpoint.py: a checkpointed call gives the values and gradients of the
call itself, replays dropout's masks, frees the activations inside, and matches
torch.utils.checkpoint (use_reentrant=False) on the same weights."""
import gc
import weakref

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.utils.checkpoint import checkpoint, checkpoint_sequential


def block(dropout=0.3):
    return nn.Sequential(nn.Linear(4, 8, dtype=tg.float64), nn.GELU(), nn.Dropout(dropout),
                         nn.Linear(8, 4, dtype=tg.float64))


def gradients(model, x, run):
    """Output, then the gradients of x and of every parameter after backward of a probe."""
    x.grad = None
    model.zero_grad()
    tg.manual_seed(1)
    out = run(x)
    tg.randn(5)  # the stream moves on before backward: the replay must not see that
    (out * tg.tensor(np.linspace(-1, 1, out.numel()).reshape(out.shape))).sum().backward()
    return [out.detach().numpy(), x.grad.numpy()] + [p.grad.numpy() for p in model.parameters()]


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_values_and_gradients_equal_the_plain_call_with_dropout(use_reentrant):
    model = block()
    x = tg.randn(3, 4, dtype=tg.float64, requires_grad=True)
    plain = gradients(model, x, model)
    checkpointed = gradients(model, x, lambda x: checkpoint(model, x,
                                                            use_reentrant=use_reentrant))
    for a, b in zip(plain, checkpointed):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_without_preserve_rng_state_the_replay_draws_other_masks():
    model = block(0.5)
    x = tg.randn(3, 4, dtype=tg.float64, requires_grad=True)
    plain = gradients(model, x, model)
    other = gradients(model, x, lambda x: checkpoint(model, x, use_reentrant=False,
                                                     preserve_rng_state=False))
    np.testing.assert_array_equal(plain[0], other[0])  # the forward is the same run
    assert not np.allclose(plain[1], other[1])  # the backward differentiated other masks


def test_kwargs_tuples_and_inputs_without_grad():
    w = tg.randn(4, dtype=tg.float64, requires_grad=True)

    def f(x, scale, shift=None):
        return (x * w * scale + shift).tanh(), 3, (x * w).sum()

    x, shift = tg.randn(2, 4, dtype=tg.float64), tg.randn(4, dtype=tg.float64, requires_grad=True)
    first, three, total = checkpoint(f, x, 2.0, shift=shift, use_reentrant=False)
    assert three == 3
    (first.sum() + total).backward()
    expected = [w.grad.numpy(), shift.grad.numpy()]
    w.grad = shift.grad = None
    first, _, total = f(x, 2.0, shift=shift)
    (first.sum() + total).backward()
    np.testing.assert_allclose(expected[0], w.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(expected[1], shift.grad.numpy(), rtol=1e-12)


def test_grad_works_through_it_and_to_second_order():
    w = tg.randn(3, dtype=tg.float64, requires_grad=True)
    x = tg.randn(2, 3, dtype=tg.float64, requires_grad=True)
    f = lambda x: (x.sin() * w).sum(-1)  # noqa: E731
    assert tg.gradcheck(lambda x, w: checkpoint(f, x, use_reentrant=False), [x, w])
    assert tg.gradgradcheck(lambda x, w: checkpoint(f, x, use_reentrant=False), [x, w])
    (gx,) = tg.grad(checkpoint(f, x, use_reentrant=False).sum(), [x])
    np.testing.assert_allclose(gx.numpy(), (x.cos() * w).detach().numpy(), rtol=1e-12)


def test_the_activations_inside_are_freed_and_kept_without_it():
    inner = []

    def f(x):
        h = x.exp()  # exp saves its output for backward
        inner.append(weakref.ref(h.data))  # the array: a graph keeps arrays, not Tensors
        return h.sum()

    x = tg.randn(100, requires_grad=True)
    kept = f(x)
    out = checkpoint(f, x, use_reentrant=False)
    gc.collect()
    assert inner[0]() is not None and inner[1]() is None
    out.backward()
    kept.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(x.detach().numpy()), rtol=1e-6)


def test_an_input_changed_in_place_before_backward_raises():
    x = tg.randn(3, requires_grad=True)
    y = x * 1.0
    out = checkpoint(lambda t: t.exp().sum(), y, use_reentrant=False)
    with tg.no_grad():
        y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified in place|changed in place"):
        out.backward()


def test_a_function_that_changes_shape_on_replay_is_an_error():
    calls = []

    def f(x):
        calls.append(1)
        return x[:len(calls)] * 2.0  # (1, 2) at first, (2, 2) at the replay

    x = tg.randn(3, 2, requires_grad=True)
    out = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(RuntimeError, match="same thing both times|shapes"):
        out.sum().backward()


def test_under_no_grad_it_is_the_plain_call():
    with tg.no_grad():
        out = checkpoint(lambda t: t * 2, tg.ones(2, requires_grad=True), use_reentrant=False)
    assert not out.requires_grad and out.tolist() == [2.0, 2.0]
    with pytest.raises(ValueError, match="determinism_check"):
        checkpoint(lambda t: t, tg.ones(1), determinism_check="strict")


def test_checkpoint_sequential_matches_torch():
    torch = pytest.importorskip("torch")
    theirs = torch.nn.Sequential(*[torch.nn.Linear(5, 5) for _ in range(6)],
                                 torch.nn.Tanh()).double()
    ours = nn.Sequential(*[nn.Linear(5, 5, dtype=tg.float64) for _ in range(6)], nn.Tanh())
    ours.load_state_dict({k: tg.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 5))
    tx, ox = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
    tout = torch.utils.checkpoint.checkpoint_sequential(theirs, 3, tx, use_reentrant=False)
    out = checkpoint_sequential(ours, 3, ox, use_reentrant=False)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    (tout ** 2).sum().backward()
    (out ** 2).sum().backward()
    np.testing.assert_allclose(ox.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    for (name, p), tp in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-10, err_msg=name)
