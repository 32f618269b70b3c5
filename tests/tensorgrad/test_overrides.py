"""Every compiled override in the registry (tensorgrad/backend/overrides.py) against the reference
it overrides: the same arguments to both, then the results and whatever they wrote in place.
The overrides of a primitive's forward are also checked through the primitive: its gradient,
whose VJP runs the overridden VJP step, against the composite's, to second order."""
import copy

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.autograd import PRIMITIVES
from tensorgrad.backend import get_backend
from tensorgrad.backend.overrides import OVERRIDES, REFERENCES

CPU = get_backend("cpu")
if CPU.kernels() is None:  # (loads them: registers the overrides)
    pytest.skip("no compiled overrides: numba is not installed (pip install tensorgrad[fast]) "
                "or TENSORGRAD_NUMBA=0", allow_module_level=True)


def _rng(dtype):
    rng = np.random.default_rng(0)
    return lambda *shape: rng.standard_normal(shape).astype(dtype)


def _gelu_vjp(r, approximate):
    x = r(6, 33)
    _, gate = REFERENCES["gelu"](CPU, x, approximate)
    return (x, gate, r(6, 33), approximate), {}


def _layer_norm_vjp(r):
    x, w = r(3, 5, 40), r(40)
    _, (mean, rstd) = REFERENCES["layer_norm"](CPU, x, w, r(40), (2,), 1e-5)
    return (x, mean, rstd, w, r(3, 5, 40), (2,), True, True), {}


def _rms_norm_vjp(r):
    x, w = r(3, 5, 40), r(40)
    _, rstd = REFERENCES["rms_norm"](CPU, x, w, (2,), 1e-5)
    return (x, rstd, w, r(3, 5, 40), (2,), True), {}


def _scaled_softmax(r):
    logits = r(7, 19)
    top, total = REFERENCES["cross_entropy.max_and_sum_exp"](CPU, logits.copy())
    return (logits, top, total, r(7)), {}


def _online_step(r):
    s, top = r(9, 21), r(9, 1)
    return (s, top, r(9, 5), np.abs(r(9, 1)) + 1), {}


def _masked(r):
    s = r(2, 6, 7)
    s[:, 1] = np.finfo(s.dtype).min  # a row with nothing left: it becomes 0
    s[:, 2, :3] = np.finfo(s.dtype).min
    return (s, False, True, 1.0), {}


def _whole_vjp(r):
    q, k, v = r(2, 3, 6, 4), r(2, 3, 6, 4), r(2, 3, 6, 5)
    out, p = REFERENCES["attention.whole"](CPU, q, k, v, None, None, True, 0.3, None)
    return (q, k, v, None, 0.3, r(2, 3, 6, 5), out, p, (True, True, True, False)), {}


def _tiled(r, case):
    """Batch dims (2, 3) with k and v broadcast over the heads or not, or grouped-query
    attention's (B, H_kv, G) = (2, 2, 3), as scaled_dot_product_attention regroups them."""
    q = r(2, 2, 3, 40, 4) if case == "groups" else r(2, 3, 40, 4)
    heads = {"": (2, 3), "k, v broadcast": (2, 1), "groups": (2, 2, 1)}[case]
    return (q, r(*heads, 40, 4), r(*heads, 40, 3), None, None, True, 0.5, 8, 16), {}


def _tiled_vjp(r, case):
    (q, k, v, *rest), _ = _tiled(r, case)
    out, lse = REFERENCES["attention.tiled"](CPU, q, k, v, *rest)
    return (q, k, v, None, None, True, 0.5, r(*out.shape), out, lse, (True, True, True, False),
            8, 16), {}


def _adam(decoupled):
    def case(r):
        param, grad, m = r(33, 65), r(33, 65), r(33, 65)
        return (param, grad, m, np.abs(r(33, 65)), None, 1e-2, (0.9, 0.99), 1e-8, 0.1,
                decoupled, 3), {}
    return case


