"""Layers against PyTorch on the same weights (forward and gradients), default initialisations,
dtypes and errors."""
import math

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn


def _torch_twin(torch, ours, theirs):
    """Copy our layer's parameters into the torch layer, by name."""
    with torch.no_grad():
        for name, p in ours.named_parameters():
            dict(theirs.named_parameters())[name].copy_(torch.from_numpy(p.detach().numpy()))
    return theirs


def _check_against_torch(torch, ours, theirs, x, device, atol=1e-5):
    """Forward and backward on x (a float tensor or integer ids) in both frameworks, ours on
    `device`."""
    theirs = _torch_twin(torch, ours, theirs)
    ours.to(device)
    floating = x.dtype.kind == "f"
    tx = torch.from_numpy(x.numpy().copy()).requires_grad_(floating)
    x = x.to(device)
    if floating:
        x.requires_grad_()
    out, tout = ours(x), theirs(tx)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), atol=atol, rtol=1e-5)
    weights = tg.randn(*out.shape)
    (out * weights.to(device)).sum().backward()
    (tout * torch.from_numpy(weights.numpy())).sum().backward()
    if floating:
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=atol, rtol=1e-5)
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), dict(theirs.named_parameters())[name].grad,
                                   atol=atol, rtol=1e-5, err_msg=name)


@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(bias, device):
    torch = pytest.importorskip("torch")
    ours = nn.Linear(5, 3, bias=bias)
    assert (ours.bias is None) == (not bias)
    _check_against_torch(torch, ours, torch.nn.Linear(5, 3, bias=bias), tg.randn(2, 4, 5), device)


def test_embedding_matches_torch_and_freezes_the_padding_row(device):
    torch = pytest.importorskip("torch")
    ours = nn.Embedding(7, 4, padding_idx=2)
    assert ours.weight[2].tolist() == [0.0] * 4
    ids = tg.tensor([[1, 2, 2], [6, 1, 0]])
    _check_against_torch(torch, ours, torch.nn.Embedding(7, 4, padding_idx=2), ids, device)
    assert ours.weight.grad[2].tolist() == [0.0] * 4
    assert nn.Embedding(7, 4, padding_idx=-1).padding_idx == 6


@pytest.mark.parametrize("affine,bias", [(True, True), (True, False), (False, False)])
def test_layer_norm_matches_torch(affine, bias, device):
    torch = pytest.importorskip("torch")
    ours = nn.LayerNorm(6, eps=1e-5, elementwise_affine=affine, bias=bias)
    with tg.no_grad():
        for p in ours.parameters():
            p.copy_(tg.randn(*p.shape))
    theirs = torch.nn.LayerNorm(6, elementwise_affine=affine, bias=bias)
    _check_against_torch(torch, ours, theirs, tg.randn(3, 2, 6) * 3.0 + 1.0, device)


def test_layer_norm_over_two_dims_matches_torch(device):
    torch = pytest.importorskip("torch")
    ours = nn.LayerNorm((2, 3))
    _check_against_torch(torch, ours, torch.nn.LayerNorm((2, 3)), tg.randn(4, 2, 3), device)


@pytest.mark.parametrize("eps", [None, 1e-6])
def test_rms_norm_matches_torch(eps, device):
    torch = pytest.importorskip("torch")
    ours = nn.RMSNorm(6, eps=eps)
    with tg.no_grad():
        ours.weight.copy_(tg.randn(6))
    _check_against_torch(torch, ours, torch.nn.RMSNorm(6, eps=eps), tg.randn(3, 6), device)


@pytest.mark.parametrize("name,kwargs", [
    ("ReLU", {}), ("GELU", {}), ("GELU", {"approximate": "tanh"}), ("SiLU", {}), ("Tanh", {}),
    ("Softmax", {"dim": -1}), ("Softmax", {"dim": 0}), ("Identity", {}),
])
def test_activations_match_torch(name, kwargs, device):
    torch = pytest.importorskip("torch")
    x = tg.randn(4, 5) * 3.0
    ours, theirs = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    _check_against_torch(torch, ours, theirs, x, device)


