"""Elementwise selection: maximum, minimum, clamp and where route each gradient to the value
that was chosen."""
from ..autograd import guard, primitive
from ..backend import BY_NUMPY
from ..errors import OpError
from ..tensor import Tensor, tensor_method
from .operands import as_operand, binary_operands


@primitive("maximum", saves=(0, 1))
def _maximum(xp, a, b):
    return xp.maximum(a, b)


@primitive("minimum", saves=(0, 1))
def _minimum(xp, a, b):
    return xp.minimum(a, b)


def _select_vjp(ctx, g):
    # The winner takes the gradient; on a tie each side takes half, as PyTorch does.
    a, b = ctx.inputs
    wins = (a > b) if ctx.prim is _maximum else (a < b)
    share = wins.to(g.dtype) + (a == b).to(g.dtype) * 0.5
    return (g * share if ctx.needs_grad[0] else None), (g * (1.0 - share)
                                                         if ctx.needs_grad[1] else None)


_maximum.defvjp(_select_vjp)
_minimum.defvjp(_select_vjp)


@tensor_method
def maximum(a, b):
    return _maximum(*binary_operands(a, b))


@tensor_method
def minimum(a, b):
    return _minimum(*binary_operands(a, b))


@primitive("clamp", saves=(0,))
def _clamp(xp, x, min=None, max=None):
    out = xp.clip(x, min, max)  # a float keeps its dtype; NumPy's clip turns bfloat16 float32
    return out.astype(x.dtype, copy=False) if BY_NUMPY[x.dtype].is_floating_point else out


@_clamp.defvjp
def _clamp_vjp(ctx, g):
    x, = ctx.inputs
    lo, hi = ctx.attrs["min"], ctx.attrs["max"]
    inside = None
    if lo is not None:
        inside = x >= lo
    if hi is not None:
        inside = (x <= hi) if inside is None else inside & (x <= hi)
    return g * inside.to(g.dtype)


@tensor_method
def clamp(x, min=None, max=None):
    """Limit x to [min, max]; tensor bounds broadcast (gradient 1 inside, 0 outside)."""
    if min is None and max is None:
        raise OpError("clamp: at least one of min and max must be given")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = x if min is None else maximum(x, min)
        return out if max is None else minimum(out, max)
    return _clamp(x, min=min, max=max)


clip = tensor_method(clamp, "clip")


@primitive("where")
def _where(xp, a, b, condition):
    return xp.where(condition.data, a, b)


@_where.defvjp
def _where_vjp(ctx, g):
    condition = ctx.attrs["condition"]
    return (where(condition, g, 0.0) if ctx.needs_grad[0] else None,
            where(condition, 0.0, g) if ctx.needs_grad[1] else None)


def where(condition, a, b):
    """Elementwise `a if condition else b`, broadcasting all three."""
    if not isinstance(condition, Tensor):
        raise TypeError(f"where: condition must be a bool Tensor, got {type(condition).__name__}")
    if condition.dtype.kind != "b":
        raise TypeError(f"where: expected a bool condition, got {condition.dtype} (shape "
                        f"{condition.shape}); compare first, e.g. where(x != 0, a, b), as "
                        "PyTorch requires too")
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = as_operand(a, condition.float())
    a, b = binary_operands(a, b)
    if condition._backend is not a._backend:
        raise RuntimeError(f"where: condition is on {condition.device} but the values are on "
                           f"{a.device}")
    return guard(_where(a, b, condition=condition), condition)


def _where_method(self, condition, other):
    """`self` where condition holds, else `other` (torch.Tensor.where)."""
    return where(condition, self, other)


tensor_method(_where_method, "where")

