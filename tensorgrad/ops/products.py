"""The other products, as composites of matmul, mul and sum: dot/vdot, outer/ger, inner,
addmm/addmv/baddbmm/addbmm, tensordot, kron, trace, cross, cdist (matmul, mm, bmm, mv and
linear are in matmul.py, einsum in einsum.py).

dot checks its operands' ranks and sizes as strictly as PyTorch does (matmul's broadcasting
would otherwise accept what torch rejects)."""
import math

from ..tensor import tensor_method
from .matmul import _check_product, _require, _same_dtype, bmm, matmul, mm, mv
from .operands import normalize_dim
from .reduce import amax, sum
from .select import where
from .shape import broadcast_shapes, broadcast_tensors, stack
from .unary import abs, inplace_form, sign, sqrt


@tensor_method
def dot(input, other):
    """Sum of input * other over two 1-D tensors of one size -> 0-d."""
    _check_product("dot", input, other, (1, 1))
    _require("dot", input.shape == other.shape, "expected 1-D tensors of the same size",
             input, other)
    return matmul(input, other)


vdot = tensor_method(dot, "vdot")  # conj(input) . other: the same as dot for real tensors


@tensor_method
def outer(input, vec2):
    """Outer product of two 1-D tensors: (n,) x (m,) -> (n, m)."""
    _check_product("outer", input, vec2, (1, 1), same_dtype=False)  # promotes, as torch's
    return input.unsqueeze(1) * vec2.unsqueeze(0)


ger = tensor_method(outer, "ger")


@tensor_method
def inner(input, other):
    """Sum over the last dims: (*a, k) x (*b, k) -> (*a, *b); a 0-d operand multiplies."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    _require("inner", input.shape[-1] == other.shape[-1], "last dimensions differ",
             input, other)
    _same_dtype("inner", input, other)
    k = input.shape[-1]
    rows = input.reshape(math.prod(input.shape[:-1]), k)  # explicit sizes: k may be 0
    out = matmul(rows, other.reshape(math.prod(other.shape[:-1]), k).mT)
    return out.reshape(input.shape[:-1] + other.shape[:-1])


def _scaled_sum(op, input, product, beta, alpha):
    """beta * input + alpha * product, input broadcast to the product's shape; with beta = 0 the
    input is ignored (NaN and inf in it do not propagate), as in PyTorch."""
    if broadcast_shapes(input.shape, product.shape) != product.shape:
        raise RuntimeError(f"{op}: input of shape {input.shape} does not broadcast to the "
                           f"product's shape {product.shape}")
    _same_dtype(op, input, product)
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return scaled
    return scaled + (input if beta == 1 else input * beta)


@tensor_method
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2) for matrices."""
    return _scaled_sum("addmm", input, mm(mat1, mat2), beta, alpha)


@tensor_method
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec)."""
    return _scaled_sum("addmv", input, mv(mat, vec), beta, alpha)


@tensor_method
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * bmm(batch1, batch2), one result per batch."""
    return _scaled_sum("baddbmm", input, bmm(batch1, batch2), beta, alpha)