# name -> {case name: r -> (args, kwargs) of the reference, less xp}; r(*shape) draws arrays
CASES = {
    "relu": {"": lambda r: ((r(37, 129),), {})},
    "relu.vjp": {"": lambda r: ((r(37, 129), r(37, 129)), {})},
    "gelu": {a: lambda r, a=a: ((r(6, 33) * 3,), {"approximate": a}) for a in ("none", "tanh")},
    "gelu.vjp": {a: lambda r, a=a: _gelu_vjp(r, a) for a in ("none", "tanh")},
    "layer_norm": {"": lambda r: ((r(3, 5, 40), r(40), r(40), (2,), 1e-5), {})},
    "layer_norm.vjp": {"": _layer_norm_vjp},
    "rms_norm": {"": lambda r: ((r(3, 5, 40), r(40), (2,), 1e-5), {})},
    "rms_norm.vjp": {"": _rms_norm_vjp},
    "cross_entropy.max_and_sum_exp": {"": lambda r: ((r(7, 19) * 4,), {})},
    "cross_entropy.scaled_softmax": {"": _scaled_softmax},
    "linear.column_sums": {"": lambda r: ((r(256, 160),), {})},
    "adam_step": {"adamw": _adam(True), "adam": _adam(False)},
    "add_scaled_": {"": lambda r: ((r(33, 65), r(33, 65), -0.25), {})},
    "attention.hide_future_": {"": lambda r: ((r(8, 16), slice(8, 16), slice(4, 20),
                                               np.float32(-1e30)), {})},
    "attention.online_step_": {"": _online_step},
    "attention.exp_shifted_": {"": lambda r: ((r(9, 21), np.abs(r(9, 1)) + 3), {})},
    "attention.softmax_rows_": {"causal, scaled": lambda r: ((r(2, 6, 7), True, False, 0.3), {}),
                                "masked": _masked},
    "attention.softmax_backward_": {"": lambda r: ((r(2, 6, 7), np.abs(r(2, 6, 7)), r(2, 6, 1),
                                                    None, 0.3), {})},
    "attention.whole": {c: lambda r, c=c: ((r(2, 3, 6, 4), r(2, 3, 6, 4), r(2, 3, 6, 5), None,
                                            None, c, 0.3, None), {}) for c in (True, False)},
    "attention.whole_vjp": {"": _whole_vjp},
    "attention.one_query": {"": lambda r: ((r(2, 3, 1, 4), r(2, 3, 6, 4), r(2, 3, 6, 5), 0.3), {}),
                            "cache views": lambda r: ((r(1, 3, 1, 4), r(1, 3, 9, 4)[:, :, :6],
                                                       r(1, 3, 9, 5)[:, :, :6], 0.5), {})},
    "attention.tiled": {c: lambda r, c=c: _tiled(r, c) for c in ("", "k, v broadcast", "groups")},
    "attention.tiled_vjp": {c: lambda r, c=c: _tiled_vjp(r, c)
                            for c in ("", "k, v broadcast", "groups")},
}
REGISTERED = sorted(name for name, found in OVERRIDES.items() if found)


def test_every_override_has_a_case():
    assert REGISTERED, "no override registered: the kernels did not load"
    missing = set(REGISTERED) - set(CASES)
    assert not missing, f"overrides without a case: {missing}"
    assert set(CASES) <= set(REFERENCES), f"cases of unknown names: {set(CASES) - set(REFERENCES)}"


def _arrays(value):
    """The arrays in a result or argument list, in order (nested tuples and lists opened)."""
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _arrays(v)]
    return []


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, case", [(n, c) for n in sorted(CASES) for c in CASES[n]])
def test_override_matches_its_reference(name, case, dtype, request):
    if name == "linear.column_sums" and tg.get_num_threads() < 2:
        before = tg.get_num_threads()
        request.addfinalizer(lambda: tg.set_num_threads(before))
        tg.set_num_threads(2)  # on one thread it declines: the BLAS product is the faster
    args, kwargs = CASES[name][case](_rng(dtype))
    checked = 0
    for override in OVERRIDES[name]:
        if not override.supports(*args, **kwargs):
            continue
        ours, theirs = copy.deepcopy(args), copy.deepcopy(args)
        got = override.run(*ours, **kwargs)
        if got is NotImplemented:
            pytest.skip(f"{override} declined (its BLAS is missing: pip install tensorgrad[mkl])")
        want = REFERENCES[name](CPU, *theirs, **kwargs)
        tolerance = 1e-10 if dtype == np.float64 else 2e-5
        for a, b in zip(_arrays((got, ours)), _arrays((want, theirs)), strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance)
        checked += 1
    assert checked, f"no override of {name} takes its case {case!r}"


# The primitives whose forward is overridden, with inputs: their VJP steps are overridden too.
PRIMITIVE_CASES = {
    "relu": lambda x: tg.relu(x),
    "gelu": lambda x: tg.gelu(x) + tg.gelu(x, approximate="tanh"),
    "layer_norm": lambda x: tg.layer_norm(x, (6,), tg.linspace(0.5, 1.5, 6, dtype=tg.float64),
                                          tg.linspace(-1, 1, 6, dtype=tg.float64)),
    "rms_norm": lambda x: tg.rms_norm(x, (6,), tg.linspace(0.5, 1.5, 6, dtype=tg.float64)),
}


def test_every_overridden_primitive_has_a_case():
    overridden = {name for name in REGISTERED if name in PRIMITIVES}
    assert overridden <= set(PRIMITIVE_CASES), overridden - set(PRIMITIVE_CASES)


@pytest.mark.parametrize("name", sorted(PRIMITIVE_CASES))
def test_overridden_primitive_differentiates_as_its_composite(name, monkeypatch):
    """First order through the overridden forward and VJP step, second order through the
    composite (create_graph), both against the reference with the overrides off."""
    x0 = np.random.default_rng(1).standard_normal((4, 6)) * 2
    results = []
    for kernels in (CPU.kernels(), None):
        monkeypatch.setattr(CPU, "_kernels", kernels)
        x = tg.tensor(x0, requires_grad=True)
        y = PRIMITIVE_CASES[name](x)
        probe = tg.tensor(np.cos(np.arange(y.numel()).reshape(y.shape)))
        gx, = tg.grad(y, [x], probe, create_graph=True)
        ggx, = tg.grad((gx * gx * x).sum(), [x])  # x too: relu's gx alone has no graph
        results.append((y.detach().numpy(), gx.detach().numpy(), ggx.numpy()))
    for ours, reference in zip(*results):
        np.testing.assert_allclose(ours, reference, rtol=1e-10, atol=1e-12)
