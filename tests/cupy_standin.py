"""A test-only stand-in for CuPy: the `cuda` test cases run on the CPU, computing with NumPy.

Switched on by TENSORGRAD_CUDA_STANDIN=1 (tests/conftest.py calls `install`). It is never
importable from the tensorgrad package. It puts fake `cupy` and `cupyx` modules into
sys.modules, built from the installed real CuPy (which imports without a GPU):

- Names: each module exposes exactly the public names of the real one. A name the stand-in
  cannot run is still there, and raises NotImplementedError naming the stand-in's limit.
- Arrays are `ndarray` objects wrapping a NumPy array. As on a GPU there is no implicit trip to
  the host: `numpy.asarray(x)`, `x.__array__()` and a NumPy function that CuPy would not
  dispatch raise TypeError; `x.get()`, `cupy.asnumpy(x)`, `x.item()` and `float(x)` of a
  one-element array are the ways out. NumPy arrays mixed into device ops raise TypeError.
  `cupy.asarray(host)` copies, so device and host memory are never shared.
- Reductions and scalar indexing give 0-d arrays, as CuPy's do; dtype rules for Python scalars
  are NumPy 2's, which CuPy 14 follows.
- Random numbers come from CuPy's API (`default_rng`'s Generator has only CuPy's methods) on a
  different bit generator than NumPy's, so a test cannot assume the CPU's stream.
"""
import sys
import time
import types

import numpy

LIMITS = {
    "kernels": "RawKernel / ElementwiseKernel / ReductionKernel / RawModule bodies are CUDA C++; "
               "the stand-in cannot compile or run them",
    "nccl": "NCCL needs GPUs and their interconnect; the stand-in has one fake device",
    "other": "the CuPy stand-in (tests/cupy_standin.py) does not implement it",
}
_KERNEL_NAMES = {"RawKernel", "ElementwiseKernel", "ReductionKernel", "RawModule", "fuse"}
_CREATION = {"array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray"}


class _Missing:
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


_UFUNC_METHODS = ("reduce", "accumulate", "reduceat", "outer", "at")
_OPERAND_TYPES = (int, float, complex, bool, numpy.generic)


def _operand(value, what):
    """One operand of an elementwise op: a device array, a Python or NumPy scalar."""
    if type(value) is ndarray:
        return value._a
    if isinstance(value, _OPERAND_TYPES) or value is None:
        return value
    _refuse_host(value, what)


def _on_device(fn, name, host_ok=False):
    """A NumPy function run on device arrays, returning device arrays."""
    def run(*args, **kwargs):
        out = kwargs.get("out")
        with numpy.errstate(all="ignore"):  # CuPy raises no floating-point warnings
            result = fn(*_unwrap(args, name, host_ok), **_unwrap(kwargs, name))
        return _wrap(result, out)
    run.__name__ = run.__qualname__ = name
    run.__doc__ = f"{name} on the CuPy stand-in (NumPy underneath)."
    return run