def test_dropout_scales_in_training_and_is_identity_in_eval():
    drop = nn.Dropout(0.25)
    x = tg.ones(200, 100)
    y = drop(x)
    kept = y.numpy() != 0
    assert abs(kept.mean() - 0.75) < 0.01
    np.testing.assert_allclose(y.numpy()[kept], 1 / 0.75, rtol=1e-6)
    assert drop.eval()(x) is x
    with pytest.raises(ValueError, match="p must be in"):
        nn.Dropout(1.5)


def test_identity_dropout_still_runs_forward_hooks():
    """Eval-mode dropout skips the module call only while no hook would see it."""
    drop, x = nn.Dropout(0.5).eval(), tg.ones(3)
    seen = []
    handle = drop.register_forward_hook(lambda module, args, out: seen.append(out) or out * 2)
    np.testing.assert_array_equal(drop(x).numpy(), np.full(3, 2.0))
    assert seen and seen[0] is x
    handle.remove()
    assert drop(x) is x and len(seen) == 1


def test_default_initialisations_follow_pytorch():
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound
    assert np.abs(b).max() <= bound and b.std() > 0.5 * bound / math.sqrt(3)
    emb = nn.Embedding(300, 200).weight.detach().numpy()
    assert abs(emb.mean()) < 0.01 and abs(emb.std() - 1.0) < 0.01
    norm = nn.LayerNorm(8)
    assert norm.weight.tolist() == [1.0] * 8 and norm.bias.tolist() == [0.0] * 8
    assert nn.RMSNorm(8).weight.tolist() == [1.0] * 8


def test_initialisation_follows_the_seed():
    tg.manual_seed(3)
    a = nn.Linear(4, 4).weight.tolist()
    tg.manual_seed(3)
    assert nn.Linear(4, 4).weight.tolist() == a


def test_layers_keep_float32_and_accept_dtype():
    x = tg.randn(2, 8)
    for layer in (nn.Linear(8, 8), nn.LayerNorm(8), nn.RMSNorm(8), nn.GELU(), nn.Dropout(0.1)):
        assert layer(x).dtype == tg.float32
        assert all(p.dtype == tg.float32 for p in layer.parameters())
    lin = nn.Linear(8, 2, dtype=tg.float64)
    assert lin.weight.dtype == tg.float64 and lin(x.double()).dtype == tg.float64


def test_linear_error_names_the_shapes():
    with pytest.raises(ValueError, match=r"Linear: expected input of shape \(\*, 3\), got \(2, 4"):
        nn.Linear(3, 2)(tg.randn(2, 4))


def test_extra_reprs():
    assert repr(nn.Embedding(5, 2, padding_idx=0)) == "Embedding(5, 2, padding_idx=0)"
    assert repr(nn.LayerNorm(4)) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True)"
    assert repr(nn.Dropout(0.1)) == "Dropout(p=0.1)"
    assert repr(nn.Softmax(dim=1)) == "Softmax(dim=1)"


def test_a_dropout_subclass_with_its_own_forward_is_still_called_in_eval():
    class Scaled(nn.Dropout):
        def forward(self, x):
            return super().forward(x) * 2.0

    layer = Scaled(0.5).eval()
    x = tg.ones(3)
    np.testing.assert_array_equal(layer(x).numpy(), [2.0, 2.0, 2.0])


def test_embedding_from_pretrained_as_torch():
    torch = pytest.importorskip("torch")
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    ours = tg.nn.Embedding.from_pretrained(tg.tensor(table))
    theirs = torch.nn.Embedding.from_pretrained(torch.tensor(table))
    assert ours.weight.requires_grad is theirs.weight.requires_grad is False
    np.testing.assert_array_equal(ours(tg.tensor([3, 1])).numpy(),
                                  theirs(torch.tensor([3, 1])).numpy())
    trainable = tg.nn.Embedding.from_pretrained(tg.tensor(table), freeze=False, padding_idx=0)
    assert trainable.weight.requires_grad and trainable.padding_idx == 0
    assert trainable.weight[0].tolist() == [0.0, 1.0, 2.0]  # copied as given, as torch does
