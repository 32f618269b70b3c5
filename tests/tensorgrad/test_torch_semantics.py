"""Places where a plausible implementation silently differs from PyTorch: each is compared with
torch on the same inputs (the gradient conventions at 0, 0-d tensors with a dim, which mixed
dtypes are errors)."""
import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.nn  # noqa: F401  (tg.nn.functional below)

torch = pytest.importorskip("torch")


def _grads(lib, base, exponent):
    x = lib.tensor(base, dtype=lib.float64, requires_grad=True)
    e = lib.tensor(exponent, dtype=lib.float64, requires_grad=True)
    y = x ** e
    y.sum().backward()
    return [np.asarray(t.detach()) for t in (y, x.grad, e.grad)]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's log(0) and 0 ** -1 warnings
def test_pow_gradients_at_zero_follow_torch():
    base = [0.0, 0.0, 0.0, 0.0, 2.0, -1.0, 3.0]
    exponent = [0.0, 2.0, -1.0, 0.5, 0.0, 0.5, 1.0]
    for ours, theirs in zip(_grads(tg, base, exponent), _grads(torch, base, exponent)):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("power", [0, 0.5, 1.0, 2.0, 3])
def test_power_of_a_zero_base(power):
    """d/dx x**p at x = 0 (x**0 has gradient 0, not NaN) and d/dp 0**p."""
    results = []
    for lib in (tg, torch):
        x = lib.zeros(3, dtype=lib.float64, requires_grad=True)
        (x ** power).sum().backward()
        p = lib.tensor([power, power], dtype=lib.float64, requires_grad=True)
        (lib.tensor(0.0, dtype=lib.float64) ** p).sum().backward()
        results.append((np.asarray(x.grad), np.asarray(p.grad)))
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, -1])
def test_softmax_of_a_0d_tensor(fn, dim):
    results = []
    for lib in (tg, torch):
        x = lib.tensor(1.5, requires_grad=True)
        y = getattr(x, fn)(dim)
        (y * 3.0).backward()
        results.append((y.shape, np.asarray(y.detach()), np.asarray(x.grad)))
    assert tuple(results[0][0]) == tuple(results[1][0]) == ()
    np.testing.assert_allclose(results[0][1], results[1][1])
    np.testing.assert_allclose(results[0][2], results[1][2])


@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "round", "trunc"])
def test_rounding_backward_gives_zero_like_torch(name):
    grads = []
    for lib in (tg, torch):
        x = lib.tensor([-1.7, -0.2, 0.3, 2.6], requires_grad=True)
        (getattr(x, name)() * 2.0).sum().backward()
        grads.append(np.asarray(x.grad))
    np.testing.assert_array_equal(*grads)


def test_where_needs_a_bool_condition_as_in_torch():
    a, b = tg.ones(3), tg.zeros(3)
    with pytest.raises(RuntimeError):
        torch.where(torch.ones(3), torch.ones(3), torch.zeros(3))
    with pytest.raises(TypeError, match="where: expected a bool condition, got float32"):
        tg.where(tg.ones(3), a, b)
    assert tg.where(tg.ones(3) != 0, a, b).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("op", ["matmul", "linear"])
def test_matrix_products_do_not_promote_dtypes(op):
    """PyTorch promotes a + b across float32/float64 but raises for matrix products: a float64
    batch through a float32 layer is an error, not a silent switch of the model to float64."""
    def call(lib):
        x = lib.ones(2, 3, dtype=lib.float64)
        w = lib.ones(4, 3)
        return x @ w.T if op == "matmul" else lib.nn.functional.linear(x, w)
    with pytest.raises(RuntimeError):
        call(torch)
    with pytest.raises(RuntimeError, match=f"{op}: expected both operands to have the same "
                                           "dtype, got float64 and float32"):
        call(tg)
    assert (tg.ones(2, 3) + tg.ones(3, dtype=tg.float64)).dtype == tg.float64  # as torch
