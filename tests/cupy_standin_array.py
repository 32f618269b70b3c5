"""The CuPy stand-in's device array and functions: NumPy arrays behind CuPy's interface, with
CuPy's refusals of implicit host trips (see cupy_standin.py, which builds the modules)."""
import numpy

MODULES = {}  # "cupy": the stand-in module, set by cupy_standin.install
LIMITS = {
    "kernels": "RawKernel / ElementwiseKernel / ReductionKernel / RawModule bodies are CUDA C++; "
               "the stand-in cannot compile or run them",
    "nccl": "NCCL across ranks needs GPUs and their interconnect; the stand-in's NCCL is a "
            "world of one rank",
    "nccl names": "cupy.cuda.nccl's names come from the NCCL library, which is not installed "
                  "(pip install nvidia-nccl-cu12)",
    "other": "the CuPy stand-in (tests/cupy_standin.py) does not implement it",
}
KERNEL_NAMES = {"RawKernel", "ElementwiseKernel", "ReductionKernel", "RawModule", "fuse"}
CREATION = {"array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray"}


class Missing:
    """A real CuPy name the stand-in cannot run: calling it or reading from it raises."""

    def __init__(self, name, limit="other"):
        self._name, self._limit = name, limit

    def _raise(self):
        raise NotImplementedError(f"{self._name}: not on the CuPy stand-in: {LIMITS[self._limit]}")

    def __call__(self, *args, **kwargs):
        self._raise()

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        self._raise()

    def __repr__(self):
        return f"<CuPy stand-in: {self._name} not implemented>"


# --- host/device boundary ---------------------------------------------------------------------
def _refuse_host(value, what):
    raise TypeError(f"Unsupported type {type(value)} in {what}: a NumPy array must be moved to "
                    "the device with cupy.asarray first (CuPy stand-in)")


def _unwrap(value, what, host_ok=False):
    """Device arrays -> their NumPy arrays, through lists, tuples and dicts; host arrays raise."""
    if type(value) is ndarray:
        return value._a
    if isinstance(value, numpy.ndarray):
        if not host_ok:
            _refuse_host(value, what)
        return value.copy()
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v, what, host_ok) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap(v, what, host_ok) for k, v in value.items()}
    return value


_UNSUPPORTED_KINDS = "OSUVMm"


def _wrap(value, *owners):
    """NumPy results -> device arrays (a NumPy scalar becomes a 0-d array, as CuPy returns);
    an owner's own buffer comes back as that owner."""
    if isinstance(value, numpy.ndarray):
        for owner in owners:
            if type(owner) is ndarray and owner._a is value:
                return owner
        if value.dtype.kind in _UNSUPPORTED_KINDS or value.dtype == numpy.longdouble:
            raise ValueError(f"Unsupported dtype {value.dtype} (CuPy stand-in)")
        out = object.__new__(ndarray)
        out._a = value
        return out
    if isinstance(value, numpy.generic):
        return _wrap(numpy.asarray(value))
    if isinstance(value, tuple):
        return tuple(_wrap(v, *owners) for v in value)
    if isinstance(value, list) and any(isinstance(v, numpy.ndarray) for v in value):
        return [_wrap(v, *owners) for v in value]
    return value


UFUNC_METHODS = ("reduce", "accumulate", "reduceat", "outer", "at")
_OPERAND_TYPES = (int, float, complex, bool, numpy.generic)


def _operand(value, what):
    """One operand of an elementwise op: a device array, a Python or NumPy scalar."""
    if type(value) is ndarray:
        return value._a
    if isinstance(value, _OPERAND_TYPES) or value is None:
        return value
    _refuse_host(value, what)


def on_device(fn, name, host_ok=False):
    """A NumPy function run on device arrays, returning device arrays."""
    def run(*args, **kwargs):
        out = kwargs.get("out")
        with numpy.errstate(all="ignore"):  # CuPy raises no floating-point warnings
            result = fn(*_unwrap(args, name, host_ok), **_unwrap(kwargs, name))
        return _wrap(result, out)
    run.__name__ = run.__qualname__ = name
    run.__doc__ = f"{name} on the CuPy stand-in (NumPy underneath)."
    return run


