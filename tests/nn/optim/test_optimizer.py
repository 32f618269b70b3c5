"""Optimizer base: parameter groups, zero_grad, closures, state_dict / load_state_dict."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import optim


def _model():
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


def _snapshot(value):
    """A deep copy with cloned tensors: state_dict() returns live references, as in PyTorch."""
    if isinstance(value, tg.Tensor):
        return value.clone()
    if isinstance(value, dict):
        return {k: _snapshot(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_snapshot(v) for v in value]
    return value


def _step(model, opt, x, y):
    opt.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    opt.step()


def test_groups_fill_defaults_and_keep_their_own_values():
    model = _model()
    decay = [p for n, p in model.named_parameters() if n.endswith("weight")]
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias")]
    opt = optim.AdamW([{"params": decay}, {"params": no_decay, "weight_decay": 0.0}], lr=0.1)
    assert [g["weight_decay"] for g in opt.param_groups] == [0.01, 0.0]
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.1]
    assert opt.param_groups[1]["betas"] == (0.9, 0.999)
    opt.add_param_group({"params": nn.Parameter(tg.zeros(2)), "lr": 0.5})
    assert len(opt.param_groups[2]["params"]) == 1 and opt.param_groups[2]["eps"] == 1e-8


def test_group_errors():
    p = nn.Parameter(tg.zeros(2))
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(ValueError, match=r"unknown hyper-parameter\(s\) \['weight_dacay'\]"):
        optim.SGD([{"params": [p], "weight_dacay": 0.1}], lr=0.1)
    with pytest.raises(TypeError, match="parameters must be Tensors"):
        optim.SGD([[1.0]], lr=0.1)


def test_zero_grad_and_skipping_parameters_without_gradients():
    a, b = nn.Parameter(tg.ones(2)), nn.Parameter(tg.ones(2))
    opt = optim.SGD([a, b], lr=0.5)
    (a * 3.0).sum().backward()
    opt.step()
    assert a.tolist() == [-0.5, -0.5] and b.tolist() == [1.0, 1.0]
    assert b not in opt.state and opt.state[a] == {}
    opt.zero_grad(set_to_none=False)
    assert a.grad.tolist() == [0.0, 0.0] and b.grad is None
    opt.zero_grad()
    assert a.grad is None


def test_step_with_closure_returns_the_loss():
    p = nn.Parameter(tg.tensor([2.0]))
    opt = optim.SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with tg.no_grad():  # the closure records a graph even when called from no_grad code
        assert opt.step(closure).item() == 4.0
    assert p.tolist() == [1.0]


@pytest.mark.parametrize("make", [
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    lambda ps: optim.Adam(ps, lr=0.01, weight_decay=0.01),
    lambda ps: optim.AdamW([{"params": ps[:2]}, {"params": ps[2:], "weight_decay": 0.0}]),
])
def test_state_dict_resumes_exactly(make):
    x, y = tg.randn(6, 3), tg.randn(6, 2)
    model = _model()
    copy = _model()
    copy.load_state_dict(model.state_dict())
    opt = make(list(model.parameters()))
    for _ in range(3):
        _step(model, opt, x, y)
    saved_model, saved_opt = _snapshot(model.state_dict()), _snapshot(opt.state_dict())
    assert set(saved_opt) == {"state", "param_groups"}
    assert sorted(saved_opt["state"]) == list(range(len(list(model.parameters()))))
    for _ in range(3):
        _step(model, opt, x, y)
    copy.load_state_dict(saved_model)
    resumed = make(list(copy.parameters()))
    resumed.load_state_dict(saved_opt)
    for _ in range(3):
        _step(copy, resumed, x, y)
    for (name, a), b in zip(model.named_parameters(), copy.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy(), err_msg=name)


def test_state_dict_layout_matches_torch():
    torch = pytest.importorskip("torch")
    ours = optim.Adam([nn.Parameter(tg.ones(2)), nn.Parameter(tg.ones(3))], lr=0.1)
    theirs = torch.optim.Adam([torch.ones(2, requires_grad=True),
                               torch.ones(3, requires_grad=True)], lr=0.1)
    for opt, params in ((ours, ours.param_groups[0]["params"]),
                        (theirs, theirs.param_groups[0]["params"])):
        for p in params:
            (p * p).sum().backward()
        opt.step()
    sd, tsd = ours.state_dict(), theirs.state_dict()
    assert sd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"] == [0, 1]
    assert set(sd["param_groups"][0]) <= set(tsd["param_groups"][0])
    assert set(sd["state"][1]) == set(tsd["state"][1]) == {"step", "exp_avg", "exp_avg_sq"}
    np.testing.assert_allclose(sd["state"][1]["exp_avg_sq"].numpy(),
                               tsd["state"][1]["exp_avg_sq"].numpy(), rtol=1e-6)


def test_load_state_dict_rejects_another_layout():
    opt = optim.SGD([nn.Parameter(tg.ones(2))], lr=0.1)
    other = optim.SGD([nn.Parameter(tg.ones(2)), nn.Parameter(tg.ones(2))], lr=0.1)
    with pytest.raises(ValueError, match=r"groups of sizes \[2\], this optimizer has \[1\]"):
        opt.load_state_dict(other.state_dict())


def test_repr_lists_groups():
    opt = optim.SGD([nn.Parameter(tg.ones(2))], lr=0.1)
    assert repr(opt).startswith("SGD (\n  group 0: 1 tensor(s), lr=0.1, momentum=0.0")
