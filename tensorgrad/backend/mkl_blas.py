"""Intel MKL's GEMM under the CPU backend's matmul, called through ctypes.

Why: the GEMM-bound benchmark rows (gpt_step, mlp_step) are bound by the BLAS library, and
NumPy's wheel ships OpenBLAS while PyTorch's CPU wheel uses MKL, which is faster at gpt_step's
products (benchmarks/blas_shapes.py; the figures are in benchmarks/README.md). The `mkl` wheel
(pip install tensorgrad[mkl]) brings libmkl_rt; NumPy stays as it is, and only float32/float64
matrix products are sent here.

`matmul(a, b)` is the product of two arrays, or None when it cannot take them; the backend then
runs NumPy's matmul, unchanged. It takes operands whose matrices (last two dims) are row- or
column-major (a transposed view is passed with BLAS's transpose flag and leading dimension, not
copied): one `cblas_?gemm`, one `cblas_?gemm_batch_strided` when the batch dims fold into one
stride each (broadcast batch dims are stride 0), else one grouped `cblas_?gemm_batch` given
every matrix's address. The library is
loaded at the first float product, so `import tensorgrad` stays cheap; TENSORGRAD_BLAS=numpy,
or no library found, leaves NumPy's BLAS doing everything.
"""
import ctypes
import ctypes.util
import functools
import glob
import math
import os
import site
import sys
import threading

import numpy

from . import aligned, threads
from .per_thread import per_thread

# CBLAS's enum values, and MKL's for its layer switches (mkl_service.h).
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_THREADING_SEQUENTIAL, _THREADING_GNU = 1, 3
_INTERFACE_LP64 = 0
_INT_MAX = 2**31 - 1  # MKL_INT is a C int in the LP64 interface we ask for
# Products with fewer multiply-adds stay on NumPy: below it the ctypes call and its checks cost
# more than MKL saves (generate, gpt_step; the figures are in benchmarks/README.md).
MIN_WORK = 2**20
# A Linear layer's product with its bias, one compiled call without ctypes' conversions
# (kernels/matmul.py `linear`), gains from MKL from half as many (generate_nocache).
MIN_WORK_LINEAR = 2**19

_local = per_thread(threads=None)  # what this thread last asked of MKL (its count is per thread)

_FLOAT32, _FLOAT64 = numpy.dtype("float32"), numpy.dtype("float64")
_lib = ...  # the loaded library (a ctypes.CDLL), None when there is none; ... until first use
_loading = threading.Lock()
_forked = False  # set in a forked child, whose MKL stays on one thread
_gemm = {}  # dtype -> (cblas_?gemm, cblas_?gemm_batch_strided, ctypes scalar type)
_on_gnu_openmp = False  # whether the library runs its threads on GNU OpenMP (set by _open)
_grouped = {}  # dtype -> cblas_?gemm_batch (matrices at any addresses)
_addresses_of = {}  # dtype -> cblas_?gemm's address, for compiled callers


def _candidates():
    """Where libmkl_rt may be: the environment's own lib/ (where the `mkl` wheel puts it; also
    the base and --user installs) first, then whatever the dynamic loader finds."""
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix, site.getuserbase())):
        yield from sorted(glob.glob(os.path.join(prefix, "lib", "libmkl_rt.so*")), reverse=True)
    yield from ("libmkl_rt.so.3", "libmkl_rt.so.2", ctypes.util.find_library("mkl_rt"))


