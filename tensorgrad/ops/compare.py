"""Comparisons, logic and float classification: no gradient (their outputs are bool)."""
from ..autograd import primitive
from ..tensor import Tensor, tensor_method
from .operands import as_operand, binary_operands


def _nondiff(name, fn, arity):
    prim = primitive(name, differentiable=False)(fn)
    if arity == 2:
        def op(a, b):
            return prim(*binary_operands(a, b))
    else:
        def op(x):
            return prim(x)
    op.__name__ = name
    return op


eq = tensor_method(_nondiff("eq", lambda xp, a, b: a == b, 2))
ne = tensor_method(_nondiff("ne", lambda xp, a, b: a != b, 2))
lt = tensor_method(_nondiff("lt", lambda xp, a, b: a < b, 2))
le = tensor_method(_nondiff("le", lambda xp, a, b: a <= b, 2))
gt = tensor_method(_nondiff("gt", lambda xp, a, b: a > b, 2))
ge = tensor_method(_nondiff("ge", lambda xp, a, b: a >= b, 2))
logical_and = tensor_method(_nondiff("logical_and", lambda xp, a, b: xp.logical_and(a, b), 2))
logical_or = tensor_method(_nondiff("logical_or", lambda xp, a, b: xp.logical_or(a, b), 2))
logical_not = tensor_method(_nondiff("logical_not", lambda xp, x: xp.logical_not(x), 1))
isnan = tensor_method(_nondiff("isnan", lambda xp, x: xp.isnan(x), 1))
isinf = tensor_method(_nondiff("isinf", lambda xp, x: xp.isinf(x), 1))
isfinite = tensor_method(_nondiff("isfinite", lambda xp, x: xp.isfinite(x), 1))
tensor_method(eq, "__eq__")
tensor_method(ne, "__ne__")
tensor_method(lt, "__lt__")
tensor_method(le, "__le__")
tensor_method(gt, "__gt__")
tensor_method(ge, "__ge__")


# --- closeness: isclose / allclose / equal (PyTorch's tolerances and NaN rule) -----------------
@primitive("isclose", differentiable=False)
def _isclose(xp, a, b, rtol, atol, equal_nan):
    same = a == b  # exact matches, infinities of the same sign included
    if a.dtype.kind not in "fc":
        # integers and bools: the tolerance test in float64 (no wraparound in a - b)
        a, b = a.astype("float64"), b.astype("float64")
    with xp.errstate(invalid="ignore", over="ignore"):
        near = xp.abs(a - b) <= atol + rtol * xp.abs(b)
    close = same | (near & xp.isfinite(a) & xp.isfinite(b))
    if equal_nan:
        close = close | (xp.isnan(a) & xp.isnan(b))
    return close


@tensor_method
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other| elementwise (broadcast), True where they are
    equal (infinities included); NaNs are close to each other only with equal_nan. Both must
    have the same dtype, as in PyTorch."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"isclose: expected two Tensors, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    if input.dtype != other.dtype:
        raise RuntimeError(f"isclose: expected both inputs to have the same dtype, got "
                           f"{input.dtype} and {other.dtype} (shapes {input.shape} and "
                           f"{other.shape})")
    if rtol < 0 or atol < 0:
        raise ValueError(f"isclose: rtol and atol must be non-negative, got rtol={rtol}, "
                         f"atol={atol}")
    return _isclose(input, other, rtol=float(rtol), atol=float(atol), equal_nan=bool(equal_nan))


@tensor_method
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Python bool: isclose(...) holds everywhere (shapes broadcast, as in PyTorch)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


@primitive("isin", differentiable=False)
def _isin(xp, elements, test_elements, invert):
    return xp.isin(elements, test_elements, invert=invert)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Bool tensor of elements' shape: whether each element occurs in test_elements (either may
    be a number). assume_unique is accepted for PyTorch compatibility: the result is the same."""
    like = elements if isinstance(elements, Tensor) else test_elements
    if not isinstance(like, Tensor):
        raise TypeError("isin: expected elements or test_elements to be a Tensor")
    elements, test_elements = as_operand(elements, like), as_operand(test_elements, like)
    return _isin(elements, test_elements, invert=bool(invert))


@tensor_method
def equal(input, other):
    """Python bool: same shape and equal elements (NaN equals nothing; dtypes are promoted)."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"equal: expected two Tensors, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    if input.shape != other.shape:
        return False
    return bool(eq(input, other).all().item())
