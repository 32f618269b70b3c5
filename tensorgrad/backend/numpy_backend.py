"""The CPU backend: NumPy arrays."""
import math

import numpy

from . import aligned, kernel_loading, mkl_blas, threads

_scipy_erf = ...  # scipy.special.erf, imported at the first erf: it costs a tenth of a second


def _erf_function():
    global _scipy_erf
    if _scipy_erf is ...:
        try:
            from scipy.special import erf as _scipy_erf
        except ImportError:  # scipy is optional; math.erf is exact but slower
            _scipy_erf = None
    return _scipy_erf


def _row_major(a):
    """a itself when each of its matrices is row-major with unit element stride, else a copy."""
    if a.ndim >= 2 and (a.strides[-1] != a.itemsize or a.strides[-2] < a.shape[-1] * a.itemsize):
        return numpy.ascontiguousarray(a)
    return a


# The row counts (inclusive) for which `matmul` turns a float32 x @ W.T round on OpenBLAS, and
# from how many rows and weight elements on MKL (generate, generate_nocache; the measurements are
# in benchmarks/README.md). In float64 it does not pay.
_FEW_ROWS = (4, 48)
_FEW_ROWS_MKL = 16
_LARGE_WEIGHT_MKL = 2**20
# Turned round, up to this many rows times a weight at least twice as wide as it is deep and
# at most this deep (in-features), x^T is laid out row-major first: OpenBLAS's kernel for that
# layout is faster there and slower elsewhere (generate).
_ROW_MAJOR_X_T = (8, 256)
_FLOAT32 = numpy.dtype("float32")


def _turns_round(a, b, min_work=None):
    """Whether a (rows, k) @ (k, n) float32 product with a transposed b runs faster turned round,
    where MKL takes products from min_work multiply-adds (by default mkl_blas.MIN_WORK)."""
    rows = a.shape[0]
    if not (_FEW_ROWS[0] <= rows <= _FEW_ROWS[1] and b.dtype == _FLOAT32 and b.strides[0] == 4
            and b.shape[1] > 1):
        return False
    if min_work is None:
        min_work = mkl_blas.MIN_WORK
    if mkl_blas.library() is None or rows * a.shape[1] * b.shape[1] < min_work:
        return True  # OpenBLAS computes it
    # MKL's own few-row product is faster, except for a large weight from 16 rows
    return rows >= _FEW_ROWS_MKL and b.size >= _LARGE_WEIGHT_MKL


