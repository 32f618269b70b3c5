"""When the compiled CPU kernels start to run.

Numba compiles a kernel the first time it is called with new argument types and keeps the
machine code on disk (`cache=True`). Compiling what one training step uses takes many seconds;
even importing Numba and loading that code back from its cache takes about a second. So a
process never waits for either: the first op that could use a kernel starts a background thread
which imports Numba and the kernels, then runs a typical step (`tensorgrad.warmup`) for the
dtype asked, loading each kernel from the cache (warm) or compiling it (cold: a message says so
once). The ops run their array code meanwhile, the same results to rounding, and the kernels
take over when the thread is done.

TENSORGRAD_NUMBA=0 turns the kernels off; TENSORGRAD_NUMBA=wait loads or compiles each in the
calling thread at its first use (what the tests do, so that a test's code path never depends on
how fast a compilation went). `python -m tensorgrad.warmup` compiles ahead of time.
"""
import atexit
import contextlib
import hashlib
import importlib.util
import os
import sys
import threading
import time
import warnings

import numpy

DTYPES = ("float32", "float64")  # the dtypes the kernels are written for
_lock = threading.Lock()
_here = threading.local()  # .warming: this thread is the warm-up's, which uses kernels at once
_ready = set()  # dtypes whose kernels are compiled (or cached) in this process
_started = set()  # dtypes a warm-up thread was started for
_failed = []  # what went wrong importing the kernels in a warm-up thread, raised by ready()
_announced = False
_exiting = False
_numba = None  # whether Numba is installed, found once without importing it


def mode():
    """'off', 'wait' or 'background', from TENSORGRAD_NUMBA."""
    value = os.environ.get("TENSORGRAD_NUMBA", "").strip().lower()
    return {"0": "off", "wait": "wait"}.get(value, "background")


def wanted():
    """Whether kernels may run in this process: Numba is installed (found without importing it,
    which takes a while) and TENSORGRAD_NUMBA is not 0."""
    global _numba
    if _numba is None:
        _numba = importlib.util.find_spec("numba") is not None
    return _numba and mode() != "off"


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
    """Whether the kernels for these arrays' dtype may run now. The first ask for a dtype starts
    the warm-up in the background (or runs it here with TENSORGRAD_NUMBA=wait) and answers
    False until it has finished."""
    for a in arrays:  # every op with kernels asks: the answer is a set lookup once warm
        if a is not None:
            dtype = a.dtype
            break
    else:
        return True
    if dtype in _ready or getattr(_here, "warming", False):
        return True
    if _failed:
        raise _failed[0]
    if dtype.name not in DTYPES:
        return False
    with _lock:
        if dtype in _ready:
            return True
        if dtype in _started:
            return False
        if mode() == "wait":
            _ready.add(dtype)
            return load() is not None
        _started.add(dtype)
        threading.Thread(target=_warm_up, args=(dtype,), name=f"tensorgrad-warmup-{dtype}",
                         daemon=True).start()
    return False


def warm_up(dtype, announce=False):
    """Compile (or load from the disk cache) the kernels a training step uses for `dtype`, in
    this thread, and mark them ready. Returns the seconds it took."""
    from .. import warmup  # the step it runs is written in tensorgrad's ops, a layer above
    dtype = numpy.dtype(dtype)
    start = time.perf_counter()
    marker = _marker(dtype.name)
    cached = os.path.exists(marker)
    if announce and not cached:
        _announce(dtype.name)
    with warming(True):
        warmup.step(dtype)
    with _lock:
        _ready.add(dtype)
    seconds = time.perf_counter() - start
    if not cached:
        try:
            with open(marker, "w") as out:
                out.write(f"compiled in {seconds:.1f} s\n")
        except OSError:  # a read-only cache: the next run says it compiles, and loads instead
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
        kernels = load()
    except Exception as exc:  # noqa: BLE001 - a broken kernel module: the next ready() raises it
        _failed.append(exc)
        return
    if kernels is None:  # Numba installed but unusable here: load() said why
        return
    try:
        warm_up(dtype, announce=True)
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
