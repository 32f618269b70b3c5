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
