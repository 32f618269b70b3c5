"""Everyday PyTorch functions, round 2, against PyTorch: closeness tests, the matrix-product
family, elementwise helpers, broadcasting/search helpers and nn.functional distances, shuffles
and channel dropout (values and gradients in float64, broadcasts, 0-d and empty where they
apply)."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_torch_parity import FAST, check, seeds

import tensorgrad as tg

torch = pytest.importorskip("torch")
F = torch.nn.functional

pairs = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0,
                                          max_side=4)


# --- 1. isclose / allclose / equal ----------------------------------------------------------------
SPECIAL = np.array([0.0, 1.0, -1.0, 1e-9, np.inf, -np.inf, np.nan, 1.0 + 1e-6, 1.0 + 1e-4])


@FAST
@given(shapes_=pairs, seed=seeds, equal_nan=st.booleans(),
       tol=st.sampled_from([(1e-5, 1e-8), (0.0, 0.0), (1e-3, 0.0), (0.0, 1e-3)]))
def test_isclose(shapes_, seed, equal_nan, tol):
    rng = np.random.default_rng(seed)
    a, b = (rng.choice(SPECIAL, s) for s in shapes_.input_shapes)
    rtol, atol = tol
    check(lambda x, y: tg.isclose(x, y, rtol, atol, equal_nan),
          lambda x, y: torch.isclose(x, y, rtol, atol, equal_nan), a, b)
    ta, tb = torch.tensor(a), torch.tensor(b)
    assert tg.tensor(a).allclose(tg.tensor(b), rtol, atol, equal_nan) == \
        torch.allclose(ta, tb, rtol, atol, equal_nan)


def test_isclose_integers_and_errors():
    a, b = np.array([1, 5, -3, 100]), np.array([1, 6, -1, 101])
    check(lambda x, y: tg.isclose(x, y, atol=1), lambda x, y: torch.isclose(x, y, atol=1), a, b)
    check(lambda x, y: x.isclose(y, rtol=0.01), lambda x, y: x.isclose(y, rtol=0.01), a, b)
    with pytest.raises(RuntimeError, match="isclose: .*same dtype.*int64.*float"):
        tg.isclose(tg.tensor([1]), tg.tensor([1.0]))
    with pytest.raises(ValueError, match="isclose: .*broadcast"):
        tg.isclose(tg.zeros(2), tg.zeros(3))


@pytest.mark.parametrize("a, b", [
    ([1.0, 2.0], [1.0, 2.0]), ([1.0, 2.0], [1.0, 2.5]), ([1.0, 2.0], [1.0]),
    ([[1.0, 2.0]], [1.0, 2.0]), ([1, 2], [1.0, 2.0]), ([float("nan")], [float("nan")]),
    ([], []), (3.0, 3.0), (3.0, [3.0]),
])
def test_equal(a, b):
    assert tg.equal(tg.tensor(a), tg.tensor(b)) == torch.equal(torch.tensor(a), torch.tensor(b))
    assert tg.tensor(a).equal(tg.tensor(b)) == torch.equal(torch.tensor(a), torch.tensor(b))
