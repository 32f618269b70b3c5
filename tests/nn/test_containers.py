"""ParameterList and ParameterDict: registration, names in state_dict and parameters() as in
PyTorch, and a torch state_dict loading strictly."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn


def _pair(lib):
    class Mixture(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.weights = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2, 3)), lib.zeros(3)])
            self.weights.append(lib.nn.Parameter(lib.full((1,), 2.0)))
            self.extra = lib.nn.ParameterDict({"scale": lib.nn.Parameter(lib.ones(3))})
            self.extra["shift"] = lib.zeros(3)  # a plain tensor becomes a Parameter

        def forward(self, x):
            h = x @ self.weights[0] + self.weights[1]
            return (h * self.extra["scale"] + self.extra["shift"]) * self.weights[-1]

    return Mixture()


def test_names_parameters_and_forward_equal_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = _pair(tg), _pair(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in ours.parameters())
    state = {k: tg.tensor(v.detach().numpy() + 0.5) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in state.items()})
    x = np.random.default_rng(0).standard_normal((4, 2)).astype(np.float32)
    out, t_out = ours(tg.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol=1e-6)
    out.sum().backward()
    t_out.sum().backward()
    for p, t in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-5)


def test_list_and_dict_behave_like_python_containers():
    plist = nn.ParameterList([tg.ones(1), tg.ones(2)])
    assert len(plist) == 2 and plist[-1].shape == (2,) and len(plist[:1]) == 1
    plist[0] = tg.zeros(4)
    assert isinstance(plist[0], nn.Parameter) and plist[0].shape == (4,)
    with pytest.raises(IndexError, match="out of range"):
        plist[5]
    pdict = nn.ParameterDict([("a", tg.ones(1)), ("b", tg.ones(2))])
    assert list(pdict) == ["a", "b"] and "a" in pdict and pdict.get("z") is None
    assert pdict.pop("a").shape == (1,) and list(pdict.keys()) == ["b"]
    del pdict["b"]
    assert len(pdict) == 0 and list(pdict.parameters()) == []
    with pytest.raises(KeyError, match="no key 'c'"):
        pdict["c"]
    with pytest.raises(TypeError, match="expected a Parameter or a Tensor"):
        pdict["c"] = 3.0