def _open():
    """libmkl_rt set up for this module's calls, or None."""
    global _on_gnu_openmp
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path) if path else None
        except OSError:
            continue
        if lib is None:
            continue
        try:
            # Our argtypes say C int: make sure the LP64 interface is the one in use
            # (MKL_INTERFACE_LAYER, or another user of the library in this process, may have
            # chosen ILP64 already).
            if lib.MKL_Set_Interface_Layer(_INTERFACE_LP64) != _INTERFACE_LP64:
                return None
            if "MKL_THREADING_LAYER" not in os.environ:
                # GNU OpenMP, the runtime PyTorch's wheel uses, not MKL's default Intel one: with
                # both runtimes in a process (tensorgrad beside torch, imported in either order)
                # Intel-threaded MKL sometimes returns wrong products (a (1024, 2048) @ (2048, 1)
                # came out doubled, test_mkl_blas.py). Without libgomp, one thread. Threads
                # come from MKL_NUM_THREADS / OMP_NUM_THREADS, as for any MKL program.
                layer = _THREADING_GNU if _gnu_openmp() else _THREADING_SEQUENTIAL
                lib.MKL_Set_Threading_Layer(layer)
                _on_gnu_openmp = layer == _THREADING_GNU
            else:
                _on_gnu_openmp = os.environ["MKL_THREADING_LAYER"].strip().upper() == "GNU"
            _bind(lib)
        except AttributeError:  # an MKL too old for the batched call (before 2020): not ours
            return None
        # GNU OpenMP's thread pool does not survive fork: a child's first threaded GEMM after
        # the parent ran one hangs. So a forked child (DataLoader workers, multiprocessing)
        # runs MKL on one thread, as PyTorch's DataLoader workers run torch.
        os.register_at_fork(after_in_child=lambda lib=lib: _one_thread_after_fork(lib))
        return lib
    return None


def _gnu_openmp():
    """Whether GNU OpenMP (libgomp) is in this process already or can be loaded."""
    try:
        ctypes.CDLL("libgomp.so.1")
        return True
    except OSError:
        return hasattr(ctypes.CDLL(None), "GOMP_parallel")  # PyTorch's own copy, say


def _bind(lib):
    p, i = ctypes.c_void_p, ctypes.c_int
    for dtype, prefix, scalar in ((_FLOAT32, "s", ctypes.c_float),
                                  (_FLOAT64, "d", ctypes.c_double)):
        gemm = getattr(lib, f"cblas_{prefix}gemm")
        # layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc
        gemm.argtypes = [i, i, i, i, i, i, scalar, p, i, p, i, scalar, p, i]
        gemm.restype = None
        batch = getattr(lib, f"cblas_{prefix}gemm_batch_strided")
        # the same with each operand's batch stride after its leading dimension, then the count
        batch.argtypes = [i, i, i, i, i, i, scalar, p, i, i, p, i, i, scalar, p, i, i, i]
        batch.restype = None
        # the grouped call, one group: each argument an array (here of one entry), except the
        # three arrays of matrix addresses, one per product, and the group count
        grouped = getattr(lib, f"cblas_{prefix}gemm_batch")
        grouped.argtypes = [i, p, p, p, p, p, p, p, p, p, p, p, p, p, i, p]
        grouped.restype = None
        _gemm[dtype] = (gemm, batch, scalar)
        _addresses_of[dtype] = ctypes.cast(gemm, ctypes.c_void_p).value
        _grouped[dtype] = grouped


def library():
    """The loaded libmkl_rt, or None (TENSORGRAD_BLAS=numpy, or MKL not installed)."""
    global _lib
    if _lib is not ...:
        return _lib
    with _loading:  # two threads' first products (a warm-up beside the run) load it once
        if _lib is ...:
            _lib = _load()
    return _lib


def _load():
    lib = None if os.environ.get("TENSORGRAD_BLAS") == "numpy" else _open()
    if lib is not None:
        # MKL's count is set here, as a number: left to itself, under GNU OpenMP, it follows
        # the calling thread's OpenMP setting, which Numba's OpenMP layer raises to every CPU
        # when it starts. set_num_threads, if called before MKL loaded, gives the count, then
        # MKL_NUM_THREADS, then get_num_threads (OMP_NUM_THREADS, else every CPU).
        lib.MKL_Set_Num_Threads(threads.chosen_num_threads() or _environment_count()
                                or threads.get_num_threads())
        threads.libraries_changed()
        if threads.openblas_follows_mkl:  # asked for by backend.tune_process
            threads.openblas_on_one_thread()
    return lib


