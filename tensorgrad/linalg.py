"""`torch.linalg`'s norms, as composites of tensorgrad's ops: vector_norm, matrix_norm and
norm, which picks one of them the way PyTorch does."""
import math

from . import ops

_MATRIX_ORDS = ("fro", 1, -1, math.inf, -math.inf)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """(sum |x|^ord)^(1/ord) over dim (every element by default); ord = inf: max |x|,
    -inf: min |x|, 0: the count of non-zero elements."""
    if dtype is not None:
        x = x.to(dtype)
    if x.dtype.kind not in "fc":
        raise RuntimeError(f"linalg.vector_norm: expected a floating point input, got "
                           f"{x.dtype}")
    magnitude = x.abs()
    if ord == math.inf:
        return magnitude.amax(dim, keepdim=keepdim)
    if ord == -math.inf:
        return magnitude.amin(dim, keepdim=keepdim)
    if ord == 0:  # the count of non-zeros (gradient 0, as in PyTorch)
        return ops.sign(magnitude).sum(dim, keepdim=keepdim)
    return ops.norm(x, ord, dim, keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The norm of the matrices over the two dims: 'fro' (Frobenius), 1 / -1 (largest /
    smallest column sum of |A|), inf / -inf (largest / smallest row sum). The spectral and
    nuclear norms need singular values, which tensorgrad does not compute."""
    if ord not in _MATRIX_ORDS:
        raise NotImplementedError(f"linalg.matrix_norm: ord={ord!r} needs singular values; "
                                  f"supported: {_MATRIX_ORDS}")
    if dtype is not None:
        A = A.to(dtype)
    if A.ndim < 2 or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: expected a tensor of at least 2 dims and two "
                           f"dims, got shape {A.shape} and dim={dim}")
    rows, cols = (d % A.ndim for d in dim)
    if ord == "fro":
        return ops.norm(A, 2, (rows, cols), keepdim)
    # a sum over one dim, then the extreme over the other (whose index shifts if it came after)
    summed, other = (rows, cols) if abs(ord) == 1 else (cols, rows)
    sums = A.abs().sum(summed, keepdim=True)
    out = sums.amax(other, keepdim=True) if ord > 0 else sums.amin(other, keepdim=True)
    return out if keepdim else out.squeeze((rows, cols))


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """PyTorch's rule: a matrix norm when ord is a string, dim is a pair, or dim is None with
    ord given and A a matrix; else a vector norm (dim None and ord None: A flattened, 2-norm)."""
    if isinstance(dim, int):
        dim = (dim,)
    if isinstance(ord, str) or (dim is not None and len(dim) == 2) or (
            dim is None and ord is not None and A.ndim == 2):
        return matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dim is None else dim,
                           keepdim, dtype=dtype)
    if dim is None and ord is not None and A.ndim != 1:
        raise RuntimeError(f"linalg.norm: with ord={ord} and dim=None the input must be 1-D or "
                           f"2-D, got shape {A.shape}")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