class _Ufunc:
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
        mine = getattr(_cupy, ufunc.__name__, None)
        if not isinstance(mine, _Ufunc):
            return NotImplemented
        return mine(*inputs, **kwargs) if method == "__call__" else \
            getattr(mine, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        module = _cupy
        for part in func.__module__.split(".")[1:]:
            module = getattr(module, part, None)
        mine = getattr(module, func.__name__, None)
        if mine is None or isinstance(mine, _Missing) or mine is func:
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
    device = property(lambda self: _cuda.Device(0))

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


def _method(name):
    def run(self, *args, **kwargs):
        what = f"ndarray.{name}"
        out = kwargs.get("out")
        result = getattr(self._a, name)(*_unwrap(args, what), **_unwrap(kwargs, what))
        return _wrap(result, self, out)
    run.__name__ = name
    return run


# --- building the modules from the real package's names -----------------------------------------
_cupy = _cuda = None  # set by install()


def _public(module):
    return [n for n in dir(module) if not n.startswith("_")]


def _fill(module, real, implemented, limit="other"):
    """Give `module` every public name of `real`: implemented ones, the rest as _Missing."""
    extra = set(implemented) - set(_public(real))
    assert not extra, f"the stand-in implements names the real {real.__name__} lacks: {extra}"
    for name in _public(real):
        value = implemented.get(name)
        if value is None:
            value = _Missing(f"{module.__name__}.{name}",
                             "kernels" if name in _KERNEL_NAMES else limit)
        setattr(module, name, value)
    return module


def _numpy_namespace(real, np_module, prefix):
    """For each public name of the real module: NumPy's very object where CuPy reuses it, a
    device version of NumPy's function of that name, or nothing (left to _fill)."""
    names = {}
    for name in _public(real):
        ours = getattr(np_module, name, None)
        if ours is None or isinstance(ours, types.ModuleType):
            continue  # a submodule is left to the caller: reading it would import it
        theirs = getattr(real, name)
        if theirs is ours:
            names[name] = ours
        elif name in ("ogrid", "mgrid", "r_", "c_"):
            names[name] = _Indexer(ours)
        elif isinstance(ours, numpy.ufunc):
            names[name] = _Ufunc(ours, [m for m in _public(theirs) if m in _UFUNC_METHODS])
        elif isinstance(theirs, type) and issubclass(theirs, BaseException):
            names[name] = theirs
        elif callable(ours) and not isinstance(ours, type):
            names[name] = _on_device(ours, f"{prefix}.{name}", host_ok=name in _CREATION)
    return names


class _Indexer:
    """cupy.ogrid, cupy.mgrid, cupy.r_, cupy.c_: NumPy's index tricks giving device arrays."""

    def __init__(self, np_indexer):
        self._i = np_indexer

    def __getitem__(self, key):
        return _wrap(self._i[_unwrap(key, "index trick")])


class _Generator:
    """cupy.random.Generator: only CuPy's methods, drawing on Philox (not NumPy's PCG64)."""

    def __init__(self, seed, methods):
        self._g = numpy.random.Generator(numpy.random.Philox(seed))
        for name in methods:
            setattr(self, name, _on_device(getattr(self._g, name), f"Generator.{name}"))


def _random_module(real):
    state = {"rs": numpy.random.RandomState(numpy.random.Philox())}
    methods = _public(real._generator_api.Generator)
    implemented = {"default_rng": lambda seed=None: _Generator(seed, methods)}

    def legacy(name):
        def draw(*args, **kwargs):
            return _on_device(getattr(state["rs"], name), f"cupy.random.{name}")(*args, **kwargs)
        return draw

    for name in _public(real):
        if hasattr(numpy.random.RandomState, name) and name != "seed":
            implemented[name] = legacy(name)
    implemented["seed"] = lambda seed=None: state.update(
        rs=numpy.random.RandomState(numpy.random.Philox(seed)))
    return _fill(types.ModuleType("cupy.random"), real, implemented)


class _Device:
    """cupy.cuda.Device: the stand-in has one, id 0."""

    def __init__(self, device=None):
        self.id = 0 if device is None else int(device)
        if self.id != 0:
            raise _cuda.runtime.CUDARuntimeError(101)  # cudaErrorInvalidDevice: one device here

    compute_capability = "90"

    def use(self):
        pass

    def synchronize(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __eq__(self, other):
        return isinstance(other, _Device) and other.id == self.id

    def __hash__(self):
        return self.id

    def __repr__(self):
        return f"<CUDA Device {self.id} (CuPy stand-in)>"


class _Stream:
    ptr, null = 0, None

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        pass

    def synchronize(self):
        pass

    def use(self):
        return self

    done = True

    def record(self, event=None):
        event = event or _Event()
        event.record(self)
        return event

    def wait_event(self, event):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.time = None

    def record(self, stream=None):
        self.time = time.perf_counter()

    def synchronize(self):
        pass

    done = True


class _MemoryPool:
    def used_bytes(self):
        return 0

    total_bytes = used_bytes

    def free_all_blocks(self, stream=None):
        pass

    def set_limit(self, size=None, fraction=None):
        pass

    def get_limit(self):
        return 0


def _cuda_module(real):
    runtime = _fill(types.ModuleType("cupy.cuda.runtime"), real.runtime, {
        "getDeviceCount": lambda: 1, "CUDARuntimeError": real.runtime.CUDARuntimeError,
        "deviceSynchronize": lambda: None})
    _Stream.null = _Stream()
    pool = _MemoryPool()
    implemented = {
        "runtime": runtime, "Device": _Device, "Stream": _Stream, "Event": _Event,
        "get_current_stream": lambda device_id=-1: _Stream.null,
        "get_elapsed_time": lambda start, end: (end.time - start.time) * 1e3,
        "is_available": lambda: True, "MemoryPool": _MemoryPool, "PinnedMemoryPool": _MemoryPool,
        "get_device_id": lambda: 0,
    }
    cuda = _fill(types.ModuleType("cupy.cuda"), real, implemented)
    cuda.nccl = _Missing("cupy.cuda.nccl", "nccl")
    return cuda, pool


def install():
    """Put the stand-in `cupy` and `cupyx` into sys.modules. Returns None, or the reason it
    cannot (the real cupy package, which the names come from, is not installed)."""
    global _cupy, _cuda
    try:
        import cupy as real
        import cupy.linalg
        import cupy.random
        import cupy.random._generator_api  # noqa: F401 - the Generator's method names
        import cupyx as realx
        import cupyx.scipy.special
    except ImportError as exc:
        return (f"TENSORGRAD_CUDA_STANDIN=1 needs the real cupy package (pip install "
                f"cupy-cuda12x; it imports without a GPU), whose names the stand-in copies: {exc}")
    for name in _public(real.ndarray):
        if not hasattr(ndarray, name):
            setattr(ndarray, name, _method(name) if hasattr(numpy.ndarray, name)
                    else _Missing(f"cupy.ndarray.{name}"))

    cuda, pool = _cuda_module(real.cuda)
    _cuda = cuda
    cp = types.ModuleType("cupy", __doc__)
    implemented = _numpy_namespace(real, numpy, "cupy")
    implemented.update({
        "ndarray": ndarray, "cuda": cuda, "random": _random_module(real.random),
        "linalg": _fill(types.ModuleType("cupy.linalg"), real.linalg,
                        _numpy_namespace(real.linalg, numpy.linalg, "cupy.linalg")),
        "lib": _fill(types.ModuleType("cupy.lib"), real.lib, {"stride_tricks": _fill(
            types.ModuleType("cupy.lib.stride_tricks"), real.lib.stride_tricks,
            _numpy_namespace(real.lib.stride_tricks, numpy.lib.stride_tricks,
                             "cupy.lib.stride_tricks"))}),
        "asnumpy": lambda a, stream=None, order="C", out=None, blocking=True:
            a.get(order=order, out=out) if type(a) is ndarray else numpy.asarray(a, order=order),
        "get_array_module": lambda *args: cp if any(type(a) is ndarray for a in args) else numpy,
        "get_default_memory_pool": lambda: pool, "get_default_pinned_memory_pool": lambda: pool,
        "is_available": lambda: True,
    })
    _cupy = _fill(cp, real, implemented)
    cp.__version__ = real.__version__

    special = _fill(types.ModuleType("cupyx.scipy.special"), realx.scipy.special,
                    _numpy_namespace(realx.scipy.special, _scipy_special(), "cupyx.scipy.special"))
    scipy = _fill(types.ModuleType("cupyx.scipy"), realx.scipy, {"special": special})
    cx = _fill(types.ModuleType("cupyx"), realx, {
        "scipy": scipy,
        "scatter_add": lambda a, slices, value: a.scatter_add(slices, value),
        "scatter_max": lambda a, slices, value: a.scatter_max(slices, value),
        "scatter_min": lambda a, slices, value: a.scatter_min(slices, value),
        "empty_pinned": lambda shape, dtype=float, order="C": numpy.empty(shape, dtype, order),
        "zeros_pinned": lambda shape, dtype=float, order="C": numpy.zeros(shape, dtype, order),
        "empty_like_pinned": lambda a, dtype=None: numpy.empty_like(a, dtype),
        "zeros_like_pinned": lambda a, dtype=None: numpy.zeros_like(a, dtype),
    })
    for name in list(sys.modules):
        if name.split(".")[0] in ("cupy", "cupyx"):
            del sys.modules[name]
    sys.modules.update({"cupy": cp, "cupy.cuda": cuda, "cupy.cuda.runtime": cuda.runtime,
                        "cupy.random": cp.random, "cupy.linalg": cp.linalg, "cupyx": cx,
                        "cupyx.scipy": scipy, "cupyx.scipy.special": special})
    return None


def _scipy_special():
    try:
        import scipy.special
        return scipy.special
    except ImportError:  # then cupyx.scipy.special's functions are all limits
        return types.ModuleType("scipy.special")


def count_names():
    """{module: (names exposed, names implemented)} for the report header."""
    counts = {}
    for name in ("cupy", "cupy.random", "cupy.linalg", "cupy.cuda", "cupyx",
                 "cupyx.scipy.special"):
        module = sys.modules[name]
        public = _public(module)
        counts[name] = (len(public),
                        sum(not isinstance(getattr(module, n), _Missing) for n in public))
    return counts