def threads_on_gnu_openmp():
    """Whether MKL takes the float products with its threads on GNU OpenMP, the runtime Numba's
    OpenMP layer runs the threaded kernels on (kernels/jit.py): one pool for both. Not when
    MKL_THREADING_LAYER chose the runtime, which may be Intel's."""
    return library() is not None and _on_gnu_openmp


def _environment_count():
    value = os.environ.get("MKL_NUM_THREADS", "")
    return int(value) if value.strip().isdigit() and int(value) > 0 else None


def name():
    """Which BLAS runs the CPU backend's float matrix products, in words (loads MKL if present):
    e.g. "MKL 2026.2 (ctypes, 1 thread)" or "NumPy's scipy-openblas 0.3.31.188.0"."""
    lib = library()
    if lib is None:
        try:
            blas = numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]
            which = f"NumPy's {blas['name']} {blas.get('version', '')}".strip()
        except (TypeError, KeyError):  # NumPy before 1.26 cannot report it as a dict
            which = "NumPy's BLAS"
        return which + (" (TENSORGRAD_BLAS=numpy)"
                        if os.environ.get("TENSORGRAD_BLAS") == "numpy" else "")
    text = ctypes.create_string_buffer(256)
    lib.MKL_Get_Version_String(text, len(text))
    # "Intel(R) oneAPI Math Kernel Library Version 2026.2-Product Build 20260915 for ..."
    version = text.value.decode().partition(" Version ")[2].split("-")[0].split(" ")[0]
    threads = lib.MKL_Get_Max_Threads()
    return f"MKL {version} (ctypes, {threads} thread{'s' * (threads != 1)})"


def _matrix(shape, strides, itemsize):
    """(transpose flag, leading dimension) that describe a matrix to BLAS, or None.

    `shape`/`strides` are the last two dims (strides in bytes). Row-major: unit column stride,
    leading dimension = row stride. Column-major (a transposed view): unit row stride, passed
    as its row-major transpose with the TRANS flag. A dim of length 1 has no meaningful stride,
    so any legal leading dimension serves.
    """
    (rows, cols), (row_stride, col_stride) = shape, strides
    if row_stride % itemsize or col_stride % itemsize:
        return None
    row_stride, col_stride = row_stride // itemsize, col_stride // itemsize
    if col_stride == 1 or cols == 1:
        ld = row_stride if rows > 1 else cols
        if cols <= ld <= _INT_MAX:
            return _NO_TRANS, ld
    if row_stride == 1 or rows == 1:
        ld = col_stride if cols > 1 else rows
        if rows <= ld <= _INT_MAX:
            return _TRANS, ld
    return None


def _batch_stride(batch, shape, strides, itemsize):
    """The one stride (in elements) that steps through an operand's matrices in the order of the
    flattened broadcast batch shape `batch`, or None when its batch dims do not fold into one.

    `shape`/`strides` are the operand's own batch dims (strides in bytes), right-aligned against
    `batch`; a missing or broadcast dim steps by 0, so a matrix shared by the whole batch has
    stride 0 (MKL accepts it). Mixed broadcasting, (B, 1) against (1, H), does not fold.
    """
    pad = len(batch) - len(shape)
    strides = (0,) * pad + tuple(s if size > 1 else 0 for size, s in zip(shape, strides))
    stride, step = None, 1  # step: how many flattened batch entries one index of this dim spans
    for size, s in zip(reversed(batch), reversed(strides)):
        if size > 1:
            if stride is None and s >= 0 and s % (step * itemsize) == 0:
                stride = s // (step * itemsize)
            if s != (stride or 0) * step * itemsize or stride is None:
                return None
        step *= size
    stride = stride or 0
    # MKL works out each matrix's offset in MKL_INT: the last one must fit a C int too.
    return stride if stride * max(step - 1, 0) <= _INT_MAX else None


