"""How many CPU threads an op may use: torch.set_num_threads / get_num_threads, and the one loop
of tensorgrad's own that runs on several of them.

PyTorch's CPU kernels split their work across an intra-op thread pool. Here three things use the
threads: the BLAS (MKL's OpenMP threads, or OpenBLAS's), the compiled kernels whose outer loop is
a numba.prange (backend/kernels/jit.py `threaded`: GELU, the norms, the softmaxes, attention's
whole-matrix loop, the optimizers' updates, cross-entropy), which Numba runs on the same GNU
OpenMP threads as MKL, and the pool below. Other array calls run on the calling thread.

The pool is for loops of small ones: the tiled attention path's array code works one (T, E)
matrix and one block at a time, products of 256 x 64 x 512 that a second BLAS thread speeds up
by a third. So that loop runs its independent matrices (batch x heads) on a pool of threads
instead, each with a single-threaded BLAS and single-threaded kernels (in_pool); the loop in
Python releases the lock only inside its array calls. Its compiled twin
(backend/kernels/tiled_attention.py) splits the matrices over the OpenMP threads instead, as the
threaded kernels do.

The count starts from OMP_NUM_THREADS, as PyTorch's does, else the CPUs this process may run on.
`set_num_threads(n)` sets it and the BLAS libraries' (through threadpoolctl, which finds
OpenBLAS and MKL in the process); the kernels read it at each call.
"""
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from . import kernel_loading
from .per_thread import per_thread

_lock = threading.Lock()
_threads = None  # set by set_num_threads, else read from the environment on first use
_set_by_user = False  # whether set_num_threads chose _threads (a library loaded later takes it)
_pool = None  # (size, ThreadPoolExecutor), made on the first parallel map
_controller = None  # threadpoolctl's handle on the BLAS libraries, made when first needed
_here = per_thread(pool=False)  # .pool: True on the pool's threads
_openblas_single = False  # set by openblas_on_one_thread: MKL takes the float products
openblas_follows_mkl = False  # set by backend.tune_process: OpenBLAS to one thread once MKL loads


def _forget_pool():
    # a forked child (a DataLoader worker) inherits the pool but not its threads: work handed to
    # it would wait forever, so the child makes its own
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(after_in_child=_forget_pool)


def _from_environment():
    value = os.environ.get("OMP_NUM_THREADS", "")
    if value.strip().isdigit() and int(value) > 0:
        return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def get_num_threads():
    """The number of threads an op may use on the CPU (torch.get_num_threads)."""
    global _threads
    if _threads is None:
        _threads = _from_environment()
    return _threads


def set_num_threads(n):
    """Use n threads on the CPU: the BLAS's, the threaded kernels' and tensorgrad's own parallel
    loop's (torch.set_num_threads)."""
    global _threads, _set_by_user
    # RuntimeError, as torch raises for both
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"set_num_threads: expected an int, got {type(n).__name__} {n!r}")
    if n < 1:
        raise RuntimeError(f"set_num_threads: expected a positive int, got {n}")
    from . import mkl_blas  # it imports this module
    with _lock:
        _threads, _set_by_user = n, True
        _blas().limit(limits=_blas_limits(n), user_api=None)
        mkl_blas.count_changed(n)


def _blas_limits(n):
    """threadpoolctl's limits for n threads: every BLAS's count, but OpenBLAS's 1 once
    openblas_on_one_thread was called."""
    return {"blas": n, **(_openblas_limits() if _openblas_single else {})}


def _openblas_limits():
    return {lib.filepath: 1 for lib in _blas().lib_controllers if lib.internal_api == "openblas"}


def openblas_on_one_thread():
    """Keep NumPy's OpenBLAS on one thread from now on: once MKL takes the float products
    (mkl_blas), OpenBLAS gets only those under mkl_blas.MIN_WORK, which a second thread does not
    speed up, while its worker spins between calls on the core that the threaded kernels and
    MKL's OpenMP threads need (gpt_step at two threads; benchmarks/README.md, "Two threads")."""
    global _openblas_single
    with _lock:
        _openblas_single = True
        _blas().limit(limits=_openblas_limits(), user_api=None)


def chosen_num_threads():
    """The count set_num_threads chose, or None when none was set (a BLAS then keeps what its
    own environment variables say)."""
    return _threads if _set_by_user else None


def _blas():
    """threadpoolctl's controller over the BLAS libraries in the process (finding them walks the
    loaded libraries, so it is kept until libraries_changed())."""
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController
        _controller = ThreadpoolController()
    return _controller


def libraries_changed():
    """A BLAS library was loaded after the first parallel map (MKL opens at the first float
    product): look for them again next time."""
    global _controller
    _controller = None


def in_pool():
    """Whether this thread is one of the pool's, whose work map_matrices has already split over
    the threads (a kernel called there runs on it alone)."""
    return _here.pool


def _run(fn, i, arrays, warming):
    _here.pool = True  # MKL's products and the threaded kernels then keep to this thread
    with kernel_loading.warming(warming):  # a warm-up's matrices are the warm-up's too
        fn(i, *arrays)


def map_matrices(fn, items):
    """fn(i, *arrays) for every (i, arrays) in items, the calls spread over get_num_threads()
    threads, each with a one-thread BLAS. fn must write only its own i's part of any output."""
    global _pool
    threads = min(get_num_threads(), len(items))
    if threads <= 1:
        for i, arrays in items:
            fn(i, *arrays)
        return
    with _lock:
        if _pool is None or _pool[0] != get_num_threads():
            if _pool is not None:
                _pool[1].shutdown(wait=False)
            _pool = (get_num_threads(), ThreadPoolExecutor(get_num_threads(),
                                                           thread_name_prefix="tensorgrad"))
        pool, blas = _pool[1], _blas()
    with blas.limit(limits=1, user_api="blas"):  # the threads take the cores the BLAS would
        warming = kernel_loading.is_warming()
        for done in [pool.submit(_run, fn, i, arrays, warming) for i, arrays in items]:
            done.result()  # re-raises a worker's error here
