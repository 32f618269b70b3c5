"""When the compiled CPU kernels start to run.

Numba compiles a kernel the first time it is called with new argument types and keeps the
machine code on disk (`cache=True`). Compiling the kernels of one op takes seconds; loading them
back takes a fraction of one. So a run never waits for a compilation, and builds only what it
uses. The kernels come in families, one per op (the name before the dot of an override's name:
"layer_norm" for "layer_norm" and "layer_norm.vjp"). The first time an op asks for its family's
kernels for a dtype:

- warm (a marker beside Numba's cache says this family was built, for these kernel sources,
  this Numba and this dtype): the kernels run at once, each loaded from the cache at its first
  call (a thread beside the run would slow its first step more: cold_start);
- cold: the op gets the answer "not yet" and runs its array code (the same results to
  rounding), while a background thread runs the family's recipe (`tensorgrad.warmup`),
  compiling its kernels (a message says so once). From then on that op runs the kernels.

TENSORGRAD_NUMBA=0 turns the kernels off; TENSORGRAD_NUMBA=wait loads or compiles each in the
calling thread at its first use (what the tests do, so that a test's code path never depends on
how fast a compilation went). `python -m tensorgrad.warmup` compiles every family ahead of time.
"""
import atexit
import contextlib
import gc
import hashlib
import importlib.util
import os
import sys
import threading
import time
import warnings

import numpy

from . import deferred_imports, numba_blas_check
from .per_thread import per_thread

DTYPES = ("float32", "float64")  # the dtypes the kernels are written for
EVERY = "*"  # the family of a caller that names none: every family's kernels
_lock = threading.Lock()
_here = per_thread(warming=False)  # True on the warm-up's thread, which uses kernels at once
_ready = set()  # (family, dtype) whose kernels are compiled (or loaded) in this process
_asked = set()  # (family, dtype) handed to the warm-up thread
_queue = []  # what the warm-up thread has still to do, in the order asked
_worker = None  # the warm-up thread while it runs
_failed = []  # what went wrong importing the kernels in the warm-up thread, raised by ready()
_announced = False
_exiting = False
_numba = None  # whether Numba is installed, found once without importing it
_stamp = None  # the kernels' sources and Numba's version, hashed for the markers' names


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
        kernels = _import_kernels()
    except ImportError as exc:  # Numba is optional: pip install tensorgrad[fast]
        if exc.name != "numba":
            raise  # a broken kernel module is a bug to see, not a reason to run slower
        return None
    except Exception as exc:  # installed but unusable here (say, no writable cache directory)
        warnings.warn(f"tensorgrad: Numba kernels unavailable ({exc}); running the array code",
                      RuntimeWarning, stacklevel=3)
        return None
    return kernels


def ready(arrays, family=EVERY):
    """Whether `family`'s kernels for these arrays' dtype may run now. The first ask hands the
    family to the warm-up thread (or builds it here with TENSORGRAD_NUMBA=wait) and answers
    False until it is built."""
    for a in arrays:  # every op with kernels asks: the answer is a set lookup once built
        if a is not None:
            key = (family, a.dtype)
            break
    else:
        return True
    if key in _ready or _here.warming:
        return True
    if _failed:
        raise _failed[0]
    if key[1].name not in DTYPES:
        return False
    global _worker
    with _lock:
        if key in _ready:
            return True
        if key in _asked:
            return False
        if mode() == "wait" or _built(family, key[1].name):  # each kernel compiles or loads
            _ready.add(key)                                 # at its first call, here
            return load() is not None
        _asked.add(key)
        _queue.append(key)
        if _worker is None:
            _worker = threading.Thread(target=_work, name="tensorgrad-warmup", daemon=True)
            _worker.start()
    return False