def _takes(a, b):
    """Whether MKL takes the product a @ b of two arrays of two or more dims, whatever their
    layouts: enough work, NumPy arrays of one float dtype whose inner sizes match, sizes that fit
    MKL_INT, and the library loaded."""
    if a.ndim < 2 or b.ndim < 2:
        return False
    m, n = a.shape[-2], b.shape[-1]
    # Small products leave first, cheaply (decoding runs many: generate). The larger of the two
    # is the count of multiply-adds, batch * m * n * k, with either operand's batch; 0 when one
    # is empty.
    if max(a.size * n, b.size * m) < MIN_WORK:
        return False
    k = a.shape[-1]
    dtype = a.dtype
    return not (b.dtype != dtype or dtype not in (_FLOAT32, _FLOAT64)
                or type(a) is not numpy.ndarray or type(b) is not numpy.ndarray
                or b.shape[-2] != k or a.size == 0 or b.size == 0 or max(m, n, k) > _INT_MAX
                or library() is None)


def gemm_2d(a, b):
    """How `matmul` calls MKL for the 2-D product a @ b: (cblas_?gemm's address, trans_a, lda,
    trans_b, ldb), with this thread's MKL thread count set for it; None where it would not call
    MKL. Compiled code makes the same call with them (kernels/matmul.py `gemm`)."""
    if a.ndim != 2 or b.ndim != 2:
        return None
    (m, k), (inner, n) = a.shape, b.shape
    if inner != k or not _takes_matrices(a, b, m, n, k, MIN_WORK):
        return None
    layouts = _layouts(a, b)
    if layouts is None:
        return None
    _threads_for(False)
    return (_addresses_of[a.dtype],) + layouts[0] + layouts[1]


def _takes_matrices(a, b, m, n, k, min_work):
    """_takes' rules for one product of two matrices, m x k by k x n (the caller has matched
    the inner sizes), each read once: every 2-D product MKL makes asks (generate_nocache)."""
    work = m * n * k
    return not (work < min_work or not work or b.dtype != a.dtype
                or type(a) is not numpy.ndarray or type(b) is not numpy.ndarray
                or max(m, n, k) > _INT_MAX or library() is None or a.dtype not in _addresses_of)


def _layouts(a, b):
    """((trans_a, lda), (trans_b, ldb)) of a's and b's matrices (the last two dims), or None
    when BLAS cannot read one of them in place."""
    layout_a, layout_b = _layout(a), _layout(b)
    if layout_a is None or layout_b is None or not (a.flags.aligned and b.flags.aligned):
        return None
    return layout_a, layout_b


def _layout(a):
    """`_matrix` of a's last two dims, read off the flags for a C-contiguous array or a 2-D
    F-contiguous one (a Linear layer's operands: generate_nocache)."""
    if a.flags.c_contiguous:
        return _NO_TRANS, a.shape[-1]
    if a.ndim == 2 and a.flags.f_contiguous:  # in more dims the first, not a row, steps by one
        return _TRANS, a.shape[0]
    return _matrix(a.shape[-2:], a.strides[-2:], a.itemsize)


