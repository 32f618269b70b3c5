"""Creation functions: `tensor`, `zeros`, `randn`, `arange` ... and their `*_like` forms.

Each makes a new leaf tensor on a device's backend (the default device when none is given).
Random ones draw from that backend's seeded generator (see `tensorgrad.manual_seed`).
"""
from . import backend as _backends
from .errors import OpError
from .tensor import Tensor, from_array, tensor_method
from .generator import rng_for


def _infer_dtype(data):
    """torch.tensor's rules: Python floats -> the default dtype (float32 unless
    `set_default_dtype`), ints -> int64, bools -> bool. None when
    the data holds arrays, NumPy scalars or Tensors: the backend keeps their dtype."""
    item = data
    while isinstance(item, (list, tuple)):
        if not item:
            return _backends.get_default_dtype()
        kinds = {_scalar_kind(x) for x in _flatten(item)}
        if None in kinds:
            return None
        return (_backends.get_default_dtype() if "f" in kinds else
                _backends.int64 if "i" in kinds else _backends.bool_)
    kind = _scalar_kind(item)
    return {"f": _backends.get_default_dtype(), "i": _backends.int64,
            "b": _backends.bool_}.get(kind)


def _scalar_kind(x):
    if isinstance(x, bool):
        return "b"
    if isinstance(x, int):
        return "i"
    if isinstance(x, float):
        return "f"
    if isinstance(x, Tensor):
        return x.dtype.kind if x.dtype.kind != "u" else "i"
    return None


def _flatten(items):
    for x in items:
        if isinstance(x, (list, tuple)):
            yield from _flatten(x)
        else:
            yield x


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new leaf tensor holding a copy of `data` (nested lists, numbers, arrays or a Tensor).

    Python floats become float32 and ints int64, as in PyTorch; arrays keep their dtype.
    """
    dtype = _backends.as_dtype(dtype)
    if isinstance(data, Tensor):
        backend = _backends.get_backend(device if device is not None else data.device)
        array = data.data if backend is data._backend else backend.from_host(
            data._backend.to_host(data.data))
        array = array.astype(dtype if dtype is not None else array.dtype, copy=True)
    else:
        backend = _backends.get_backend(device)
        if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flatten(data)):
            data = [_host_value(x) for x in data]
        host_dtype = dtype if dtype is not None else _infer_dtype(data)
        try:
            array = backend.from_host(data) if host_dtype is None else backend.asarray(
                backend.from_host(data), dtype=host_dtype)
        except ValueError as exc:  # ragged nested lists
            raise ValueError(f"tensor(): cannot make a tensor from this {type(data).__name__}: "
                             f"{exc}") from None
        if array is data:
            array = array.copy()
        if _backends.BY_NUMPY[array.dtype].kind not in "biufc":
            raise TypeError(f"tensor(): cannot make a tensor from {type(data).__name__} "
                            f"holding {array.dtype} values; expected numbers or bools")
    t = from_array(array, backend)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _init(self, data, dtype=None, device=None, requires_grad=False):
    """`Tensor(data, dtype, device, requires_grad)` is `tensor(data, ...)`."""
    made = tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
    self.data, self._backend = made.data, made._backend
    self.grad, self.requires_grad, self._node, self._version = None, requires_grad, None, [0]


tensor_method(_init, "__init__")


def _host_value(x):
    if isinstance(x, Tensor):
        return x._backend.to_host(x.data)
    if isinstance(x, (list, tuple)):
        return [_host_value(v) for v in x]
    return x


def as_tensor(data, dtype=None, device=None):
    """Like `tensor`, but returns `data` itself when it already fits."""
    if isinstance(data, Tensor) and (dtype is None or data.dtype == _backends.as_dtype(dtype)) \
            and (device is None or data.device == _backends.normalize_device(device)):
        return data
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array):
    """A CPU tensor sharing memory with a NumPy array (dtype kept)."""
    backend = _backends.get_backend("cpu")
    return from_array(backend.asarray(array), backend)


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, int) or s < 0:
            raise ValueError(f"sizes must be non-negative integers, got {tuple(size)}")
    return tuple(size)


def _make(fill, size, dtype, device, requires_grad, default=None):
    backend = _backends.get_backend(device)
    dtype = _backends.as_dtype(dtype) or default or _backends.get_default_dtype()
    t = from_array(fill(backend, _shape(size), dtype), backend)
    return t.requires_grad_(True) if requires_grad else t


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return _make(lambda b, s, d: b.zeros(s, dtype=d), size, dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return _make(lambda b, s, d: b.ones(s, dtype=d), size, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False):
    return _make(lambda b, s, d: b.empty(s, dtype=d), size, dtype, device, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    default = _infer_dtype(fill_value)
    return _make(lambda b, s, d: b.full(s, fill_value, dtype=d), (tuple(size),), dtype, device,
                 requires_grad, default)


def randn(*size, dtype=None, device=None, requires_grad=False, generator=None):
    """Standard normal samples from `generator`, else the device's seeded one (`manual_seed`)."""
    return _make(lambda b, s, d: b.random_normal(s, d, rng_for(generator, b, "randn")), size,
                 dtype, device, requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False, generator=None):
    """Uniform samples in [0, 1)."""
    return _make(lambda b, s, d: b.random_uniform(s, d, rng_for(generator, b, "rand")), size,
                 dtype, device, requires_grad)