def warm_up(dtype, families=None, announce=False):
    """Compile (or load from the disk cache) the kernels of `families` (default: every one) for
    `dtype`, in this thread, and mark them ready. Returns the seconds it took."""
    from .. import warmup  # the recipes are written in tensorgrad's ops, a layer above
    dtype = numpy.dtype(dtype)
    start = time.perf_counter()
    for family in families or list(warmup.RECIPES):
        marker = _marker(family, dtype.name)
        cached = os.path.exists(marker)
        if announce and not cached:
            _announce(dtype.name)
        began = time.perf_counter()
        with warming(True):
            warmup.run(family, dtype)
        with _lock:
            _ready.add((family, dtype))
        if not cached:
            try:
                with open(marker, "w") as out:
                    out.write(f"compiled in {time.perf_counter() - began:.1f} s\n")
            except OSError:  # a read-only cache: the next run says it compiles, and loads
                pass
    with _lock:
        if families is None:
            _ready.add((EVERY, dtype))
    return time.perf_counter() - start


def is_warming():
    """Whether this thread runs a warm-up (its kernels are used at once, compiling them)."""
    return _here.warming


@contextlib.contextmanager
def warming(flag):
    before = is_warming()
    _here.warming = flag
    try:
        yield
    finally:
        _here.warming = before


def _work():
    """The warm-up thread: imports the kernels, then builds what ops ask for, in turn."""
    global _worker
    try:
        kernels = load()
    except Exception as exc:  # noqa: BLE001 - a broken kernel module: the next ready() raises it
        _failed.append(exc)
        kernels = None
    while True:
        with _lock:
            if not _queue or kernels is None:  # None: Numba unusable here, load() said why
                _worker = None
                return
            family, dtype = _queue.pop(0)
        try:
            warm_up(dtype, None if family == EVERY else [family], announce=True)
        except Exception as exc:  # noqa: BLE001 - the kernels then compile at their first call
            with _lock:
                _ready.add((family, dtype))
            if _exiting:  # the interpreter is tearing down the modules the recipes run on
                return
            warnings.warn(f"tensorgrad: compiling the {family} kernels in the background failed "
                          f"({exc!r}); they compile at their first use instead", RuntimeWarning,
                          stacklevel=1)


def _announce(dtype):
    global _announced
    if not _announced:
        _announced = True
        print(f"tensorgrad: compiling CPU kernels for {dtype} (first run only; cached) - NumPy "
              "code runs meanwhile; `python -m tensorgrad.warmup` does it ahead of time",
              file=sys.stderr, flush=True)


def _built(family, dtype):
    """Whether the family's kernels (every family's, for EVERY) are in the disk cache."""
    from .. import warmup
    families = warmup.RECIPES if family == EVERY else [family]
    return all(os.path.exists(_marker(name, dtype)) for name in families)


def _marker(family, dtype):
    """The file that says a family was built: named after the family, the kernels' sources,
    Numba's version and the dtype, beside Numba's own cache (NUMBA_CACHE_DIR, else the kernels'
    __pycache__)."""
    global _stamp
    folder = os.path.dirname(_import_kernels().__file__)
    if _stamp is None:  # once a process: a run asks for every family it uses
        import numba
        stamp = hashlib.sha1(numba.__version__.encode())
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                info = os.stat(os.path.join(folder, name))
                stamp.update(f"{name}:{info.st_mtime_ns}:{info.st_size}".encode())
        _stamp = stamp.hexdigest()[:16]
    cache = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(folder, "__pycache__")
    os.makedirs(cache, exist_ok=True)
    return os.path.join(cache, f"tensorgrad-warm-{family}-{dtype}-{_stamp}")


def _import_kernels():
    numba_blas_check.load()  # before Numba starts: without it, Numba imports all of scipy.linalg
    deferred_imports.defer()  # and two modules it uses only to compile or to read a config file
    with collector_paused():
        from . import kernels
    return kernels


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector off for a while (unless it was off already): Numba's
    import and each kernel's load from the cache make many objects that live as long as the
    process, and the collector's passes over them as they are made slow a warm first step
    (cold_start)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@atexit.register
def _at_exit():
    global _exiting
    _exiting = True


def _after_fork():
    # a forked child has no warm-up thread (and a lock the parent's may have held): it starts
    # its own for what it asks again
    global _lock, _worker
    _lock, _worker = threading.Lock(), None
    _asked.intersection_update(_ready)
    _queue.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