def matmul(a, b):
    """a @ b through MKL for float32/float64 arrays of two or more dims, or None (the caller then
    runs NumPy's matmul): see the module docstring for what it takes."""
    if a.ndim == 2 and b.ndim == 2:
        plan = gemm_2d(a, b)
        if plan is None:
            return None
        _, trans_a, lda, trans_b, ldb = plan
        (m, k), n = a.shape, b.shape[1]
        gemm, _, scalar = _gemm[a.dtype]
        out = aligned.product_out(m, n, k, a.dtype)
        gemm(_ROW_MAJOR, trans_a, trans_b, m, n, k, scalar(1.0), a.ctypes.data, lda,
             b.ctypes.data, ldb, scalar(0.0), out.ctypes.data, n)
        return out
    if not _takes(a, b):
        return None
    m, n, k = a.shape[-2], b.shape[-1], a.shape[-1]
    dtype = a.dtype
    itemsize = dtype.itemsize
    if b.ndim == 2 and a.ndim > 2 and (k == 1 or a.strides[-1] == itemsize):
        # A stack of rows times one matrix (a Linear layer on (B, T, C)): one 2-D GEMM over all
        # the rows when a's leading dims and its rows step evenly (then the reshape is a view).
        if _batch_stride(a.shape[:-1], a.shape[:-1], a.strides[:-1], itemsize):
            out = matmul(a.reshape(-1, k), b)
            return None if out is None else out.reshape(a.shape[:-1] + (n,))
    layouts = _layouts(a, b)
    if layouts is None:
        return None
    (trans_a, lda), (trans_b, ldb) = layouts
    _, gemm_batch, scalar = _gemm[dtype]
    _threads_for(False)
    try:
        batch = numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None  # NumPy raises its own error for batch dims that do not broadcast
    stride_a = _batch_stride(batch, a.shape[:-2], a.strides[:-2], itemsize)
    stride_b = _batch_stride(batch, b.shape[:-2], b.strides[:-2], itemsize)
    count = math.prod(batch)
    if count * m * n > _INT_MAX:
        return None
    out = numpy.empty(batch + (m, n), dtype)
    if stride_a is None or stride_b is None:
        # Batch dims that do not fold into one stride (heads sliced out of a (B, T, 3H, D)
        # projection and transposed, or mixed broadcasting): the grouped call, given every
        # matrix's address, not copies and NumPy's loop (gpt_step)
        # Every argument is an array held by a name until the call returns: the address of a
        # temporary (`(x * 2).ctypes.data`) points at memory freed before MKL reads it.
        int_args = [numpy.full(1, v, numpy.intc)
                    for v in (trans_a, trans_b, m, n, k, lda, ldb, n, count)]
        alpha, beta = numpy.ones(1, dtype), numpy.zeros(1, dtype)
        addresses = [_addresses(x, batch) for x in (a, b, out)]
        _grouped[dtype](_ROW_MAJOR, *(x.ctypes.data for x in int_args[:5]), alpha.ctypes.data,
                        addresses[0].ctypes.data, int_args[5].ctypes.data,
                        addresses[1].ctypes.data, int_args[6].ctypes.data, beta.ctypes.data,
                        addresses[2].ctypes.data, int_args[7].ctypes.data, 1,
                        int_args[8].ctypes.data)
        return out
    gemm_batch(_ROW_MAJOR, trans_a, trans_b, m, n, k, scalar(1.0), a.ctypes.data, lda, stride_a,
               b.ctypes.data, ldb, stride_b, scalar(0.0), out.ctypes.data, n, m * n, count)
    return out


def _one_thread_after_fork(lib):
    global _forked
    _forked = True
    lib.MKL_Set_Num_Threads(1)


def count_changed(n):
    """set_num_threads(n) was called: n becomes MKL's process-wide count, the one every thread's
    products return to (`_threads_for`'s 0). threadpoolctl, which set_num_threads asks, sets
    only the calling thread's own count (MKL_Set_Num_Threads_Local), which would leave the
    other threads on the count MKL was loaded with, and `_local` out of date on this one. A
    forked child stays on one thread (see `_open`)."""
    if _lib is ... or _lib is None:
        return
    if not _forked:
        _lib.MKL_Set_Num_Threads(n)
    _lib.MKL_Set_Num_Threads_Local(0)
    _local.threads = 0


def _threads_for(compiled):
    """Have this thread's next MKL products run on the process's thread count, or on one thread
    when compiled loops make them or this is one of the pool's threads: there the loop around
    the products is what the threads split (MKL's own setting per thread, changed only when it
    must). Every product MKL takes (MIN_WORK or more) gains from the threads: 2^20 multiply-adds
    break even, 2^22 take 0.69 of the one-thread time, gpt_step's 2^27 0.61 (two threads, with
    NumPy work between the products)."""
    wanted = 1 if compiled or threads.in_pool() else 0  # 0: the process-wide count
    if _local.threads != wanted:
        _lib.MKL_Set_Num_Threads_Local(wanted)
        _local.threads = wanted


def _addresses(x, batch):
    """The address of each of x's matrices, in the order of the flattened broadcast batch shape
    (a broadcast dim repeats one address): a uint64 array for the grouped call."""
    return (_offsets(batch, x.shape[:-2], x.strides[:-2]) + x.ctypes.data).view(numpy.uint64)


