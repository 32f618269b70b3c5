"""nn.utils.clip_grad_norm_ against PyTorch."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.nn.utils import clip_grad_norm_


@pytest.mark.parametrize("max_norm,norm_type", [(0.5, 2.0), (100.0, 2.0), (0.3, float("inf")),
                                                (1.0, 1.0)])
def test_clip_grad_norm_matches_torch(max_norm, norm_type):
    torch = pytest.importorskip("torch")
    params = [tg.randn(4, 3, requires_grad=True), tg.randn(5, requires_grad=True),
              tg.randn(2, requires_grad=True)]
    grads = [tg.randn(4, 3), tg.randn(5), None]
    tparams = []
    for p, g in zip(params, grads):
        p.grad = g
        tp = torch.from_numpy(p.detach().numpy().copy()).requires_grad_()
        tp.grad = None if g is None else torch.from_numpy(g.numpy().copy())
        tparams.append(tp)
    total = clip_grad_norm_(params, max_norm, norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(tparams, max_norm, norm_type)
    assert total.item() == pytest.approx(ttotal.item(), rel=1e-5)
    for p, tp in zip(params[:2], tparams[:2]):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-7)
        assert p.grad.dtype == tg.float32
    assert params[2].grad is None


def test_clip_grad_norm_with_gradients_the_engine_shares():
    # a + b hands both leaves one broadcast gradient: each leaf must own (and scale) its own
    a, b = tg.randn(3, requires_grad=True), tg.randn(3, requires_grad=True)
    (a + b).sum().backward()
    total = clip_grad_norm_([a, b], max_norm=1.0)
    assert total.item() == pytest.approx(6 ** 0.5, rel=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), [6 ** -0.5] * 3, rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), [6 ** -0.5] * 3, rtol=1e-5)


def test_clip_grad_norm_edge_cases():
    p = tg.randn(2, requires_grad=True)
    assert clip_grad_norm_(p, 1.0).item() == 0.0  # no gradients
    p.grad = tg.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="clip_grad_norm_: the total 2.0-norm .* inf"):
        clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
