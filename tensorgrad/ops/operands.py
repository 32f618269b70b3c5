"""Turning op arguments into Tensors, with PyTorch's type promotion.

NumPy promotes float32 with int64 to float64 and Python floats can upcast integer arrays; PyTorch
does neither, and float32 must survive a whole training step, so binary ops pass through here.
"""
from .. import backend as _backends
from ..creation import tensor
from ..tensor import Tensor, from_array

_SCALARS = (bool, int, float)


def scalar_dtype(value, like_dtype):
    """The dtype a Python scalar takes next to a tensor of `like_dtype` (it never upcasts)."""
    kind = _backends.BY_NUMPY[like_dtype].kind  # bfloat16's NumPy kind is "V"
    if isinstance(value, bool):
        return like_dtype
    if isinstance(value, int):
        return like_dtype if kind != "b" else _backends.int64
    if kind in "fc":
        return like_dtype
    return _backends.get_default_dtype()


_constants = {}
_PYTHON_SCALARS = {bool, int, float}  # `type(v) in` this is one hash, isinstance is three tests


def as_operand(value, like):
    """`value` as a Tensor on `like`'s device; Python scalars take a dtype that does not upcast.

    Scalar constants are cached (y * 0.5 in a loop makes one 0-d tensor, not one per call); they
    never require grad and nothing writes to them.
    """
    if isinstance(value, Tensor):
        return value
    if isinstance(value, _SCALARS):
        return _scalar_constant(value, like)
    return tensor(value, device=like.device)


def _scalar_constant(value, like):
    """The cached 0-d tensor for a Python scalar next to `like`."""
    backend, like_dtype = like._backend, like.data.dtype
    # the default dtype is in the key: a float next to an integer tensor takes it (scalar_dtype);
    # 0.0 and -0.0 are equal keys, so zeros alone also key on their spelling (op_overhead fwd)
    key = ((value, type(value), like_dtype, backend, _backends.get_default_dtype()) if value
           else (value, type(value), like_dtype, backend, _backends.get_default_dtype(),
                 str(value)))
    constant = _constants.get(key)
    if constant is None:
        if len(_constants) > 1024:
            _constants.clear()
        dtype = scalar_dtype(value, like_dtype)
        constant = from_array(backend.asarray(value, dtype=dtype), backend)
        _constants[key] = constant
    return constant


def result_dtype(da, db):
    """PyTorch's promotion of two dtypes: floats beat integers and bools, wider beats narrower."""
    if da == db:
        return da
    da, db = _backends.BY_NUMPY[da], _backends.BY_NUMPY[db]
    if da.kind == db.kind == "f" and da.itemsize == db.itemsize:
        return _backends.float32  # float16 with bfloat16, as in PyTorch
    fa, fb = da.kind in "fc", db.kind in "fc"
    if fa != fb:
        return da if fa else db
    if da.kind == "b" or db.kind == "b":
        return db if da.kind == "b" else da
    return da if da.itemsize >= db.itemsize else db


def promote(a, b):
    """Both tensors cast (differentiably) to their common dtype."""
    dtype = result_dtype(a.data.dtype, b.data.dtype)
    return (a if a.data.dtype == dtype else a.to(dtype)), (b if b.data.dtype == dtype
                                                           else b.to(dtype))


def binary_operands(a, b):
    """Both operands of a binary op as Tensors of one dtype (scalars follow the tensor)."""
    # A tensor and a Python scalar first, with one type test: the commonest pair (op_overhead)
    if type(b) in _PYTHON_SCALARS and isinstance(a, Tensor):
        b = _scalar_constant(b, a)
    elif not isinstance(a, Tensor):
        if not isinstance(b, Tensor):
            raise TypeError(f"expected at least one Tensor, got {type(a).__name__} and "
                            f"{type(b).__name__}")
        # a scalar on the left (`2 * x`, `1 - p`) takes the same path as one on the right
        a = _scalar_constant(a, b) if type(a) in _PYTHON_SCALARS else as_operand(a, b)
    elif not isinstance(b, Tensor):
        b = as_operand(b, a)
    da, db = a.data.dtype, b.data.dtype
    if da is not db and da != db:  # dtypes are mostly the same object: no comparison made
        a, b = promote(a, b)
    return a, b


def normalize_dim(dim, ndim, op):
    """A dim in [-ndim, ndim) made non-negative, or a clear IndexError naming the op."""
    if type(dim) is int and -ndim <= dim < ndim:  # the usual dim, one test (generate_user)
        return dim % ndim
    size = max(ndim, 1)
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{op}: dim must be an int, got {dim!r}")
    if not -size <= dim < size:
        raise IndexError(f"{op}: dim {dim} is out of range for a tensor with {ndim} dimension(s) "
                         f"(expected -{size} <= dim < {size})")
    return dim % size


def normalize_dims(dim, ndim, op):
    """A reduction's dims as a sorted tuple of non-negative dims. None and () mean every dim
    (PyTorch reduces everything for dim=()); on a 0-d tensor dim 0 or -1 names the tensor itself,
    which leaves nothing to reduce."""
    dims = () if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:
        return tuple(range(ndim))
    out = tuple(sorted({normalize_dim(d, ndim, op) for d in dims}))
    if len(out) != len(dims):
        raise ValueError(f"{op}: dim {dim} repeats a dimension")
    return out if ndim else ()


def require_float(x, op):
    if x.dtype.kind not in "fc":
        raise TypeError(f"{op}: expected a floating point tensor, got {x.data.dtype} "
                        f"(shape {x.shape}); convert with .float()")