class Ufunc:
    """A CuPy ufunc: scalars and device arrays in, device arrays out; no host arrays, no lists."""

    def __init__(self, np_ufunc, methods):
        self._u, self.name = np_ufunc, np_ufunc.__name__
        self.nin, self.nout, self.nargs = np_ufunc.nin, np_ufunc.nout, np_ufunc.nargs
        for method in methods:
            setattr(self, method, self._method(method))

    def _method(self, method):
        def run(*args, **kwargs):
            what = f"cupy.{self.name}.{method}"
            if method == "at":  # (a, indices, b): indices convert as in indexing
                args = [_operand(args[0], what), _unwrap(args[1], what, host_ok=True),
                        *(_operand(a, what) for a in args[2:])]
            else:
                args = [_operand(a, what) if i < self.nin else _unwrap(a, what)
                        for i, a in enumerate(args)]
            out = kwargs.get("out")
            return _wrap(getattr(self._u, method)(*args, **_unwrap(kwargs, what)), out)
        return run

    def __call__(self, *args, **kwargs):
        what = f"cupy.{self.name}"
        args = [_operand(a, what) if i < self.nin else _unwrap(a, what)
                for i, a in enumerate(args)]
        out = kwargs.get("out")
        out = out[0] if isinstance(out, tuple) and len(out) == 1 else out
        with numpy.errstate(all="ignore"):
            return _wrap(self._u(*args, **_unwrap(kwargs, what)), out)

    @property
    def types(self):
        return self._u.types

    def __repr__(self):
        return f"<ufunc '{self.name}' (CuPy stand-in)>"


# --- the device array -------------------------------------------------------------------------
class _MemoryPointer:
    """`x.data`: only the device address, which NCCL calls and aliasing checks read."""

    def __init__(self, array):
        self.ptr = array.__array_interface__["data"][0]
        self.device_id = 0


