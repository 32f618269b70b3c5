"""nn.functional: re-exports are tensorgrad's ops; composites against PyTorch."""
import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.nn.functional as F


def test_reexports_are_the_core_ops():
    for name in ("cross_entropy", "softmax", "log_softmax", "layer_norm", "rms_norm", "gelu",
                 "silu", "relu", "tanh", "sigmoid", "dropout", "embedding", "one_hot", "pad"):
        assert getattr(F, name) is getattr(tg, name), name
    from tensorgrad import nn
    assert nn.functional is F


@pytest.mark.parametrize("shape", [(3,), (2, 3), (4, 2, 3)])
def test_linear_matches_torch(shape):
    torch = pytest.importorskip("torch")
    x, w, b = tg.randn(*shape), tg.randn(5, 3), tg.randn(5)
    for t in (x, w, b):
        t.requires_grad_()
    tx, tw, tb = (torch.from_numpy(t.detach().numpy().copy()).requires_grad_() for t in (x, w, b))
    out, tout = F.linear(x, w, b), torch.nn.functional.linear(tx, tw, tb)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    tout.sum().backward()
    for ours, theirs in ((x, tx), (w, tw), (b, tb)):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert F.linear(x, w).shape == shape[:-1] + (5,)


def test_linear_error_names_the_shapes():
    with pytest.raises(ValueError, match=r"linear: input of shape \(2, 4\) .* weight of shape"):
        F.linear(tg.randn(2, 4), tg.randn(5, 3))


def test_composites_pass_gradcheck():
    x = tg.randn(3, 4, dtype=tg.float64, requires_grad=True)
    t = tg.rand(3, 4, dtype=tg.float64)
    w = tg.randn(2, 4, dtype=tg.float64, requires_grad=True)
    assert tg.gradcheck(lambda a: F.binary_cross_entropy_with_logits(a, t), (x,))
    assert tg.gradcheck(lambda a: F.mse_loss(a, t, reduction="sum"), (x,))
    assert tg.gradcheck(lambda a, b: F.linear(a, b), (x, w))


@pytest.mark.parametrize("kwargs", [dict(), dict(p=2, margin=0.5), dict(reduction="sum"),
                                    dict(reduction="none", weight=[1.0, 2.0, 0.5, 3.0])])
def test_multi_margin_loss_matches_torch(kwargs):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((5, 4)), np.array([0, 3, 1, 1, 2])
    results = []
    for lib in (tg, torch):
        options = dict(kwargs)
        if "weight" in options:
            options["weight"] = lib.tensor(options["weight"], dtype=lib.float64)
        inp = lib.tensor(x, requires_grad=True)
        loss = lib.nn.functional.multi_margin_loss(inp, lib.tensor(y), **options)
        (loss * lib.arange(loss.numel(), dtype=lib.float64).reshape(loss.shape) + loss).sum() \
            .backward()
        results.append((loss.detach().numpy(), inp.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-10)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-10)
    one = tg.nn.functional.multi_margin_loss(tg.tensor(x[0]), tg.tensor(y[0]))
    assert one.shape == () and one.item() == pytest.approx(
        torch.nn.functional.multi_margin_loss(torch.tensor(x[0]), torch.tensor(y[0])).item())
    with pytest.raises(ValueError, match="p == 1 and p == 2"):
        tg.nn.functional.multi_margin_loss(tg.tensor(x), tg.tensor(y), p=3)


def test_gumbel_softmax_samples_and_passes_the_soft_gradient_straight_through():
    logits = tg.tensor([[2.0, 0.5, -1.0]] * 2000, requires_grad=True)
    soft = tg.nn.functional.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).detach().numpy(), 1.0, rtol=1e-5)
    hard = tg.nn.functional.gumbel_softmax(logits, hard=True)
    counts = hard.detach().numpy().sum(0)
    assert set(np.unique(hard.detach().numpy())) == {0.0, 1.0} and counts.sum() == 2000
    # the argmax of logits + Gumbel noise is a sample of softmax(logits)
    expected = np.exp([2.0, 0.5, -1.0]) / np.exp([2.0, 0.5, -1.0]).sum()
    np.testing.assert_allclose(counts / 2000, expected, atol=0.04)
    (hard * tg.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert logits.grad is not None and np.abs(logits.grad.numpy()).sum() > 0
    with pytest.warns(UserWarning, match="deprecated"):
        tg.nn.functional.gumbel_softmax(logits, eps=1e-5)
