"""The checker every PyTorch parity test uses: values and gradients of one function against
torch's on the same float64 arrays, then a float32 rerun that must stay float32."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("hypothesis")
from hypothesis import settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import tensorgrad as tg  # noqa: E402


FAST = settings(max_examples=12, deadline=None, derandomize=True)
seeds = st.integers(0, 2 ** 16)


class Const:
    """An argument that stays constant (no gradient) on both sides, e.g. class weights."""

    def __init__(self, array):
        self.array = array


def _pair(value, float_dtype):
    """(tensorgrad, torch, requires_grad) versions of one argument; float arrays require grad."""
    grad = isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind == "f"
    if isinstance(value, Const):
        value = value.array
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        return value, value, False
    if value.dtype.kind == "f":
        value = value.astype(float_dtype)
    return tg.tensor(value, requires_grad=grad), torch.tensor(value, requires_grad=grad), grad


def _tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _close(ours, theirs, what, rtol, atol):
    np.testing.assert_allclose(np.asarray(ours), theirs.detach().numpy(), rtol=rtol, atol=atol,
                               equal_nan=True, err_msg=what)


def check(ours_fn, torch_fn, *args, rtol=1e-7, atol=1e-10, seed=0):
    """Compare ours_fn and torch_fn on `args` (NumPy arrays become tensors on each side)."""
    converted = [_pair(a, np.float64) for a in args]
    ours = _tuple(ours_fn(*(c[0] for c in converted)))
    theirs = _tuple(torch_fn(*(c[1] for c in converted)))
    assert len(ours) == len(theirs)
    for i, (o, t) in enumerate(zip(ours, theirs)):
        assert o.shape == tuple(t.shape), f"output {i}: shape {o.shape} != {tuple(t.shape)}"
        assert str(o.dtype) == str(t.dtype).replace("torch.", ""), f"output {i}: {o.dtype}"
        assert o.requires_grad == t.requires_grad, f"output {i}: requires_grad"
        _close(o.detach(), t, f"output {i}", rtol, atol)

    leaves = [(c[0], c[1]) for c in converted if c[2]]
    outputs = [(o, t) for o, t in zip(ours, theirs) if t.requires_grad]
    if leaves and outputs:
        rng = np.random.default_rng(seed)
        probes = [rng.standard_normal(o.shape) for o, _ in outputs]
        got = tg.grad([o for o, _ in outputs], [x for x, _ in leaves],
                      [tg.tensor(p, dtype=tg.float64) for p in probes], allow_unused=True)
        want = torch.autograd.grad([t for _, t in outputs], [x for _, x in leaves],
                                   [torch.tensor(p, dtype=torch.float64) for p in probes],
                                   allow_unused=True)
        for i, (g, w, (x, _)) in enumerate(zip(got, want, leaves)):
            g = np.zeros(x.shape) if g is None else np.asarray(g)
            w = torch.zeros(x.shape, dtype=torch.float64) if w is None else w
            _close(g, w, f"gradient of input {i}", rtol, atol)

    single = [_pair(a, np.float32)[0] for a in args]
    for o in _tuple(ours_fn(*single)):
        assert o.dtype.kind != "f" or o.dtype == tg.float32, f"float32 input gave {o.dtype}"


def values(seed, *shapes_, domain="real"):
    """Float64 arrays for `shapes_`: 'real' normal, 'positive' >= 0.1, 'nonzero' |x| >= 0.1."""
    rng = np.random.default_rng(seed)
    out = []
    for shape in shapes_:
        x = rng.standard_normal(shape)
        if domain == "positive":
            x = np.abs(x) + 0.1
        elif domain == "nonzero":
            x = np.sign(x + 1e-12) * (np.abs(x) + 0.1)
        out.append(np.asarray(x))
    return out if len(out) > 1 else out[0]
