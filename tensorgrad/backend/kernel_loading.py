"""When the compiled CPU kernels start to run.

Numba compiles a kernel the first time it is called with new argument types and keeps the
machine code on disk (`cache=True`). Compiling what one training step uses takes many seconds;
loading it back takes a fraction of one. So a process does not wait for a compilation:

- warm cache (a warm-up has finished for these kernel sources, this Numba and this dtype): the
  kernels run from the first call, each loaded from disk as it is first called;
- cold cache: a background thread compiles what a typical step uses (`tensorgrad.warmup`), for
  the dtype the run asked for, while the ops run their array code, the same results to
  rounding; the kernels take over when it is done. A message says so once.

TENSORGRAD_NUMBA=0 turns the kernels off; TENSORGRAD_NUMBA=wait compiles each in the calling
thread at its first use (what the tests do, so that a test's code path never depends on how fast
a compilation went). `python -m tensorgrad.warmup` compiles ahead of time.
"""
import atexit
import contextlib
import hashlib
import os
import sys
import threading
import time
import warnings

import numpy

_lock = threading.Lock()
_here = threading.local()  # .warming: this thread is the warm-up's, which uses kernels at once
_ready = set()  # dtypes whose kernels are compiled (or cached) in this process
_started = set()  # dtypes a warm-up thread was started for
_announced = False
_exiting = False


def mode():
    """'off', 'wait' or 'background', from TENSORGRAD_NUMBA."""
    value = os.environ.get("TENSORGRAD_NUMBA", "").strip().lower()
    return {"0": "off", "wait": "wait"}.get(value, "background")


def load():
    """The kernel package, or None without Numba or with TENSORGRAD_NUMBA=0."""
    if mode() == "off":
        return None
    try:
        from . import kernels
    except ImportError as exc:  # Numba is optional: pip install tensorgrad[fast]
        if exc.name != "numba":
            raise  # a broken kernel module is a bug to see, not a reason to run slower
        return None
    except Exception as exc:  # installed but unusable here (say, no writable cache directory)
        warnings.warn(f"tensorgrad: Numba kernels unavailable ({exc}); running the array code",
                      RuntimeWarning, stacklevel=3)
        return None
    return kernels


def ready(arrays):
    """Whether the kernels for these arrays' dtype may run now. On a cold cache the first ask
    starts the warm-up in the background and answers False until it has finished."""
    for a in arrays:  # every op with kernels asks: the answer is a set lookup once warm
        if a is not None:
            dtype = a.dtype
            break
    else:
        return True
    if dtype in _ready or getattr(_here, "warming", False):
        return True
    with _lock:
        if dtype in _ready:
            return True
        if dtype in _started:
            return False
        if mode() == "wait" or os.path.exists(_marker(dtype.name)):
            _ready.add(dtype)
            return True
        _started.add(dtype)
        _announce(dtype.name)
        threading.Thread(target=_warm_up, args=(dtype,), name=f"tensorgrad-warmup-{dtype}",
                         daemon=True).start()
    return False


def warm_up(dtype):
    """Compile (or load from the disk cache) the kernels a training step uses for `dtype`, in
    this thread, and mark them ready. Returns the seconds it took."""
    from .. import warmup  # the step it runs is written in tensorgrad's ops, a layer above
    dtype = numpy.dtype(dtype)
    start = time.perf_counter()
    with warming(True):
        warmup.step(dtype)
    with _lock:
        _ready.add(dtype)
    seconds = time.perf_counter() - start
    try:
        with open(_marker(dtype.name), "w") as marker:
            marker.write(f"warmed up in {seconds:.1f} s\n")
    except OSError:  # a read-only cache: the next run warms up in the background again
        pass
    return seconds


def is_warming():
    """Whether this thread runs a warm-up (its kernels are used at once, compiling them)."""
    return getattr(_here, "warming", False)


@contextlib.contextmanager
def warming(flag):
    before = is_warming()
    _here.warming = flag
    try:
        yield
    finally:
        _here.warming = before


def _warm_up(dtype):
    try:
        warm_up(dtype)
    except Exception as exc:  # noqa: BLE001 - the kernels then compile at their first call
        with _lock:
            _ready.add(dtype)
        if _exiting:  # the interpreter is tearing down the modules the step runs on
            return
        warnings.warn(f"tensorgrad: compiling the CPU kernels in the background failed ({exc!r});"
                      " they compile at their first use instead", RuntimeWarning, stacklevel=1)


def _announce(dtype):
    global _announced
    if not _announced:
        _announced = True
        print(f"tensorgrad: compiling CPU kernels for {dtype} (first run only; cached) - NumPy "
              "code runs meanwhile; `python -m tensorgrad.warmup` does it ahead of time",
              file=sys.stderr, flush=True)


def _marker(dtype):
    """The file that says a warm-up finished: named after the kernels' sources, Numba's version
    and the dtype, beside Numba's own cache (NUMBA_CACHE_DIR, else the kernels' __pycache__)."""
    import numba
    from . import kernels
    folder = os.path.dirname(kernels.__file__)
    stamp = hashlib.sha1(numba.__version__.encode())
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            info = os.stat(os.path.join(folder, name))
            stamp.update(f"{name}:{info.st_mtime_ns}:{info.st_size}".encode())
    cache = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(folder, "__pycache__")
    os.makedirs(cache, exist_ok=True)
    return os.path.join(cache, f"tensorgrad-warm-{dtype}-{stamp.hexdigest()[:16]}")


@atexit.register
def _at_exit():
    global _exiting
    _exiting = True


def _after_fork():
    # a forked child has no warm-up thread: it starts its own if it needs one
    _started.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
