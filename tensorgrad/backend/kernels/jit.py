"""What every kernel module shares: the Numba decorators and array reshaping helpers."""
import ctypes
import os
import types

import numba
import numpy
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from .. import kernel_loading, mkl_blas, threads
from . import disk_cache
from ..per_thread import per_thread

# error_model="numpy": x / 0 is inf or nan as in the array code, and without a zero check per
# division the loops vectorise; "reassoc" lets sums vectorise too.
_OPTIONS = dict(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})


def jit(fn, **options):
    """fn compiled by Numba with the kernels' options. Its compiled code is kept on disk (what
    Numba's cache=True does, with disk_cache.py), so only a machine's first process compiles it."""
    kernel = numba.njit(**_OPTIONS, **options)(fn)
    if disk_cache.USABLE:
        kernel._cache = disk_cache.DiskCache(kernel.py_func)
        kernel._compilation_chain_init_hook = disk_cache.find_extensions_when_compiling
    else:
        kernel.enable_caching()
    return kernel


DTYPES = tuple(numpy.dtype(name) for name in kernel_loading.DTYPES)

# Below this many elements a threaded kernel runs on the calling thread alone: PyTorch's grain
# (at::internal::GRAIN_SIZE); it keeps decoding's one-row calls from waking the threads (generate).
GRAIN = 32768


class threaded:
    """A kernel whose outer loop is a `numba.prange`, split over the CPU threads as PyTorch's
    CPU kernels split theirs (get_num_threads; benchmarks/: gpt_step, mlp_step at two threads).

    Compiled twice from one source: with parallel=True, on Numba's OpenMP threading layer (GNU
    OpenMP, the runtime MKL runs on in this process, so that one pool of threads, awake between a
    step's kernels and products, serves both), and as a plain loop, where prange is range. A
    call runs the plain loop (compiled at its first use) when the first argument has fewer than
    GRAIN elements (or the call's `work`, where it names one, is under GRAIN: attention's
    products), on one thread, on the pool's threads (threads.map_matrices, which already splits
    the work), in a forked child (GNU OpenMP does not survive fork: Numba ends a child's first
    parallel loop), without MKL on GNU OpenMP (other threads then run the products) and when
    Numba's threading layer is not OpenMP. Compiled loops call `.serial`: the loop around them
    is what gets split.
    """

    def __init__(self, fn):
        self.serial = jit(fn)
        # a copy under another name: Numba's disk cache keys a function on its name and source,
        # not on its options, so the two compilations would otherwise share one entry
        twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                                  fn.__closure__)
        twin.__qualname__ = fn.__qualname__ + "_threaded"
        self.parallel = jit(twin, parallel=True)
        self.__doc__, self.__name__ = fn.__doc__, fn.__name__

    def __call__(self, *args, work=None):
        if (args[0].size if work is None else work) < GRAIN or _threads_here() == 1:
            return self.serial(*args)
        return self.parallel(*args)


_here = per_thread(threads=None)  # the count last given to Numba, which keeps one a thread
_forked = False
_layer = None  # whether Numba's parallel loops run on OpenMP, found at the first threaded call


def _after_fork():
    global _forked
    _forked = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _threads_here():
    """How many threads a threaded kernel called on this thread splits over (1: the plain loop),
    telling Numba when the count has changed (set_num_threads)."""
    if (_forked or threads.in_pool() or not mkl_blas.threads_on_gnu_openmp()
            or not _on_openmp()):
        # without MKL on GNU OpenMP the products run on other threads that spin between calls,
        # and Numba's would fight them for the cores (gpt_step at two threads)
        return 1
    count = min(threads.get_num_threads(), numba.config.NUMBA_NUM_THREADS)
    if _here.threads != count:
        numba.set_num_threads(count)
        _here.threads = count
    return count


def _on_openmp():
    global _layer
    if _layer is None:
        try:  # loads the threading layer Numba would pick (NUMBA_THREADING_LAYER, else its order)
            from numba.np.ufunc.parallel import _launch_threads
            if not {"NUMBA_THREADING_LAYER", "NUMBA_THREADING_LAYER_PRIORITY"} & set(os.environ):
                # OpenMP before TBB (Numba's own order when the mkl wheel brings tbb): the one
                # runtime whose pool MKL's products share, so the kernels split (gpt_step)
                numba.config.THREADING_LAYER_PRIORITY = ["omp", "tbb", "workqueue"]
            settings = _openmp_settings()
            _launch_threads()
            # Numba's OpenMP layer, starting, sets this thread's OpenMP thread count to every CPU
            # (its own loops name their count) and turns nested parallel regions on, in the
            # runtime PyTorch and MKL may read too: torch.get_num_threads() went from 1 to 2
            # beside tensorgrad, and torch's attention, whose threads each call MKL, ran on
            # teams inside teams (benchmarks/README.md: profile_decode at two threads). Neither
            # is needed here: put both back.
            for runtime, count, levels in settings:
                runtime.omp_set_num_threads(count)
                runtime.omp_set_max_active_levels(levels)
            _layer = numba.threading_layer() == "omp"
        except (ImportError, ValueError):  # no layer loads (no libgomp, say): plain loops
            _layer = False
    return _layer