@tensor_method
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * sum_b batch1[b] @ batch2[b], as one (n, b*m) @ (b*m, p) GEMM."""
    _check_product("addbmm", batch1, batch2, (3, 3))
    _require("addbmm", batch1.shape[0] == batch2.shape[0] and batch1.shape[2] == batch2.shape[1],
             "expected batch2 of shape (b, m, p) for batch1 of shape (b, n, m)", batch1, batch2)
    b, n, m = batch1.shape
    rows = batch1.permute(1, 0, 2).reshape(n, b * m)
    columns = batch2.reshape(b * m, batch2.shape[2])
    return _scaled_sum("addbmm", input, mm(rows, columns), beta, alpha)


for _op in (addmm, addmv, baddbmm, addbmm):
    inplace_form(_op, _op.__name__ + "_")


def tensordot(a, b, dims=2):
    """Contract dims of a with dims of b: an int n takes a's last n and b's first n dims, a pair
    of lists names them; the result has a's free dims, then b's."""
    if isinstance(dims, int):
        if dims < 0 or dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot: dims must be in [0, {min(a.ndim, b.ndim)}] for "
                               f"shapes {a.shape} and {b.shape}, got {dims}")
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
        dims_a = [normalize_dim(d, a.ndim, "tensordot") for d in dims_a]
        dims_b = [normalize_dim(d, b.ndim, "tensordot") for d in dims_b]
    if len(dims_a) != len(dims_b) or any(a.shape[i] != b.shape[j]
                                         for i, j in zip(dims_a, dims_b)):
        raise RuntimeError(f"tensordot: contracted dims {dims_a} of {a.shape} and {dims_b} of "
                           f"{b.shape} must pair up with equal sizes")
    _same_dtype("tensordot", a, b)
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    shape_a, shape_b = tuple(a.shape[d] for d in free_a), tuple(b.shape[d] for d in free_b)
    k = math.prod(a.shape[d] for d in dims_a)
    left = a.permute(*free_a, *dims_a).reshape(math.prod(shape_a), k)
    right = b.permute(*dims_b, *free_b).reshape(k, math.prod(shape_b))
    return matmul(left, right).reshape(shape_a + shape_b)


@tensor_method
def kron(input, other):
    """Kronecker product: block (i, j, ...) is input[i, j, ...] * other (ranks padded with 1s)."""
    ndim = max(input.ndim, other.ndim)
    a_shape = (1,) * (ndim - input.ndim) + input.shape
    b_shape = (1,) * (ndim - other.ndim) + other.shape
    # interleave: a as (a0, 1, a1, 1, ...), b as (1, b0, 1, b1, ...), then merge each pair
    a = input.reshape(tuple(s for n in a_shape for s in (n, 1)))
    b = other.reshape(tuple(s for n in b_shape for s in (1, n)))
    return (a * b).reshape(tuple(x * y for x, y in zip(a_shape, b_shape)))


@tensor_method
def trace(input):
    """Sum of the main diagonal of a matrix."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, got shape {input.shape}")
    return input.diagonal().sum()


@tensor_method
def cross(input, other, dim=None):
    """Cross product of 3-vectors along dim (broadcast); dim=None takes the first dimension of
    size 3, as torch.cross does."""
    input, other = broadcast_tensors(input, other)
    if dim is None:
        dim = next((d for d, n in enumerate(input.shape) if n == 3), None)
        if dim is None:
            raise RuntimeError(f"cross: no dimension of size 3 in shape {input.shape}")
    dim = normalize_dim(dim, input.ndim, "cross")
    if input.shape[dim] != 3:
        raise RuntimeError(f"cross: dimension {dim} of shape {input.shape} must have size 3")
    a1, a2, a3 = input.unbind(dim)
    b1, b2, b3 = other.unbind(dim)
    return stack([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], dim)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between the rows: (*B, P, M) x (*B, R, M) -> (*B, P, R), batch dims
    broadcast. p = 0 counts differing entries, p = inf takes the largest; the gradient at zero
    distance is 0 (as in PyTorch). Computed from the differences directly for every
    compute_mode (exact where the mm form cancels)."""
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"cdist: expected (*, P, M) and (*, R, M) with equal M, got shapes "
                           f"{x1.shape} and {x2.shape}")
    if p < 0:
        raise RuntimeError(f"cdist: p must be non-negative, got {p}")
    _same_dtype("cdist", x1, x2)
    diff = abs(x1.unsqueeze(-2) - x2.unsqueeze(-3))  # (*B, P, R, M)
    if p == 0:
        return sum(sign(diff), -1)  # sign: 0 or 1 here, with the zero gradient torch gives
    if p == float("inf"):
        return amax(diff, -1) if diff.shape[-1] else sum(diff, -1)
    if p == 1:
        return sum(diff, -1)
    nonzero = diff > 0  # keep 0 ** (p - 1) and 0 ** (1 / p - 1) out of the gradient
    powered = where(nonzero, where(nonzero, diff, 1.0) ** p, 0.0)
    total = sum(powered, -1)
    positive = total > 0
    safe = where(positive, total, 1.0)
    root = sqrt(safe) if p == 2 else safe ** (1.0 / p)
    return where(positive, root, 0.0)
