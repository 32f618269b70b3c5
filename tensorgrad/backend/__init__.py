"""Backends: the only place in tensorgrad that imports numpy or cupy.

A backend owns one array module (`xp`), a device name, a seeded random generator and the few
kernels whose spelling differs between libraries. A Tensor's device picks its backend; op code
asks the tensor for `xp` and never names numpy or cupy itself.
"""
import os
import sys

import numpy

from .numpy_backend import NumpyBackend
from .process import tune_process  # noqa: F401
from . import cuda_runtime

from . import dtypes as _dtypes
from .dtypes import (  # noqa: F401
    NAMES as _DTYPE_NAMES, BY_NUMPY, bool_, complex64, complex128, dtype, float16, float32,
    float64, int8, int16, int32, int64, uint8,
)

_backends = {}
_default_device = None
_seed = None


def as_dtype(dtype_like):
    """Our dtype for a dtype, a NumPy dtype, a Python type or a name; None stays None."""
    if dtype_like is None or type(dtype_like) is dtype:
        return dtype_like
    if isinstance(dtype_like, str):
        try:
            return _dtypes.named(dtype_like)
        except KeyError:
            raise TypeError(f"unknown dtype {dtype_like!r}; expected one of "
                            f"{sorted({*_DTYPE_NAMES, *_dtypes.LAZY_NAMES})}") from None
    if dtype_like is bool:
        return bool_
    try:
        return BY_NUMPY[numpy.dtype(dtype_like)]
    except TypeError:
        raise TypeError(f"unknown dtype {dtype_like!r}") from None


def normalize_device(device):
    """'cpu' -> 'cpu'; 'cuda' -> 'cuda:0'; 'cuda:1' stays; anything else is an error."""
    if device is None:
        return default_device()
    device = str(device)
    if device == "cpu":
        return "cpu"
    if device == "cuda":
        return "cuda:0"
    if device.startswith("cuda:") and device[5:].isdigit():
        return device
    raise ValueError(f"unknown device {device!r}; expected 'cpu', 'cuda' or 'cuda:N'")


def get_backend(device=None):
    """The backend object for a device string, created on first use (CuPy is imported only then)."""
    device = normalize_device(device)
    backend = _backends.get(device)
    if backend is None:
        if device == "cpu":
            backend = NumpyBackend()
        else:
            try:
                from .cupy_backend import CupyBackend
            except ImportError as exc:
                raise RuntimeError(f"device {device!r} needs CuPy and an NVIDIA GPU ({exc}); "
                                   "install tensorgrad[cuda12] or use device='cpu'") from None
            backend = CupyBackend(int(device[5:]))
        if _seed is not None:
            backend.seed(_seed)
        _backends[device] = backend
    return backend


def backend_of_array(array):
    """The backend that owns an existing array (numpy -> cpu, cupy -> its GPU)."""
    if isinstance(array, numpy.ndarray) or numpy.isscalar(array):
        return get_backend("cpu")
    device = getattr(array, "device", None)
    if device is not None and type(array).__module__.startswith("cupy"):
        return get_backend(f"cuda:{device.id}")
    raise TypeError(f"cannot place an array of type {type(array).__name__} on any device")


def cuda_is_available():
    """True when CuPy imports and sees at least one GPU."""
    return cuda_runtime.device_count() > 0


def set_default_device(device):
    """Device for creation functions given none (initially $TENSORGRAD_DEVICE, else cpu)."""
    global _default_device
    _default_device = normalize_device(device) if device is not None else None


def default_device():
    if _default_device is not None:
        return _default_device
    env = os.environ.get("TENSORGRAD_DEVICE")
    return normalize_device(env) if env else "cpu"


_default_dtype = float32


def get_default_dtype():
    """The floating point dtype that creation functions give Python floats and empty shapes."""
    return _default_dtype


def set_default_dtype(dtype):
    """Set the default floating point dtype for the whole process (PyTorch's is global too)."""
    global _default_dtype
    dtype = as_dtype(dtype)
    if dtype.kind != "f":
        raise TypeError(f"set_default_dtype: only floating point dtypes can be the default, "
                        f"got {dtype}")
    _default_dtype = dtype


def manual_seed(seed):
    """Seed the random generator of every backend, those created later included."""
    global _seed
    _seed = int(seed)
    for backend in _backends.values():
        backend.seed(_seed)


# Tensor repr's options, set by `set_printoptions`; the defaults are PyTorch's.
_PRINT_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": float("inf"), "edgeitems": 3, "linewidth": 80},
}
print_options = dict(_PRINT_PROFILES["default"], sci_mode=None)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """How tensors print, as torch.set_printoptions: `profile` ('default', 'short', 'full')
    first, then each option given. precision: digits after the point; threshold: more elements
    than this are summarised with '...'; edgeitems: elements kept at each end of a summarised
    dim; linewidth: characters per line; sci_mode: True or False forces scientific notation on
    or off, None (what every call not naming it sets, as in PyTorch) chooses. Numbers print as
    PyTorch prints them; where a summary's '...' goes and how lines wrap is NumPy's layout."""
    if profile is not None:
        if profile not in _PRINT_PROFILES:
            raise ValueError(f"set_printoptions: unknown profile {profile!r}; expected one of "
                             f"{sorted(_PRINT_PROFILES)}")
        print_options.update(_PRINT_PROFILES[profile])
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems,
             "linewidth": linewidth}
    print_options.update({k: v for k, v in given.items() if v is not None})
    print_options["sci_mode"] = sci_mode


def array_repr(host_array):
    """The body of a Tensor's repr: NumPy's printing with the print options, summarised for
    large arrays."""
    options = print_options
    precision, sci_mode = options["precision"], options["sci_mode"]
    formatter = None
    if sci_mode:
        formatter = {"float_kind": lambda v: numpy.format_float_scientific(
            v, precision=precision, unique=False)}
    # PyTorch's look: every float with `precision` digits, unless all are whole numbers ("2.").
    floatmode = "fixed"
    if host_array.dtype.name == "bfloat16":  # NumPy prints it with float32's digits otherwise
        host_array = host_array.astype(float32)
    if host_array.dtype.kind == "f":
        finite = host_array[numpy.isfinite(host_array)]
        if finite.size and (finite == numpy.round(finite)).all() or not finite.size:
            floatmode = "maxprec"
    threshold = options["threshold"]
    return numpy.array2string(
        host_array, separator=", ", precision=precision,
        threshold=sys.maxsize if threshold == float("inf") else int(threshold),
        edgeitems=options["edgeitems"], max_line_width=options["linewidth"],
        suppress_small=sci_mode is False, formatter=formatter, floatmode=floatmode,
        prefix="tensor(")


def __getattr__(name):
    if name == "bfloat16":  # made at first use: its package takes a while to import
        return _dtypes.bfloat16
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
