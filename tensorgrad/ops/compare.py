"""Comparisons, logic and float classification: no gradient (their outputs are bool)."""
from ..autograd import primitive
from ..tensor import tensor_method
from .operands import binary_operands


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
