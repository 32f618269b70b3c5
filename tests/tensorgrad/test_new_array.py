"""jit.new_array, numpy.empty inside a kernel: the arrays it makes, and its typing errors."""
import pytest

numba = pytest.importorskip("numba")
np = pytest.importorskip("numpy")

from tensorgrad.backend.kernels.jit import new_array  # noqa: E402


@numba.njit
def _made(x):
    by_array = new_array((x.shape[0], 3), x)
    by_dtype = new_array((x.shape[0],), x.dtype)
    by_type = new_array((4,), np.float64)
    for i in range(x.shape[0]):
        by_dtype[i] = x[i]
        for j in range(3):
            by_array[i, j] = x[i] * j
    for j in range(4):
        by_type[j] = j
    return by_array, by_dtype, by_type


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16"])
@pytest.mark.parametrize("n", [0, 1, 5])
def test_new_array_makes_a_c_ordered_aligned_array_of_the_shape_and_dtype(dtype, n):
    x = np.arange(n, dtype=dtype)
    by_array, by_dtype, by_type = _made(x)
    assert (by_array.shape, by_array.dtype, by_array.flags.c_contiguous) == ((n, 3), x.dtype, True)
    assert by_array.strides == (3 * x.itemsize, x.itemsize)
    assert by_array.ctypes.data % 32 == 0  # as Numba's numpy.empty aligns it
    np.testing.assert_array_equal(by_array, x[:, None] * np.arange(3, dtype=dtype))
    np.testing.assert_array_equal(by_dtype, x)
    assert by_type.dtype == np.float64 and by_type.tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("call, message", [
    (lambda n: new_array(n, np.float64), "shape must be a tuple of ints"),
    (lambda n: new_array((n,), "float64"), "dtype must be a number type"),
])
def test_new_array_names_what_it_expected(call, message):
    with pytest.raises(numba.TypingError, match=message):
        numba.njit(call)(3)
