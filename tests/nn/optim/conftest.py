"""A small regression problem run side by side in tensorgrad and PyTorch."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn


@pytest.fixture
def same_trajectory():
    """same_trajectory(make_ours, make_theirs): run 20 optimizer steps in both frameworks and
    assert the parameters agree to 1e-5 after every step. make_*(weight, bias) builds an
    optimizer over the two tensors (so tests can form parameter groups)."""
    torch = pytest.importorskip("torch")

    def run(make_ours, make_theirs, steps=20, atol=1e-5):
        rng = np.random.default_rng(0)
        x, y = rng.standard_normal((8, 4), "float32"), rng.standard_normal((8, 3), "float32")
        w0, b0 = rng.standard_normal((4, 3), "float32"), rng.standard_normal(3, "float32")
        w, b = nn.Parameter(tg.tensor(w0)), nn.Parameter(tg.tensor(b0))
        tw, tb = torch.tensor(w0, requires_grad=True), torch.tensor(b0, requires_grad=True)
        ours, theirs = make_ours(w, b), make_theirs(tw, tb)
        for step in range(1, steps + 1):
            ours.zero_grad()
            ((tg.tanh(tg.tensor(x) @ w + b) - tg.tensor(y)) ** 2).mean().backward()
            ours.step()
            theirs.zero_grad()
            ((torch.tanh(torch.tensor(x) @ tw + tb) - torch.tensor(y)) ** 2).mean().backward()
            theirs.step()
            for a, t in ((w, tw), (b, tb)):
                np.testing.assert_allclose(a.detach().numpy(), t.detach().numpy(), atol=atol,
                                           rtol=1e-5, err_msg=f"step {step}")
        assert w.dtype == b.dtype == tg.float32

    return run


@pytest.fixture(params=["kernel", "array"])
def update_path(request, monkeypatch):
    """Run the test once through the backend's compiled update (when it has one) and once
    through the reference. Yields the path and a list that collects each compiled call."""
    from tensorgrad.backend.overrides import OVERRIDES

    backend = tg.backend.get_backend("cpu")
    calls = []
    if request.param == "kernel":
        if backend.kernels() is None:
            pytest.skip("the CPU backend has no fused kernels here (Numba missing or disabled)")
        override = OVERRIDES["adam_step"][0]
        real = override.run
        monkeypatch.setattr(override, "run", lambda *a: calls.append(a) or real(*a))
    else:
        monkeypatch.setattr(backend, "kernels", lambda *arrays, family=None: None)
    yield request.param, calls
