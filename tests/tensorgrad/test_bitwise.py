"""Bitwise ops against PyTorch: bit by bit on integers (several widths, negatives,
broadcasting, scalars on either side), logical on bools, shifts past the bit width, the
in-place forms, and floats refused."""
import numpy as np
import pytest

import tensorgrad as tg

torch = pytest.importorskip("torch")

INTS = np.array([[5, -5, 7, 0], [12, -1, 3, -128]])
OTHER = np.array([3, 6, -2, 1])
SHIFTS = np.array([0, 3, 7, 9])  # 9 is past an int8's width
P, Q = np.array([[True, False, True, False]]), np.array([[True], [False]])

BINARY = {
    "and": (lambda a, b: a & b, lambda a, b: a & b),
    "or": (lambda a, b: a | b, lambda a, b: a | b),
    "xor": (lambda a, b: a ^ b, lambda a, b: a ^ b),
    "bitwise_and": (tg.bitwise_and, torch.bitwise_and),
    "bitwise_or": (lambda a, b: a.bitwise_or(b), lambda a, b: a.bitwise_or(b)),
    "bitwise_xor": (tg.bitwise_xor, torch.bitwise_xor),
}
SHIFT = {
    "lshift": (lambda a, b: a << b, lambda a, b: a << b),
    "rshift": (lambda a, b: a >> b, lambda a, b: a >> b),
    "bitwise_left_shift": (tg.bitwise_left_shift, torch.bitwise_left_shift),
    "bitwise_right_shift": (lambda a, b: a.bitwise_right_shift(b),
                            lambda a, b: a.bitwise_right_shift(b)),
}

OPERATORS = {"and", "or", "xor", "lshift", "rshift"}  # these also take a Python number first


def _same(ours, theirs):
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())


def _both(pair, *values):
    ours, theirs = pair
    wrap = [(tg.tensor(v), torch.tensor(v)) if isinstance(v, np.ndarray) else (v, v)
            for v in values]
    return ours(*(w[0] for w in wrap)), theirs(*(w[1] for w in wrap))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16, np.int8])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_integers_are_bitwise(name, dtype):
    _same(*_both(BINARY[name], INTS.astype(dtype), OTHER.astype(dtype)))
    _same(*_both(BINARY[name], INTS.astype(dtype), 6))
    if name in OPERATORS:
        _same(*_both(BINARY[name], -3, INTS.astype(dtype)))
    _same(*_both(BINARY[name], INTS.astype(dtype), OTHER.astype(np.int64)))  # promotion


@pytest.mark.parametrize("name", sorted(BINARY))
def test_bools_are_logical(name):
    _same(*_both(BINARY[name], P, Q))
    _same(*_both(BINARY[name], P, True))
    _same(*_both(BINARY[name], P, 1))  # an int scalar makes the result int64, as in PyTorch


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8, np.uint8])
@pytest.mark.parametrize("name", sorted(SHIFT))
def test_shifts(name, dtype):
    values = np.abs(INTS) if dtype == np.uint8 else INTS
    _same(*_both(SHIFT[name], values.astype(dtype), SHIFTS.astype(dtype)))
    _same(*_both(SHIFT[name], values.astype(dtype), 2))
    if name in OPERATORS:
        _same(*_both(SHIFT[name], 1, SHIFTS.astype(dtype)))
    _same(*_both(SHIFT[name], values.astype(dtype), 70))  # past every width


def test_invert():
    for values in (INTS, INTS.astype(np.int8), np.abs(INTS).astype(np.uint8), P):
        _same(~tg.tensor(values), ~torch.tensor(values))
        _same(tg.bitwise_not(tg.tensor(values)), torch.bitwise_not(torch.tensor(values)))


def test_in_place_forms_match_torch():
    ours, theirs = tg.tensor(INTS), torch.tensor(INTS)
    for step in (lambda x: x.__iand__(6), lambda x: x.__ior__(9), lambda x: x.__ixor__(-4),
                 lambda x: x.__ilshift__(2), lambda x: x.__irshift__(1),
                 lambda x: x.bitwise_and_(127), lambda x: x.bitwise_not_(),
                 lambda x: x.bitwise_left_shift_(1), lambda x: x.bitwise_xor_(1)):
        assert step(ours) is ours
        step(theirs)
        _same(ours, theirs)
    mask = tg.tensor(P[0])
    view = mask[:2]
    mask &= tg.tensor([True, True, False, False])
    assert mask.tolist() == [True, False, False, False] and view.tolist() == [True, False]


def test_floats_are_refused():
    x = tg.tensor([1.5, 2.0])
    with pytest.raises(TypeError, match="bitwise_and: expected integer or bool tensors, got "
                                        "float32"):
        x & 1
    with pytest.raises(TypeError, match="bitwise_xor: expected integer or bool tensors"):
        tg.tensor([1, 2]) ^ 0.5
    with pytest.raises(TypeError, match="bitwise_left_shift: expected integer tensors, got bool"):
        tg.tensor([True]) << tg.tensor([False])
    with pytest.raises(TypeError, match="bitwise_not \\(~\\): expected an integer or bool"):
        x.__invert__()
    with pytest.raises(RuntimeError, match="bitwise_or_: result type int64 can't be cast to "
                                           "the desired output type bool"):
        tg.tensor([True]).bitwise_or_(2)


@pytest.mark.parametrize("make", [
    lambda lib: lib.tensor(5) << 2, lambda lib: ~lib.tensor(5),
    lambda lib: lib.tensor(True) ^ lib.tensor([True, False]),
    lambda lib: lib.zeros(0, dtype=lib.int32) & 1,
    lambda lib: lib.zeros(2, 0, dtype=lib.int64) >> 1,
    lambda lib: lib.tensor([[6]]) | lib.tensor([1, 2, 3]),
], ids=["0d-shift", "0d-invert", "0d-bool", "empty", "empty-2d", "size-1"])
def test_0d_empty_and_size_1_shapes(make):
    ours, theirs = make(tg), make(torch)
    assert ours.shape == tuple(theirs.shape)
    _same(ours, theirs)