class ndarray:
    """A CuPy array on the stand-in's one device: a NumPy array behind CuPy's interface."""

    __slots__ = ("_a", "__weakref__")
    __array_priority__ = 100.0

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        if memptr is not None or strides is not None:
            raise NotImplementedError(f"cupy.ndarray(memptr=, strides=): {LIMITS['other']}")
        self._a = numpy.empty(shape, dtype, order=order)

    # Implicit conversion to the host is refused, as CuPy refuses it.
    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` "
                        "to construct a NumPy array explicitly. (CuPy stand-in)")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        mine = getattr(MODULES["cupy"], ufunc.__name__, None)
        if not isinstance(mine, Ufunc):
            return NotImplemented
        return mine(*inputs, **kwargs) if method == "__call__" else \
            getattr(mine, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        module = MODULES["cupy"]
        for part in func.__module__.split(".")[1:]:
            module = getattr(module, part, None)
        mine = getattr(module, func.__name__, None)
        if mine is None or isinstance(mine, Missing) or mine is func:
            return NotImplemented
        return mine(*args, **kwargs)

    # Attributes.
    shape = property(lambda self: self._a.shape)

    @shape.setter
    def shape(self, value):
        self._a.shape = value

    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: _wrap(self._a.T))
    mT = property(lambda self: _wrap(self._a.mT))
    real = property(lambda self: _wrap(self._a.real))
    imag = property(lambda self: _wrap(self._a.imag))
    base = property(lambda self: None if self._a.base is None else _wrap(self._a.base))
    data = property(lambda self: _MemoryPointer(self._a))
    device = property(lambda self: MODULES["cupy"].cuda.Device(0))

    @property
    def __cuda_array_interface__(self):
        interface = self._a.__array_interface__
        return {"shape": self._a.shape, "typestr": self._a.dtype.str,
                "data": (interface["data"][0], False), "strides": interface["strides"],
                "version": 3}

    # The ways out to the host.
    def get(self, stream=None, order="C", out=None, blocking=True):
        if out is not None:
            out[...] = self._a
            return out
        return numpy.array(self._a, order=order)

    def set(self, arr, stream=None):
        if not isinstance(arr, numpy.ndarray):
            raise TypeError(f"set: only numpy.ndarray is supported, got {type(arr)}")
        self._a[...] = arr

    def item(self):
        return self._a.item()

    def tolist(self):
        return self._a.tolist()

    def astype(self, dtype, order="K", casting=None, subok=None, copy=True):
        return _wrap(self._a.astype(dtype, order=order, copy=copy), self)

    def copy(self, order="C"):
        return _wrap(self._a.copy(order=order))

    def scatter_add(self, slices, value):
        numpy.add.at(self._a, _unwrap(slices, "scatter_add", True), _operand(value, "scatter_add"))

    def scatter_max(self, slices, value):
        numpy.maximum.at(self._a, _unwrap(slices, "scatter_max", True),
                         _operand(value, "scatter_max"))

    def scatter_min(self, slices, value):
        numpy.minimum.at(self._a, _unwrap(slices, "scatter_min", True),
                         _operand(value, "scatter_min"))

    # Conversions that need the host: only of one element, as NumPy and CuPy allow.
    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __complex__(self):
        return complex(self._a)

    def __bool__(self):
        return bool(self._a)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(len(self._a)))

    def __repr__(self):
        return repr(self._a)

    def __str__(self):
        return str(self._a)

    def __format__(self, spec):
        return format(self._a.item() if self._a.ndim == 0 else self._a, spec)

    def __reduce__(self):
        return _wrap_host, (self._a,)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    # Indexing converts host index arrays and values, as CuPy does.
    def __getitem__(self, key):
        key = _unwrap(key, "indexing", host_ok=True)
        out = self._a[key]
        if isinstance(out, numpy.generic):  # CuPy gives a 0-d view, not a scalar
            out = self._a[(*key, ...) if isinstance(key, tuple) else (key, ...)]
        return _wrap(out)

    def __setitem__(self, key, value):
        self._a[_unwrap(key, "indexing", host_ok=True)] = _unwrap(value, "setitem", host_ok=True)

    __hash__ = None


def _wrap_host(array):
    return _wrap(array)


def _binary(np_ufunc, reflected=False):
    def op(self, other):
        if not (type(other) is ndarray or isinstance(other, (*_OPERAND_TYPES, numpy.ndarray))):
            return NotImplemented
        other = _operand(other, f"ndarray.{np_ufunc.__name__}")
        with numpy.errstate(all="ignore"):
            return _wrap(np_ufunc(other, self._a) if reflected else np_ufunc(self._a, other))
    return op


def _inplace(np_ufunc):
    def op(self, other):
        np_ufunc(self._a, _operand(other, f"ndarray.{np_ufunc.__name__}"), out=self._a)
        return self
    return op


_BINARY = {"add": numpy.add, "sub": numpy.subtract, "mul": numpy.multiply,
           "truediv": numpy.true_divide, "floordiv": numpy.floor_divide, "mod": numpy.remainder,
           "pow": numpy.power, "matmul": numpy.matmul, "and": numpy.bitwise_and,
           "or": numpy.bitwise_or, "xor": numpy.bitwise_xor, "lshift": numpy.left_shift,
           "rshift": numpy.right_shift, "divmod": numpy.divmod}
for _name, _u in _BINARY.items():
    setattr(ndarray, f"__{_name}__", _binary(_u))
    setattr(ndarray, f"__r{_name}__", _binary(_u, reflected=True))
    if _name not in ("divmod", "matmul"):
        setattr(ndarray, f"__i{_name}__", _inplace(_u))
for _name, _u in {"eq": numpy.equal, "ne": numpy.not_equal, "lt": numpy.less,
                  "le": numpy.less_equal, "gt": numpy.greater, "ge": numpy.greater_equal}.items():
    setattr(ndarray, f"__{_name}__", _binary(_u))
for _name, _u in {"neg": numpy.negative, "pos": numpy.positive, "abs": numpy.absolute,
                  "invert": numpy.invert}.items():
    setattr(ndarray, f"__{_name}__", lambda self, _u=_u: _wrap(_u(self._a)))


def ndarray_method(name):
    def run(self, *args, **kwargs):
        what = f"ndarray.{name}"
        out = kwargs.get("out")
        result = getattr(self._a, name)(*_unwrap(args, what), **_unwrap(kwargs, what))
        return _wrap(result, self, out)
    run.__name__ = name
    return run



class Indexer:
    """cupy.ogrid, cupy.mgrid, cupy.r_, cupy.c_: NumPy's index tricks giving device arrays."""

    def __init__(self, np_indexer):
        self._i = np_indexer

    def __getitem__(self, key):
        return _wrap(self._i[_unwrap(key, "index trick")])
