"""Activation modules against PyTorch's: constructors, reprs, forward values and gradients, the
inplace flag, and PReLU's parameter."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn

torch = pytest.importorskip("torch")

MODULES = [
    ("ReLU", ()), ("ReLU", (True,)), ("ReLU6", ()), ("ReLU6", (True,)), ("SELU", ()),
    ("SiLU", ()), ("Mish", ()), ("Hardsigmoid", ()), ("Hardswish", (True,)),
    ("LeakyReLU", ()), ("LeakyReLU", (0.2, True)), ("ELU", ()), ("ELU", (0.5,)),
    ("CELU", (2.0, True)), ("Hardtanh", ()), ("Hardtanh", (-2.0, 0.5)), ("Threshold", (0.1, 20.0)),
    ("GELU", ()), ("GELU", ("tanh",)), ("Softplus", ()), ("Softplus", (2.0, 5.0)),
    ("Softshrink", ()), ("Softshrink", (0.3,)), ("Hardshrink", (0.7,)), ("Sigmoid", ()),
    ("Tanh", ()), ("Softsign", ()), ("LogSigmoid", ()), ("Tanhshrink", ()), ("GLU", ()),
    ("GLU", (1,)), ("Softmax", ()), ("Softmax", (0,)), ("Softmin", (1,)), ("LogSoftmax", (-1,)),
    ("LogSoftmax", ()), ("PReLU", ()), ("PReLU", (4, 0.1)), ("Softmax2d", ()),
]


@pytest.mark.parametrize("name, args", MODULES, ids=[f"{m}{a}" for m, a in MODULES])
def test_module_matches_torch(name, args):
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(0).standard_normal((3, 4, 2)).astype(np.float32) * 3
    inplace = getattr(theirs, "inplace", False)
    tx = torch.tensor(x, requires_grad=True)
    tin = tx * 1.0 if inplace else tx  # torch cannot run an in-place op on a leaf
    expected = theirs(tin)
    if inplace:  # ours refuses in-place updates of tracked tensors: check the values alone
        out = ours(tg.tensor(x))
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-6, atol=1e-6)
        return
    xt = tg.tensor(x, requires_grad=True)
    out = ours(xt)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-6,
                               atol=1e-6)
    probe = np.random.default_rng(1).standard_normal(out.shape).astype(np.float32)
    (out * tg.tensor(probe)).sum().backward()
    (expected * torch.tensor(probe)).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    for p, tp in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_inplace_modules_write_into_their_input():
    x = tg.tensor([-1.0, 0.5, 2.0])
    assert nn.ReLU(inplace=True)(x) is x and x.tolist() == [0.0, 0.5, 2.0]
    y = tg.tensor([-1.0, 0.5, 8.0])
    assert nn.ReLU6(True)(y) is y and y.tolist() == [0.0, 0.5, 6.0]
    z = tg.tensor([-1.0, 0.5, 8.0])
    assert nn.ReLU()(z) is not z and z.tolist() == [-1.0, 0.5, 8.0]


def test_prelu_weight_is_a_parameter_that_loads_from_torch():
    theirs = torch.nn.PReLU(3, init=0.3)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor([0.1, -0.2, 0.5]))
    ours = nn.PReLU(3)
    assert list(ours.state_dict()) == ["weight"] and ours.num_parameters() == 3
    assert "PReLU" in nn.Sequential(nn.Linear(2, 3), ours).summary()
    assert ours.weight.tolist() == pytest.approx([0.25] * 3)
    ours.load_state_dict({"weight": tg.tensor(theirs.weight.detach().numpy())})
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(ours(tg.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-6)
    assert nn.PReLU(dtype=tg.float64).weight.dtype == tg.float64


def test_modules_keep_float32_and_check_arguments():
    x = tg.randn(2, 4)
    for module in (nn.ELU(), nn.Softplus(), nn.Mish(), nn.PReLU(), nn.GLU(), nn.Softmin(1)):
        assert module(x).dtype == tg.float32
    with pytest.raises(ValueError, match="Hardtanh: max_val"):
        nn.Hardtanh(1.0, -1.0)
    with pytest.raises(ValueError, match="GELU: approximate must be"):
        nn.GELU("fast")
    with pytest.raises(ValueError, match=r"Softmax2d: expected \(N, C, H, W\) or \(C, H, W\)"):
        nn.Softmax2d()(x)