def _openmp_settings():
    """(runtime, thread count, nested levels) for this thread, for every GNU OpenMP runtime in
    the process (PyTorch's wheel brings a copy under its own name), the system's loaded first."""
    try:
        ctypes.CDLL("libgomp.so.1")
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/libgomp" in line}
    except OSError:  # no libgomp (then no OpenMP layer either), or not Linux
        return []
    runtimes = [ctypes.CDLL(path) for path in sorted(paths)]  # loaded already: the same ones
    return [(runtime, runtime.omp_get_max_threads(), runtime.omp_get_max_active_levels())
            for runtime in runtimes]


@intrinsic
def new_array(typingctx, shape, dtype):
    """numpy.empty(shape, dtype) inside a kernel: a C-ordered array, for a tuple of sizes (never
    negative: kernels take them from their arrays) and a dtype: a NumPy scalar type, an array's
    .dtype, or an array, whose dtype it takes (in a prange loop: Numba passes a .dtype into the
    loop's function through numba.np.npyimpl). Built where it is called: Numba's numpy.empty is
    a separate compiled function whose environment, rebuilt at each load from the cache, imports
    numba.np.arrayobj (benchmarks/README.md: cold_start, warm cache)."""
    if not (isinstance(shape, numba.types.UniTuple)
            and isinstance(shape.dtype, numba.types.Integer)):
        raise numba.TypingError(f"new_array: shape must be a tuple of ints, got {shape}")
    element = getattr(dtype, "dtype", None) or getattr(dtype, "instance_type", None)
    if not isinstance(element, numba.types.Number):
        raise numba.TypingError(f"new_array: dtype must be a number type, got {dtype}")
    array_type = numba.types.Array(element, shape.count, "C")

    def codegen(context, builder, signature, args):
        intp = context.get_value_type(numba.types.intp)
        sizes = [context.cast(builder, size, shape.dtype, numba.types.intp)
                 for size in cgutils.unpack_tuple(builder, args[0])]
        itemsize = context.get_constant(numba.types.intp, context.get_abi_sizeof(
            context.get_data_type(element)))
        strides = [itemsize]  # C order: the last dim's stride is one item
        for size in reversed(sizes[1:]):
            strides.insert(0, builder.mul(strides[0], size))
        nbytes = builder.mul(strides[0], sizes[0])
        meminfo = context.nrt.meminfo_alloc_aligned(
            builder, nbytes, context.get_preferred_array_alignment(element))
        array = context.make_array(array_type)(context, builder)
        context.populate_array(
            array, data=builder.bitcast(context.nrt.meminfo_data(builder, meminfo),
                                        context.get_data_type(element).as_pointer()),
            shape=cgutils.pack_array(builder, sizes, ty=intp),
            strides=cgutils.pack_array(builder, strides, ty=intp),
            itemsize=itemsize, meminfo=meminfo)
        return array._getvalue()

    return array_type(shape, dtype), codegen


@intrinsic
def matrix_view(typingctx, buffer, rows, cols):
    """buffer[:rows * cols] as a C-ordered (rows, cols) array over the same memory, for a 1-d
    C-ordered buffer: what buffer[:rows * cols].reshape(rows, cols) gives, without Numba's
    reshape, which names numba.np.arrayobj (see new_array). Unchecked, as a kernel's indexing
    is: the caller sizes the buffer for its largest block."""
    if not (isinstance(buffer, numba.types.Array) and buffer.ndim == 1 and buffer.layout == "C"):
        raise numba.TypingError(f"matrix_view: buffer must be a 1-d C-ordered array, got {buffer}")
    if not (isinstance(rows, numba.types.Integer) and isinstance(cols, numba.types.Integer)):
        raise numba.TypingError(f"matrix_view: rows and cols must be ints, got {rows}, {cols}")
    view_type = numba.types.Array(buffer.dtype, 2, "C")

    def codegen(context, builder, signature, args):
        intp = context.get_value_type(numba.types.intp)
        source = context.make_array(buffer)(context, builder, args[0])
        sizes = [context.cast(builder, args[i], signature.args[i], numba.types.intp)
                 for i in (1, 2)]
        view = context.make_array(view_type)(context, builder)
        context.populate_array(
            view, data=source.data, shape=cgutils.pack_array(builder, sizes, ty=intp),
            strides=cgutils.pack_array(builder, [builder.mul(sizes[1], source.itemsize),
                                                 source.itemsize], ty=intp),
            itemsize=source.itemsize, meminfo=source.meminfo, parent=source.parent)
        # the view holds a reference to the buffer's memory, as a slice of it would
        return impl_ret_borrowed(context, builder, view_type, view._getvalue())

    return view_type(buffer, rows, cols), codegen


def flat(a):
    """a as a C-contiguous 1-d array (a view when it already is contiguous)."""
    return numpy.ascontiguousarray(a).reshape(-1)


def rows_of(a, cols):
    """a as C-contiguous (rows, cols), in one reshape (a view when a already is contiguous)."""
    return numpy.ascontiguousarray(a).reshape(-1, cols)