def randint(low, high=None, size=None, dtype=None, device=None, generator=None):
    """Integers drawn uniformly from [low, high), int64 by default. As in PyTorch, the
    two-argument form `randint(high, size)` draws from [0, high): `randint(10, (3,))`."""
    if size is None and high is not None and not isinstance(high, int):
        low, high, size = 0, low, high  # randint(high, size)
    elif high is None:
        low, high = 0, low  # randint(high, size=...)
    size = () if size is None else (size,) if isinstance(size, int) else tuple(size)
    return _make(lambda b, s, d: b.random_integers(low, high, s, d,
                                                   rng_for(generator, b, "randint")),
                 (size,), dtype, device, False, _backends.int64)


def randperm(n, dtype=None, device=None, generator=None):
    """A random permutation of 0 .. n-1 (int64 by default)."""
    backend = _backends.get_backend(device)
    keys = backend.random_uniform((n,), _backends.float32, rng_for(generator, backend, "randperm"))
    perm = backend.argsort(keys).astype(_backends.as_dtype(dtype) or _backends.int64)
    return from_array(perm, backend)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    default = (_backends.get_default_dtype() if any(isinstance(v, float)
                                                     for v in (start, end, step))
               else _backends.int64)
    backend = _backends.get_backend(device)
    dtype = _backends.as_dtype(dtype) or default
    t = from_array(backend.arange(start, end, step, dtype=dtype), backend)
    return t.requires_grad_(True) if requires_grad else t


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    """`steps` evenly spaced values from start to end inclusive. An integer dtype follows
    PyTorch (NumPy would round down instead): the ends are converted first, the values are
    computed in float64 from the nearer end and truncated toward zero."""
    backend = _backends.get_backend(device)
    dtype = _backends.as_dtype(dtype) or _backends.get_default_dtype()
    if isinstance(steps, bool) or not hasattr(steps, "__index__"):
        raise TypeError(f"linspace: steps must be an int, got {steps!r}")
    steps = steps.__index__()
    if steps < 0:
        raise OpError(f"linspace: number of steps must be non-negative, got {steps}")
    if dtype.kind == "b":
        raise NotImplementedError("linspace: not implemented for bool (as in PyTorch)")
    if dtype.kind in "fc":
        values = backend.linspace(start, end, steps, dtype=dtype)
    else:
        start, end = int(start), int(end)
        i = backend.arange(steps, dtype=_backends.float64)
        step = (end - start) / (steps - 1) if steps > 1 else 0.0
        values = backend.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))
        values = backend.trunc(values).astype(dtype)
    t = from_array(values, backend)
    return t.requires_grad_(True) if requires_grad else t


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    """base ** linspace(start, end, steps), computed in float64 then cast."""
    dtype = _backends.as_dtype(dtype) or _backends.get_default_dtype()
    exponents = linspace(start, end, steps, dtype=_backends.float64, device=device)
    t = (float(base) ** exponents).to(dtype)
    return t.requires_grad_(True) if requires_grad else t


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    return _make(lambda b, s, d: b.eye(n, m, dtype=d), (), dtype, device, requires_grad)


def _like(fn):
    def like(input, dtype=None, device=None, requires_grad=False, **kwargs):
        return fn(*input.shape, dtype=dtype or input.dtype, device=device or input.device,
                  requires_grad=requires_grad, **kwargs)
    like.__name__ = fn.__name__ + "_like"
    like.__doc__ = f"`{fn.__name__}` with the shape, dtype and device of `input`."
    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)
randn_like = _like(randn)
rand_like = _like(rand)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False):
    return full(input.shape, fill_value, dtype=dtype or input.dtype,
                device=device or input.device, requires_grad=requires_grad)


def is_tensor(obj):
    return isinstance(obj, Tensor)


# --- Tensor.new_*: a new tensor with this one's dtype and device unless told otherwise ----------
def _new(fn):
    def new(self, *size, dtype=None, device=None, requires_grad=False):
        return fn(*size, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)
    new.__name__ = f"new_{fn.__name__}"
    new.__doc__ = f"`{fn.__name__}(*size)` with this tensor's dtype and device by default."
    return tensor_method(new)


new_zeros = _new(zeros)
new_ones = _new(ones)
new_empty = _new(empty)


@tensor_method
def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    """`full(size, fill_value)` with this tensor's dtype and device by default."""
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


@tensor_method
def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    """`tensor(data)` (a copy) with this tensor's dtype and device by default, as in PyTorch:
    `x.new_tensor([1, 2])` on a float32 x is float32."""
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)


