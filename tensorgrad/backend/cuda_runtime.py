"""What tensorgrad.cuda asks of the CUDA runtime, through CuPy (imported only when asked)."""


def device_count():
    """The number of GPUs CuPy sees; 0 without CuPy, a driver or a GPU."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - any failure to load CUDA means "no GPU"
        return 0


def device_name(index):
    import cupy
    name = cupy.cuda.runtime.getDeviceProperties(index)["name"]
    return name.decode() if isinstance(name, bytes) else name


def device_memory(index):
    """(free, total) bytes on GPU `index`."""
    import cupy
    with cupy.cuda.Device(index):
        return cupy.cuda.runtime.memGetInfo()


def synchronize(index):
    import cupy
    cupy.cuda.Device(index).synchronize()


def memory_pool_bytes(index):
    """(used, held) bytes of CuPy's memory pool on GPU `index`: in live arrays, and in all."""
    import cupy
    pool = cupy.get_default_memory_pool()
    with cupy.cuda.Device(index):
        return pool.used_bytes(), pool.total_bytes()


def free_cached_memory():
    """Return the blocks CuPy's memory pools keep for reuse to the driver."""
    import cupy
    cupy.get_default_memory_pool().free_all_blocks()
    cupy.get_default_pinned_memory_pool().free_all_blocks()
