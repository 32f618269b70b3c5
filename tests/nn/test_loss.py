"""Loss modules against PyTorch (values and gradients), stability and errors."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn


def _t(torch, x, grad=False):
    return torch.from_numpy(x.detach().numpy().copy()).requires_grad_(grad)


def _compare(torch, ours, theirs, logits, target, atol=1e-6):
    x = logits.detach().requires_grad_()
    tx = _t(torch, logits, grad=True)
    loss, tloss = ours(x, target), theirs(tx, _t(torch, target))
    np.testing.assert_allclose(loss.detach().numpy(), tloss.detach().numpy(), atol=atol, rtol=1e-5)
    g = tg.randn(*loss.shape)
    (loss * g).sum().backward()
    (tloss * torch.from_numpy(g.numpy())).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=atol, rtol=1e-5)
    assert loss.dtype == tg.float32


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("options", [{}, {"label_smoothing": 0.1}, {"ignore_index": 1},
                                     {"weight": True}])
def test_cross_entropy_loss_matches_torch(reduction, options):
    torch = pytest.importorskip("torch")
    options = dict(options)
    if options.pop("weight", False):
        weight = tg.rand(5) + 0.5
        ours = nn.CrossEntropyLoss(weight=weight, reduction=reduction)
        theirs = torch.nn.CrossEntropyLoss(weight=_t(torch, weight), reduction=reduction)
    else:
        ours = nn.CrossEntropyLoss(reduction=reduction, **options)
        theirs = torch.nn.CrossEntropyLoss(reduction=reduction, **options)
    target = tg.tensor([0, 1, 4, 1, 3, 2])
    _compare(torch, ours, theirs, tg.randn(6, 5) * 2.0, target)


def test_cross_entropy_loss_weight_is_a_buffer():
    loss = nn.CrossEntropyLoss(weight=tg.ones(3))
    assert list(loss.state_dict()) == ["weight"] and loss.num_parameters() == 0


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_matches_torch(reduction):
    torch = pytest.importorskip("torch")
    ours, theirs = nn.MSELoss(reduction), torch.nn.MSELoss(reduction=reduction)
    _compare(torch, ours, theirs, tg.randn(4, 3), tg.randn(4, 3))


def test_mse_loss_refuses_to_broadcast():
    with pytest.raises(ValueError, match=r"mse_loss: .* same shape, got \(4,\) and \(4, 1\)"):
        nn.MSELoss()(tg.randn(4), tg.randn(4, 1))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_with_logits_matches_torch(reduction, weighted):
    torch = pytest.importorskip("torch")
    kwargs, tkwargs = {}, {}
    if weighted:
        weight, pos_weight = tg.rand(3) + 0.5, tg.tensor([1.0, 2.0, 0.5])
        kwargs = {"weight": weight, "pos_weight": pos_weight}
        tkwargs = {"weight": _t(torch, weight), "pos_weight": _t(torch, pos_weight)}
    ours = nn.BCEWithLogitsLoss(reduction=reduction, **kwargs)
    theirs = torch.nn.BCEWithLogitsLoss(reduction=reduction, **tkwargs)
    logits = tg.cat([tg.randn(4, 3) * 5.0, tg.zeros(1, 3)])  # exactly 0 is a kink in |x| forms
    _compare(torch, ours, theirs, logits, tg.rand(5, 3))


def test_bce_with_logits_is_stable_for_huge_logits():
    x = tg.tensor([-1000.0, -50.0, 50.0, 1000.0], requires_grad=True)
    target = tg.tensor([1.0, 0.0, 1.0, 0.0])
    loss = nn.BCEWithLogitsLoss(reduction="none")(x, target)
    np.testing.assert_allclose(loss.detach().numpy(), [1000.0, 0.0, 0.0, 1000.0], atol=1e-6)
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-1.0, 0.0, 0.0, 1.0], atol=1e-6)


def test_bad_reduction_is_named():
    with pytest.raises(ValueError, match="reduction must be one of"):
        nn.MSELoss("avg")(tg.zeros(2), tg.zeros(2))
