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
- NCCL is a world of one rank (its names read from the real cupy.cuda.nccl, which needs the NCCL
  library); more ranks, and CUDA C++ kernel bodies, are limits (LIMITS in
  cupy_standin_array.py).
"""
import ctypes
import sys
import time
import types
import warnings

import numpy

from cupy_standin_array import (
    CREATION, KERNEL_NAMES, LIMITS, MODULES, UFUNC_METHODS, Indexer, Missing, Ufunc, ndarray,
    ndarray_method, on_device,
)


# --- building the modules from the real package's names -----------------------------------------
def _public(module):
    return [n for n in dir(module) if not n.startswith("_")]


def _fill(module, real, implemented, limit="other"):
    """Give `module` every public name of `real`: implemented ones, the rest as Missing."""
    extra = set(implemented) - set(_public(real))
    assert not extra, f"the stand-in implements names the real {real.__name__} lacks: {extra}"
    for name in _public(real):
        value = implemented.get(name)
        if value is None:
            value = Missing(f"{module.__name__}.{name}",
                             "kernels" if name in KERNEL_NAMES else limit)
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
            names[name] = Indexer(ours)
        elif isinstance(ours, numpy.ufunc):
            names[name] = Ufunc(ours, [m for m in _public(theirs) if m in UFUNC_METHODS])
        elif isinstance(theirs, type) and issubclass(theirs, BaseException):
            names[name] = theirs
        elif callable(ours) and not isinstance(ours, type):
            names[name] = on_device(ours, f"{prefix}.{name}", host_ok=name in CREATION)
    return names


class _Generator:
    """cupy.random.Generator: only CuPy's methods, drawing on Philox (not NumPy's PCG64)."""

    def __init__(self, seed, methods):
        self._g = numpy.random.Generator(numpy.random.Philox(seed))
        for name in methods:
            setattr(self, name, on_device(getattr(self._g, name), f"Generator.{name}"))


def _random_module(real):
    state = {"rs": numpy.random.RandomState(numpy.random.Philox())}
    methods = _public(real._generator_api.Generator)
    implemented = {"default_rng": lambda seed=None: _Generator(seed, methods)}

    def legacy(name):
        def draw(*args, **kwargs):
            return on_device(getattr(state["rs"], name), f"cupy.random.{name}")(*args, **kwargs)
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
            # cudaErrorInvalidDevice: the stand-in has one device
            raise MODULES["cupy"].cuda.runtime.CUDARuntimeError(101)

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
    cuda.nccl = _nccl_module(real.nccl)
    return cuda, pool


class _NcclCommunicator:
    """NCCL on a world of one rank: each collective is a copy within the one device. More
    ranks are a limit of the stand-in."""

    def __init__(self, ndev, commId, rank):
        if ndev != 1:
            raise NotImplementedError(f"cupy.cuda.nccl.NcclCommunicator({ndev} ranks): not on "
                                      f"the CuPy stand-in: {LIMITS['nccl']}")
        self.rank_id, self.size, self.device_id = rank, 1, 0

    def _copy(self, src, dst, count, datatype):
        if src != dst:
            ctypes.memmove(dst, src, count * _NCCL_ITEMSIZE[datatype])

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):
        self._copy(sendbuf, recvbuf, count, datatype)

    def broadcast(self, sendbuf, recvbuf, count, datatype, root, stream):
        self._copy(sendbuf, recvbuf, count, datatype)

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):
        self._copy(sendbuf, recvbuf, count, datatype)

    def destroy(self):
        pass

    def abort(self):
        pass


_NCCL_ITEMSIZE = {}


def _nccl_module(real):
    """cupy.cuda.nccl with the real one's names (read only where the NCCL library loads)."""
    if not getattr(real, "available", False):
        return Missing("cupy.cuda.nccl", "nccl names")
    for name, size in (("INT8", 1), ("UINT8", 1), ("FLOAT16", 2), ("BFLOAT16", 2), ("INT32", 4),
                       ("UINT32", 4), ("FLOAT32", 4), ("INT64", 8), ("UINT64", 8),
                       ("FLOAT64", 8)):
        _NCCL_ITEMSIZE[getattr(real, f"NCCL_{name}")] = size
    implemented = {name: getattr(real, name) for name in _public(real)
                   if name.startswith("NCCL_") or name in ("NcclError", "available")}
    implemented.update({"NcclCommunicator": _NcclCommunicator,
                        "get_unique_id": lambda: b"cupy-standin", "groupStart": lambda: None,
                        "groupEnd": lambda: None})
    return _fill(types.ModuleType("cupy.cuda.nccl"), real, implemented, limit="nccl")


def install():
    """Put the stand-in `cupy` and `cupyx` into sys.modules. Returns None, or the reason it
    cannot (the real cupy package, which the names come from, is not installed)."""
    try:
        import cupy as real
        with warnings.catch_warnings():  # without the NCCL library it warns; see _nccl_module
            warnings.simplefilter("ignore")
            import cupy.cuda.nccl
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
            setattr(ndarray, name, ndarray_method(name) if hasattr(numpy.ndarray, name)
                    else Missing(f"cupy.ndarray.{name}"))

    cuda, pool = _cuda_module(real.cuda)
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
    _fill(cp, real, implemented)
    MODULES["cupy"] = cp
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
                        "cupy.cuda.nccl": cuda.nccl,
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
                        sum(not isinstance(getattr(module, n), Missing) for n in public))
    return counts
