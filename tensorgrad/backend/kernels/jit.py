"""What every kernel module shares: the Numba decorator and array reshaping helpers."""
import numba
import numpy

# error_model="numpy": x / 0 is inf or nan as in the array code, and without a zero check per
# division the loops vectorise; "reassoc" lets sums vectorise too. cache=True: compiled code is
# kept on disk, so only the first process on a machine pays the compilation.
jit = numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})
DTYPES = (numpy.dtype("float32"), numpy.dtype("float64"))


def flat(a):
    """a as a C-contiguous 1-d array (a view when it already is contiguous)."""
    return numpy.ascontiguousarray(a).reshape(-1)


def rows_of(a, cols):
    """a as C-contiguous (rows, cols), in one reshape (a view when a already is contiguous)."""
    return numpy.ascontiguousarray(a).reshape(-1, cols)
