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


def test_clip_grad_norm_takes_torchs_foreach_argument():
    p = tg.zeros(2, requires_grad=True)
    for foreach in (None, True, False):
        p.grad = tg.tensor([3.0, 4.0])
        assert clip_grad_norm_([p], 1.0, foreach=foreach).item() == pytest.approx(5.0)
        np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-5)


def test_clip_grad_value_matches_torch():
    torch = pytest.importorskip("torch")
    from tensorgrad.nn.utils import clip_grad_value_
    g = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    p, tp = tg.zeros(3, 4, requires_grad=True), torch.zeros(3, 4, requires_grad=True)
    p.grad, tp.grad = tg.tensor(g), torch.tensor(g)
    q = tg.zeros(2, requires_grad=True)  # no gradient: skipped
    assert clip_grad_value_([p, q], 0.5) is torch.nn.utils.clip_grad_value_([tp], 0.5) is None
    np.testing.assert_array_equal(p.grad.numpy(), tp.grad.numpy())
    assert q.grad is None


def test_parameters_to_vector_and_back_match_torch():
    torch = pytest.importorskip("torch")
    from tensorgrad import nn
    from tensorgrad.nn.utils import parameters_to_vector, vector_to_parameters
    ours = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    vec = parameters_to_vector(ours.parameters())
    t_vec = torch.nn.utils.parameters_to_vector(theirs.parameters())
    np.testing.assert_array_equal(vec.detach().numpy(), t_vec.detach().numpy())
    assert vec.requires_grad  # a differentiable copy, as torch's
    new = np.arange(vec.numel(), dtype=np.float32)
    vector_to_parameters(tg.tensor(new), ours.parameters())
    torch.nn.utils.vector_to_parameters(torch.tensor(new), theirs.parameters())
    for p, t in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), t.detach().numpy())
    with pytest.raises(RuntimeError, match="has 3 elements"):
        vector_to_parameters(tg.zeros(3), ours.parameters())
    with pytest.raises(TypeError, match="1-D Tensor"):
        vector_to_parameters(tg.zeros(2, 2), ours.parameters())
