"""Arithmetic primitives: add, sub, mul, neg, pow, and the composites built on them (division
and its rounding modes are in division.py).

Each primitive is its forward on arrays followed by its VJP in tensorgrad ops. Broadcasting is
not undone here: the engine sums every gradient back to its input's shape.
"""
from ..autograd import primitive
from ..tensor import tensor_method, tensor_reflected
from .operands import binary_operands
from .unary import log, reciprocal  # noqa: F401 (reciprocal: exported from here)
from .select import where


# --- arithmetic ---------------------------------------------------------------------------------
@primitive("add")
def _add(xp, a, b):
    return a + b


@_add.defvjp
def _add_vjp(ctx, g):
    return g, g


@primitive("sub")
def _sub(xp, a, b):
    return a - b


@_sub.defvjp
def _sub_vjp(ctx, g):
    return g, (-g if ctx.needs_grad[1] else None)


@primitive("mul", saves=(0, 1), saves_when={0: (1,), 1: (0,)})
def _mul(xp, a, b):
    return a * b


@_mul.defvjp
def _mul_vjp(ctx, g):
    a, b = ctx.inputs
    return (g * b if ctx.needs_grad[0] else None), (g * a if ctx.needs_grad[1] else None)


@primitive("neg")
def _neg(xp, x):
    return -x


@_neg.defvjp
def _neg_vjp(ctx, g):
    return -g


@primitive("pow", saves=(0, 1), saves_out=(1,))
def _pow(xp, a, b):
    return a ** b


@_pow.defvjp
def _pow_vjp(ctx, g):
    # PyTorch's conventions where the formulas meet 0 * inf: d/da a^0 = 0 everywhere, infinite a
    # included (a^-1 is never formed: the exponent is swapped for 1 there), and d/db a^b =
    # a^b log a is taken as 0 where a == 0 and b >= 0 (the limit), -inf for b < 0.
    a, b = ctx.inputs
    ga = (where(b == 0, 0.0, g * b * a ** where(b == 0, 1.0, b - 1)) if ctx.needs_grad[0]
          else None)
    if not ctx.needs_grad[1]:
        return ga, None
    limit = (a == 0) & (b >= 0)
    return ga, g * where(limit, 0.0, ctx.out * log(where(limit, 1.0, a)))


@tensor_method
def add(a, b, alpha=1):
    a, b = binary_operands(a, b)
    return _add(a, b if alpha == 1 else b * alpha)


@tensor_method
def sub(a, b, alpha=1):
    a, b = binary_operands(a, b)
    return _sub(a, b if alpha == 1 else b * alpha)


@tensor_method
def mul(a, b):
    return _mul(*binary_operands(a, b))


@tensor_method
def neg(x):
    return _neg(x)


@tensor_method
def pow(a, b):
    return _pow(*binary_operands(a, b))


@tensor_method
def square(x):
    return x * x


# The operators are the ops themselves, no Tensor method in between (op_overhead fwd).
tensor_method(add, "__add__")
tensor_method(sub, "__sub__")
tensor_method(mul, "__mul__")
tensor_method(pow, "__pow__")
tensor_method(neg, "__neg__")
tensor_reflected(add, "add")
tensor_reflected(sub, "sub")
tensor_reflected(mul, "mul")
tensor_reflected(pow, "pow")
multiply = tensor_method(mul, "multiply")
subtract = tensor_method(sub, "subtract")
negative = tensor_method(neg, "negative")