@functools.lru_cache(maxsize=64)
def _offsets(batch, shape, strides):
    """The matrices' byte offsets from the first, for _addresses. Cached: a training step asks
    for the same few layouts every time (gpt_step)."""
    pad = len(batch) - len(shape)
    offsets = numpy.zeros(batch, numpy.int64)  # signed: a stride may be negative
    for axis, (size, stride) in enumerate(zip(shape, strides), pad):
        if size > 1:
            along = [1] * len(batch)
            along[axis] = size
            offsets = offsets + (numpy.arange(size, dtype=numpy.int64) * stride).reshape(along)
    offsets = offsets.reshape(-1)
    offsets.flags.writeable = False
    return offsets


def gemm_address(dtype):
    """The address of MKL's cblas_?gemm for a float dtype, which compiled code calls
    (kernels/blas.py: without ctypes' per-call conversions), with this thread's MKL on one
    thread (the loop around the products is what the threads split), or None when there is no
    MKL or no such routine."""
    if library() is None or dtype not in _gemm:
        return None
    _threads_for(True)
    return _addresses_of[dtype]


def linear_address(x, weight):
    """The address of MKL's cblas_?gemm for x @ weight.T made from compiled code with x's rows
    and weight's read in place (kernels/matmul.py `linear`), with this thread's MKL thread
    count set for it, as `matmul` sets it; None where MKL does not take it: 2-D row-major
    aligned float arrays of one dtype, sizes that fit MKL_INT, and MIN_WORK_LINEAR
    multiply-adds or more."""
    (m, k), (n, inner) = x.shape, weight.shape
    flags_x, flags_w = x.flags, weight.flags
    if (inner != k or not (flags_x.c_contiguous and flags_w.c_contiguous and flags_x.aligned
                           and flags_w.aligned)
            or not _takes_matrices(x, weight, m, n, k, MIN_WORK_LINEAR)):
        return None
    _threads_for(False)
    return _addresses_of[x.dtype]


def takes_row_major(a):
    """Whether the BLAS reads the matrices of `a` (its last two dims; a 2-D array is one) in
    place as row-major matrices (no transpose flag, the row stride as leading dimension), by
    `_matrix`'s rules: what compiled callers of gemm_address check before they pass an array's
    address. Read from the shape and strides, no matrix taken out (attention: 3 arrays a call)."""
    shape, strides = a.shape[-2:], a.strides[-2:]
    return (a.flags.aligned
            and _matrix(shape, strides, a.itemsize) == (_NO_TRANS, strides[0] // a.itemsize))


def gemm_into(a, b, out, accumulate):
    """out = a @ b, or out += a @ b with `accumulate` (BLAS's beta = 1), for 2-D float arrays,
    written into `out` (row-major, unit column stride): whether MKL took it (else the caller
    runs NumPy). A loop of block products reuses one output this way, with no fresh array and
    no separate add pass per product (benchmarks/: attention T=4096)."""
    m, k = a.shape
    n = b.shape[1]
    dtype = a.dtype
    if (m * n * k < MIN_WORK or b.dtype != dtype or out.dtype != dtype
            or dtype not in (_FLOAT32, _FLOAT64) or b.shape[0] != k or out.shape != (m, n)
            or library() is None):
        return False
    itemsize = dtype.itemsize
    layout_a = _matrix(a.shape, a.strides, itemsize)
    layout_b = _matrix(b.shape, b.strides, itemsize)
    layout_out = _matrix(out.shape, out.strides, itemsize)
    if (layout_a is None or layout_b is None or layout_out is None or layout_out[0] != _NO_TRANS
            or not (a.flags.aligned and b.flags.aligned and out.flags.aligned)):
        return False
    (trans_a, lda), (trans_b, ldb) = layout_a, layout_b
    gemm, _, scalar = _gemm[dtype]
    _threads_for(False)
    gemm(_ROW_MAJOR, trans_a, trans_b, m, n, k, scalar(1.0), a.ctypes.data, lda, b.ctypes.data,
         ldb, scalar(1.0 if accumulate else 0.0), out.ctypes.data, layout_out[1])
    return True

