"""tensorgrad.cuda: torch.cuda's questions about the GPUs, answered for this machine.

A GPU is available when CuPy imports and sees one (tensorgrad's cuda backend is CuPy). As in
torch, `is_available`, `device_count`, `manual_seed(_all)` and `empty_cache` are safe to call
without a GPU; the rest raise RuntimeError then. tensorgrad has no current-device switch:
`"cuda"` means cuda:0, so `current_device()` is 0.
"""
from . import backend as _backends
from .backend import cuda_runtime as _runtime

__all__ = ["current_device", "device_count", "empty_cache", "get_device_name",
           "get_device_properties", "is_available", "manual_seed", "manual_seed_all",
           "memory_allocated", "memory_reserved", "synchronize"]


def is_available():
    """True when CuPy imports and sees at least one GPU."""
    return device_count() > 0


def device_count():
    return _runtime.device_count()


def _index(device, op):
    """The GPU index `device` names (None, an int, 'cuda', 'cuda:N' or a tensorgrad.device)."""
    count = device_count()
    if count == 0:
        raise RuntimeError(f"torch.cuda.{op}: no GPU is available (tensorgrad's cuda backend "
                           "needs CuPy and an NVIDIA GPU)")
    if device is None:
        return 0
    if isinstance(device, int):
        index = device
    else:
        index = int(_backends.normalize_device(str(device)).partition(":")[2] or 0)
    if not 0 <= index < count:
        raise RuntimeError(f"torch.cuda.{op}: device {device!r} does not exist; this machine "
                           f"has {count} GPU(s)")
    return index


def current_device():
    return _index(None, "current_device")


def get_device_name(device=None):
    return _runtime.device_name(_index(device, "get_device_name"))


class _DeviceProperties:
    def __init__(self, name, total_memory):
        self.name, self.total_memory = name, total_memory

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', "
                f"total_memory={self.total_memory // 2**20}MB)")


def get_device_properties(device=None):
    """An object with the GPU's `name` and `total_memory` (bytes)."""
    index = _index(device, "get_device_properties")
    return _DeviceProperties(_runtime.device_name(index), _runtime.device_memory(index)[1])


def synchronize(device=None):
    """Wait for all work queued on the GPU to finish."""
    _runtime.synchronize(_index(device, "synchronize"))


def manual_seed(seed):
    """Seed the random generator of cuda:0; silently nothing without a GPU, as in torch."""
    if is_available():
        _backends.get_backend("cuda:0").seed(int(seed))


def manual_seed_all(seed):
    """Seed the random generator of every GPU; silently nothing without a GPU."""
    for index in range(device_count()):
        _backends.get_backend(f"cuda:{index}").seed(int(seed))


def empty_cache():
    """Give the memory CuPy's pools keep for reuse back to the driver (nothing without a GPU)."""
    if is_available():
        _runtime.free_cached_memory()


def memory_allocated(device=None):
    """Bytes in live arrays on the GPU (CuPy's memory pool)."""
    return _runtime.memory_pool_bytes(_index(device, "memory_allocated"))[0]


def memory_reserved(device=None):
    """Bytes CuPy's memory pool holds on the GPU, in use or kept for reuse."""
    return _runtime.memory_pool_bytes(_index(device, "memory_reserved"))[1]
