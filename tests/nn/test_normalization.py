"""BatchNorm / GroupNorm layers and F.batch_norm, F.group_norm, F.instance_norm, F.normalize
against PyTorch: outputs, gradients, running statistics over several steps (momentum, momentum
None, train/eval, affine, track_running_stats) and the buffers' names and dtypes."""
import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad import nn

from module_parity import outputs_and_gradients_match

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape) * 2 + 0.5


BATCH_NORMS = [
    ("BatchNorm1d", (4, 3), {}),
    ("BatchNorm1d", (4, 3, 5), dict(momentum=None)),
    ("BatchNorm2d", (3, 3, 4, 2), dict(affine=False, momentum=0.3)),
    ("BatchNorm2d", (2, 3, 4, 2), dict(track_running_stats=False)),
    ("BatchNorm3d", (2, 3, 2, 2, 2), dict(eps=1e-3)),
]


@pytest.mark.parametrize("name, shape, kwargs", BATCH_NORMS)
def test_batch_norm_layers_follow_torch_through_training_and_eval(name, shape, kwargs):
    channels = shape[1]
    ours, theirs = getattr(nn, name)(channels, **kwargs), getattr(torch.nn, name)(channels,
                                                                                   **kwargs)
    theirs.double()
    ours.double()
    if ours.affine:  # not ones / zeros, so the affine part is tested too
        with torch.no_grad():
            theirs.weight.copy_(torch.tensor(rand(channels, seed=9)))
            theirs.bias.copy_(torch.tensor(rand(channels, seed=8)))
        ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for step in range(3):
        for module in (ours, theirs):
            module.train(step < 2)  # two training steps, then eval
        x = rand(*shape, seed=step)
        ox, tx = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        outputs_and_gradients_match(ours, theirs, ox, tx, ours(ox), theirs(tx))
        for key, value in theirs.state_dict().items():
            mine = ours.state_dict()[key]
            assert str(mine.dtype) == str(value.dtype).replace("torch.", ""), key
            np.testing.assert_allclose(mine.numpy(), value.numpy(), rtol=1e-12, err_msg=key)
        for p in list(ours.parameters()) + list(theirs.parameters()):
            p.grad = None


def test_batch_norm_float32_buffers_and_reset():
    bn = nn.BatchNorm2d(3)
    bn(tg.randn(4, 3, 2, 2))
    assert bn.running_mean.dtype == tg.float32 and bn.num_batches_tracked.item() == 1
    assert not np.allclose(bn.running_var.numpy(), 1.0)
    bn.reset_running_stats()
    assert bn.num_batches_tracked.item() == 0 and np.allclose(bn.running_var.numpy(), 1.0)


@pytest.mark.parametrize("call, message", [
    (lambda: nn.BatchNorm2d(3)(tg.randn(2, 3, 4)), "expected 4D input"),
    (lambda: nn.BatchNorm1d(3)(tg.randn(2, 4)), "expected 3 channels"),
    (lambda: nn.BatchNorm1d(3)(tg.randn(1, 3)), "more than 1 value per channel"),
    (lambda: nn.GroupNorm(4, 6), "divisible"),
    (lambda: F.batch_norm(tg.randn(2, 3), None, None), "needed when not training"),
])
def test_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("groups, shape, affine", [(2, (3, 4, 5), True), (1, (2, 6, 2, 3), True),
                                                   (6, (2, 6, 3), False), (3, (2, 6), True)])
def test_group_norm_matches_torch(groups, shape, affine):
    ours, theirs = nn.GroupNorm(groups, shape[1], affine=affine), torch.nn.GroupNorm(
        groups, shape[1], affine=affine).double()
    ours.double()
    if affine:
        with torch.no_grad():
            theirs.weight.copy_(torch.tensor(rand(shape[1], seed=3)))
        ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = rand(*shape)
    ox, tx = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    outputs_and_gradients_match(ours, theirs, ox, tx, ours(ox), theirs(tx))


def test_functional_norms_second_order():
    x = tg.tensor(rand(3, 2, 4), requires_grad=True)
    w = tg.tensor(rand(2, seed=1), requires_grad=True)
    assert tg.gradgradcheck(lambda x, w: F.batch_norm(x, None, None, w, None, True), [x, w])
    assert tg.gradgradcheck(lambda x, w: F.group_norm(x, 2, w), [x, w])
    assert tg.gradgradcheck(lambda x: F.normalize(x, dim=-1), [x])


@pytest.mark.parametrize("stats", [False, True])
def test_instance_norm_matches_torch(stats):
    x = rand(2, 3, 5)
    ours = [tg.zeros(3, dtype=tg.float64), tg.ones(3, dtype=tg.float64)] if stats else [None] * 2
    theirs = [torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)] \
        if stats else [None] * 2
    ox, tx = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out = F.instance_norm(ox, *ours, momentum=0.2)
    tout = TF.instance_norm(tx, *theirs, momentum=0.2)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), atol=1e-10)
    for a, b in zip(ours, theirs):
        if a is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


@pytest.mark.parametrize("p, dim", [(2, 1), (1, -1), (3.0, 0), (float("inf"), 1)])
def test_normalize_matches_torch(p, dim):
    x = rand(3, 4)
    x[1] = 0.0  # a zero vector: zero output and zero gradient, not NaN
    ox, tx = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, tout = F.normalize(ox, p, dim), TF.normalize(tx, p, dim)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), atol=1e-12)
    probe = np.random.default_rng(2).standard_normal(x.shape)
    (out * tg.tensor(probe)).sum().backward()
    (tout * torch.tensor(probe)).sum().backward()
    np.testing.assert_allclose(ox.grad.numpy(), tx.grad.numpy(), atol=1e-10)