class NumpyBackend:
    name = "numpy"
    device = "cpu"
    xp = numpy
    _kernels = ...  # loaded on first use, in the background (backend/kernel_loading.py)

    def __init__(self):
        self.rng = numpy.random.default_rng()

    def seed(self, seed):
        self.rng = numpy.random.default_rng(seed)

    def new_rng(self, seed):
        """A seeded random generator of this device: what a tensorgrad.Generator holds. The
        random_* methods below draw from it when given it as `rng`, else from `self.rng`."""
        return numpy.random.default_rng(seed)

    # --- host transfer -------------------------------------------------------------------
    def from_host(self, array):
        return numpy.asarray(array)

    def to_host(self, array):
        return array

    # --- kernels whose spelling differs -----------------------------------------------------
    def kernels(self, *arrays, family=kernel_loading.EVERY):
        """The fused kernels package for an op of `family` on `arrays` (None entries are
        ignored), or None: the op runs its array code instead (no Numba, another dtype, or the
        family's kernels are still being built in the background)."""
        kernels = self._kernels
        if (len(arrays) == 1 and kernels is not None and kernels is not ...
                and (family, getattr(arrays[0], "dtype", None)) in kernel_loading._ready):
            # one array whose family is built: every overridable op asks (generate_user)
            return kernels
        if kernels is ... and not kernel_loading.wanted():
            kernels = self._kernels = None  # no Numba, or TENSORGRAD_NUMBA=0: the reference runs
        if kernels is None or not kernel_loading.ready(arrays, family):
            return None
        if kernels is ...:
            kernels = self._kernels = kernel_loading.load()  # the warm-up imported them already
        if kernels is None or not kernels.supports(arrays):
            return None
        return kernels

    def scatter_add(self, target, index, values):
        """target[index] += values, with repeated indices accumulated (unbuffered)."""
        rows = index[0] if len(index) == 1 else None
        kernels = self.kernels(target, values, family="embedding")
        if (kernels is not None and getattr(rows, "dtype", None) is not None
                and rows.dtype.kind in "iu" and target.flags.c_contiguous
                and values.shape == rows.shape + target.shape[1:]):
            kernels.scatter_add_rows(target, rows, values)  # an embedding's gradient
        else:
            numpy.add.at(target, index, values)

    def _gemm(self, a, b):
        """a @ b for 2-D operands: MKL's GEMM where it takes them, else NumPy's. Products under
        MKL's size threshold skip its checks (generate: most of a decoded token's products); MKL
        is called from the compiled kernels once they are loaded (kernels/matmul.py), else
        through ctypes."""
        if (a.shape[0] * a.shape[1] * b.shape[1] >= mkl_blas.MIN_WORK
                and mkl_blas.library() is not None):
            kernels = self.kernels(a, family="matmul")  # gemm_2d checks b against a
            out = (mkl_blas.matmul if kernels is None else kernels.gemm)(a, b)
            if out is not None:
                return out
        return numpy.matmul(a, b)

    def matmul(self, a, b):
        """numpy.matmul, steered onto one large BLAS call where NumPy would not find it.

        A stack of rows times one matrix (a Linear layer on (B, T, C)) becomes a single 2-D GEMM;
        stacked matrices that are not row-major (a transposed view such as k^T) get copied,
        since NumPy's batched loop skips BLAS for them (gpt_step).
        With MKL installed (tensorgrad[mkl]) float products of some size run on its GEMM instead
        (mkl_blas.py), with
        transposed and batched operands as they are; what it does not take comes here.
        """
        if a.dtype.kind == "V" and a.dtype.name == "bfloat16":
            # ml_dtypes' matmul sums in float32 and answers in it: round back
            return numpy.matmul(a, b).astype(a.dtype)
        if a.ndim == 2 and b.ndim == 2:
            rows = a.shape[0]
            if rows >= _FEW_ROWS[0] and _turns_round(a, b):
                # A few rows times a transposed weight (a Linear layer while decoding a batch):
                # both BLAS libraries are slower at it than at the same product turned round,
                # (b^T a^T)^T, with b^T's many rows leading (generate). The copy makes the (rows, n)
                # result row-major again; it is small.
                a_t = a.T
                if rows <= _ROW_MAJOR_X_T[0] and a.shape[1] <= _ROW_MAJOR_X_T[1] \
                        and b.shape[1] >= 2 * a.shape[1]:
                    a_t = numpy.ascontiguousarray(a_t)
                return numpy.ascontiguousarray(self._gemm(b.T, a_t).T)
            return self._gemm(a, b)
        if b.ndim == 2 and a.ndim > 2 and a.flags.c_contiguous:
            # A stack of rows times one matrix (x @ W on (B, T, C)): one 2-D product over all the
            # rows, with the 2-D path's choices (generate_nocache's tied head)
            rows = math.prod(a.shape[:-1])
            out = self.matmul(a.reshape(rows, a.shape[-1]), b)
            return out.reshape(a.shape[:-1] + (b.shape[1],))
        out = mkl_blas.matmul(a, b)
        if out is not None:
            return out
        if b.ndim == 2 and a.ndim > 2:
            out = numpy.matmul(a.reshape(-1, a.shape[-1]), b)
            return out.reshape(a.shape[:-1] + (b.shape[1],))
        if a.ndim > 2 or b.ndim > 2:
            if a.ndim >= 2 and a.shape[-2] == 1 and b.ndim > 2 and b.strides[-2] == b.itemsize:
                # One row times transposed matrices (a decoding query against k^T): as b^T a^T
                # it reads b's memory in order instead of copying it.
                b_t = b.swapaxes(-1, -2)
                if _row_major(b_t) is b_t:
                    out = numpy.matmul(b_t, a.reshape(a.shape[:-2] + (a.shape[-1], 1)))
                    return out.reshape(out.shape[:-2] + (1, out.shape[-2]))
            a, b = _row_major(a), _row_major(b)
        return numpy.matmul(a, b)

    def linear(self, x, weight, bias=None):
        """x @ weight.T + bias for a 2-D x (N, in), weight (out, in) and bias (out,) or None: a
        Linear layer's forward. The compiled kernels, once loaded, take one row (decoding) and
        a bias with MKL's product (kernels/matmul.py `linear`), except where `matmul` turns the
        product round; otherwise the product (`matmul`), then the bias added to its rows."""
        kernels = self.kernels(x, family="linear")
        if (kernels is not None and weight.dtype == x.dtype
                and (bias is None or bias.dtype == x.dtype)
                and not _turns_round(x, weight.T, mkl_blas.MIN_WORK_LINEAR)):
            out = kernels.linear(x, weight, bias)
            if out is not None:
                return out
        out = self.matmul(x, weight.T)
        if bias is not None:
            if kernels is not None and bias.dtype == out.dtype:
                kernels.add_to_rows_(out, bias)  # NumPy's broadcast add is the slower (generate)
            else:
                out += bias
        return out

    def matmul_into(self, a, b, out, accumulate=False):
        """out = a @ b, or out += a @ b with `accumulate`, for 2-D a and b, written into `out`
        (a row-major (m, n) array that shares no memory with them): a loop of block products
        reuses one buffer instead of a fresh array (and an add pass) per product. MKL's GEMM
        writes (or adds) into it directly; else NumPy."""
        if not mkl_blas.gemm_into(a, b, out, accumulate):
            if accumulate:
                out += numpy.matmul(a, b)
            else:
                numpy.matmul(a, b, out=out)
        return out

    def owner(self, array):
        """The array whose memory `array` views: array itself when it owns its memory. A large
        product's output, made 64-byte aligned inside a buffer only it views
        (aligned.py), owns its memory here, as a fresh array does."""
        owner = array
        while (isinstance(owner.base, numpy.ndarray)
               and type(owner.base) is not aligned.AlignedBuffer):
            owner = owner.base
        return owner

    def blas_name(self):
        """Which BLAS runs float matmul, e.g. "MKL 2026.2 (ctypes, 1 thread)" (in benchmarks)."""
        return mkl_blas.name()

    def erf(self, x):
        erf = _erf_function()
        if erf is not None:
            return erf(x).astype(x.dtype, copy=False)
        return numpy.vectorize(math.erf, otypes=[x.dtype])(x)

    def random_normal(self, shape, dtype, rng=None):
        rng = self.rng if rng is None else rng
        if dtype.kind == "f" and dtype.itemsize >= 4:
            return rng.standard_normal(shape, dtype=dtype)
        return rng.standard_normal(shape).astype(dtype)

    def random_uniform(self, shape, dtype, rng=None):
        rng = self.rng if rng is None else rng
        if dtype in (numpy.float32, numpy.float64):
            return rng.random(shape, dtype=dtype)
        # Rounded to a short mantissa a draw near 1 becomes 1.0; a grid of k / 2**bits cannot.
        steps = 2.0 ** (numpy.finfo(dtype).nmant + 1)
        return (numpy.floor(rng.random(shape) * steps) / steps).astype(dtype)

    def random_integers(self, low, high, shape, dtype, rng=None):
        rng = self.rng if rng is None else rng
        return rng.integers(low, high, size=shape, dtype=dtype)

    def map_matrices(self, fn, items):
        """fn(i, *arrays) for each (i, arrays) of items, on get_num_threads() threads (see
        threads.py): a loop over independent matrices, such as tiled attention's."""
        threads.map_matrices(fn, items)

    def __repr__(self):
        return "NumpyBackend(cpu)"

    def __getattr__(self, name):
        # Anything not defined above is the array module's own function (xp.exp, xp.matmul ...);
        # caching it on the instance makes the next lookup an ordinary attribute hit.
        value = getattr(self.xp, name)
        setattr(self, name, value)
        return value

    def __deepcopy__(self, memo):
        # A backend is a process-wide singleton per device: copies of tensors share it.
        return self
