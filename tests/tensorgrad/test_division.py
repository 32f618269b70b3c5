"""Division ops against PyTorch: true and rounded division, floor_divide, remainder, fmod and
their operators, on integers (negatives, broadcasting), floats (zero divisors) and gradients."""
import numpy as np
import pytest

import tensorgrad as tg

torch = pytest.importorskip("torch")

INTS = np.array([[7, -7, 0, 9], [-9, 5, -5, 1]])
INT_DIVISORS = np.array([2, -2, 3, -4])
FLOATS = np.array([[5.5, -5.5, 0.0, 2.25], [-7.0, 1.0, -1.0, 0.0]])
FLOAT_DIVISORS = np.array([2.0, -1.5, 0.0, 0.0])  # zero divisors: inf, -inf and nan

OPS = {
    "div": (lambda a, b: tg.div(a, b), lambda a, b: torch.div(a, b)),
    "div_trunc": (lambda a, b: a.div(b, rounding_mode="trunc"),
                  lambda a, b: a.div(b, rounding_mode="trunc")),
    "div_floor": (lambda a, b: tg.divide(a, b, rounding_mode="floor"),
                  lambda a, b: torch.divide(a, b, rounding_mode="floor")),
    "floordiv": (lambda a, b: a // b, lambda a, b: a // b),
    "floor_divide": (tg.floor_divide, torch.floor_divide),
    "mod": (lambda a, b: a % b, lambda a, b: a % b),
    "remainder": (tg.remainder, torch.remainder),
    "fmod": (lambda a, b: a.fmod(b), lambda a, b: a.fmod(b)),
    "true_divide": (lambda a, b: a.true_divide(b), lambda a, b: a.true_divide(b)),
}


def _same(ours, theirs):
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(np.asarray(ours.detach()), theirs.detach().numpy())


def _both(fn_pair, *arrays):
    ours, theirs = fn_pair
    return ours(*(tg.tensor(a) for a in arrays)), theirs(*(torch.tensor(a) for a in arrays))


@pytest.mark.parametrize("name", sorted(OPS))
def test_integers_with_negatives_and_broadcasting(name):
    _same(*_both(OPS[name], INTS, INT_DIVISORS))
    _same(*_both(OPS[name], INTS.astype(np.int32), INT_DIVISORS.astype(np.int32)))


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.filterwarnings("ignore:.*encountered:RuntimeWarning")
def test_floats_and_zero_divisors(name):
    _same(*_both(OPS[name], FLOATS, FLOAT_DIVISORS))
    _same(*_both(OPS[name], FLOATS.astype(np.float32), FLOAT_DIVISORS.astype(np.float32)))
    _same(*_both(OPS[name], INTS, FLOAT_DIVISORS[:3].repeat(2)[:4] + 0.5))  # int by float


@pytest.mark.parametrize("name", sorted(set(OPS) - {"div", "true_divide"}))
def test_integer_division_by_zero_is_an_error(name):
    ours, theirs = OPS[name]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        theirs(torch.tensor(INTS), torch.tensor([1, 0, 1, 1]))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ours(tg.tensor(INTS), tg.tensor([1, 0, 1, 1]))


@pytest.mark.parametrize("scalar", [3, -3, 2.5, -0.5])
def test_python_scalars_on_either_side(scalar):
    for name in ("floordiv", "mod", "div_floor", "fmod", "div"):
        ours, theirs = OPS[name]
        _same(ours(tg.tensor(INTS), scalar), theirs(torch.tensor(INTS), scalar))
    _same(scalar // tg.tensor(INT_DIVISORS), scalar // torch.tensor(INT_DIVISORS))
    _same(scalar % tg.tensor(INT_DIVISORS), scalar % torch.tensor(INT_DIVISORS))


@pytest.mark.parametrize("name", ["div", "div_trunc", "div_floor", "remainder", "fmod"])
def test_gradients_match_torch(name):
    ours_fn, theirs_fn = OPS[name]
    a, b = np.array([[5.3, -5.3, 2.2], [-7.1, 0.8, 3.9]]), np.array([2.0, -1.7, 0.9])
    ta, tb = tg.tensor(a, requires_grad=True), tg.tensor(b, requires_grad=True)
    pa, pb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    probe = np.arange(6.0).reshape(2, 3) - 2.5
    (ours_fn(ta, tb) * tg.tensor(probe)).sum().backward()
    (theirs_fn(pa, pb) * torch.tensor(probe)).sum().backward()
    np.testing.assert_allclose(np.asarray(ta.grad), pa.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tb.grad), pb.grad.numpy(), rtol=1e-12)


def test_floor_divide_has_a_zero_gradient():
    # A deliberate difference: PyTorch's backward raises "derivative for aten::floor_divide is
    # not implemented"; here // is div(rounding_mode="floor"), whose gradient PyTorch says is 0.
    a, b = tg.tensor([5.3, -2.2], requires_grad=True), tg.tensor([2.0, 0.9], requires_grad=True)
    (a // b).sum().backward()
    assert a.grad.tolist() == [0.0, 0.0] and b.grad.tolist() == [0.0, 0.0]


def test_in_place_forms_match_torch():
    ours, theirs = tg.tensor(INTS), torch.tensor(INTS)
    for step in (lambda x: x.__ifloordiv__(2), lambda x: x.__imod__(3),
                 lambda x: x.remainder_(-4), lambda x: x.fmod_(3), lambda x: x.floor_divide_(-2),
                 lambda x: x.div_(2, rounding_mode="trunc")):
        assert step(ours) is ours
        step(theirs)
        _same(ours, theirs)
    x = tg.tensor(FLOATS)
    x //= 1.5
    x %= 2
    y = torch.tensor(FLOATS)
    y //= 1.5
    y %= 2
    _same(x, y)


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="div: rounding_mode must be None, 'trunc' or 'floor', "
                                         "got 'round'"):
        tg.div(tg.tensor([1.0]), 2, rounding_mode="round")
    with pytest.raises(TypeError, match="remainder: not implemented for bool tensors"):
        tg.tensor([True]) % tg.tensor([True])
    with pytest.raises(RuntimeError, match="div_: result type float32 can't be cast to the "
                                           "desired output type int64"):
        tg.tensor([4, 6]).div_(4)


@pytest.mark.parametrize("make", [
    lambda lib: lib.tensor(-7) // 2,
    lambda lib: lib.div(lib.tensor(-7), lib.tensor(2), rounding_mode="trunc"),
    lambda lib: lib.tensor(-7) % lib.tensor([3, -3]),
    lambda lib: lib.fmod(lib.tensor(-7.5), 2),
    lambda lib: lib.zeros(0, dtype=lib.int64) % 3,
    lambda lib: lib.zeros(2, 0) // 2.0,
    lambda lib: lib.ones(1, 3) / lib.ones(2, 1),
], ids=["0d-floordiv", "0d-trunc", "0d-by-1d", "0d-fmod", "empty-mod", "empty-2d", "size-1"])
def test_0d_empty_and_size_1_shapes(make):
    ours, theirs = make(tg), make(torch)
    assert ours.shape == tuple(theirs.shape)
    _same(ours, theirs)
