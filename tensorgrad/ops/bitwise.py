"""Bitwise ops: & | ^ ~ << >> and their functions, on integer and bool tensors.

On integers they work bit by bit; on bools & | ^ ~ are the logical ops (PyTorch's rule, so
`mask_a & mask_b` still combines masks). Floats are refused, as PyTorch refuses them. None of
these has a gradient. Shifts by a negative amount or by at least the bit width give what
PyTorch gives (0, or the sign for a right shift) on every backend, instead of C's undefined result.
"""
from ..autograd import primitive
from ..tensor import tensor_method, tensor_operator
from .operands import binary_operands


def _integer_operands(name, input, other, bools=True):
    a, b = binary_operands(input, other)
    kinds, wanted = ("biu", "integer or bool") if bools else ("iu", "integer")
    if a.dtype.kind not in kinds:
        raise TypeError(f"{name}: expected {wanted} tensors, got {a.dtype}; PyTorch has no "
                        f"{name} for that dtype either")
    return a, b


_and = primitive("bitwise_and", differentiable=False)(lambda xp, a, b: xp.bitwise_and(a, b))
_or = primitive("bitwise_or", differentiable=False)(lambda xp, a, b: xp.bitwise_or(a, b))
_xor = primitive("bitwise_xor", differentiable=False)(lambda xp, a, b: xp.bitwise_xor(a, b))
_not = primitive("bitwise_not", differentiable=False)(lambda xp, x: xp.invert(x))


def _shift(xp, a, b, left):
    outside = (b < 0) | (b >= a.dtype.itemsize * 8)
    shifted = (xp.left_shift if left else xp.right_shift)(a, xp.where(outside, 0, b))
    fill = 0 if left else xp.where(a < 0, -1, 0)  # a right shift fills with the sign bit
    return xp.where(outside, fill, shifted).astype(a.dtype, copy=False)


_left = primitive("bitwise_left_shift", differentiable=False)(
    lambda xp, a, b: _shift(xp, a, b, left=True))
_right = primitive("bitwise_right_shift", differentiable=False)(
    lambda xp, a, b: _shift(xp, a, b, left=False))


@tensor_method
def bitwise_and(input, other):
    """Bit-by-bit AND of integers, logical AND of bools: `input & other`."""
    return _and(*_integer_operands("bitwise_and", input, other))


@tensor_method
def bitwise_or(input, other):
    """Bit-by-bit OR of integers, logical OR of bools: `input | other`."""
    return _or(*_integer_operands("bitwise_or", input, other))


@tensor_method
def bitwise_xor(input, other):
    """Bit-by-bit XOR of integers, logical XOR of bools: `input ^ other`."""
    return _xor(*_integer_operands("bitwise_xor", input, other))


@tensor_method
def bitwise_left_shift(input, other):
    """input * 2**other on integers: `input << other`."""
    return _left(*_integer_operands("bitwise_left_shift", input, other, bools=False))


@tensor_method
def bitwise_right_shift(input, other):
    """input // 2**other on integers (arithmetic shift): `input >> other`."""
    return _right(*_integer_operands("bitwise_right_shift", input, other, bools=False))


@tensor_method
def bitwise_not(input):
    """Bit-by-bit NOT of integers (-x - 1), logical NOT of bools: `~input`."""
    if input.dtype.kind not in "biu":
        raise TypeError(f"bitwise_not (~): expected an integer or bool tensor, got {input.dtype}; "
                        "PyTorch has ~ only for integer and bool tensors")
    return _not(input)


@tensor_method
def bitwise_not_(self):
    """In-place `bitwise_not`."""
    return self._update("bitwise_not_", lambda x, _: bitwise_not(x), None)


tensor_method(bitwise_not, "__invert__")
tensor_operator(bitwise_and, "and")
tensor_operator(bitwise_or, "or")
tensor_operator(bitwise_xor, "xor")
tensor_operator(bitwise_left_shift, "lshift")
tensor_operator(bitwise_right_shift, "rshift")
