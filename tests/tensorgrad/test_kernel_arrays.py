"""jit.new_array and jit.matrix_view, numpy.empty and a reshaped slice inside a kernel: the
arrays they make, and their typing errors."""
import pytest

numba = pytest.importorskip("numba")
np = pytest.importorskip("numpy")

from tensorgrad.backend.kernels.jit import matrix_view, new_array  # noqa: E402


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


@numba.njit
def _viewed(buffer, rows, cols):
    view = matrix_view(buffer, rows, cols)
    for r in range(rows):
        for c in range(cols):
            view[r, c] = 10 * r + c  # written through the view: lands in the buffer
    return view


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows, cols", [(0, 3), (1, 1), (2, 3), (3, 4)])
def test_matrix_view_is_the_buffers_start_reshaped_in_place(dtype, rows, cols):
    buffer = np.full(12, -1.0, dtype)
    view = _viewed(buffer, rows, cols)
    assert (view.shape, view.dtype, view.flags.c_contiguous) == ((rows, cols), buffer.dtype, True)
    assert view.strides == (cols * buffer.itemsize, buffer.itemsize)
    expected = buffer.copy()
    expected[:rows * cols] = (10 * np.arange(rows)[:, None] + np.arange(cols)).reshape(-1)
    np.testing.assert_array_equal(buffer, expected)  # the view's writes, and no more
    assert view.size == 0 or np.shares_memory(view, buffer)


@numba.njit
def _view_of_a_kernels_own_buffer(n):
    buffer = new_array((2 * n,), np.float64)
    for i in range(2 * n):
        buffer[i] = i
    return matrix_view(buffer, 2, n)  # the buffer's only reference leaves with the view


def test_matrix_view_keeps_the_memory_it_views_alive():
    views = [_view_of_a_kernels_own_buffer(1000) for _ in range(50)]
    _view_of_a_kernels_own_buffer(1000)  # would reuse freed memory, were a view's released
    for view in views:
        np.testing.assert_array_equal(view, np.arange(2000.0).reshape(2, 1000))


@pytest.mark.parametrize("call, message", [
    (lambda n: matrix_view(np.zeros((n, n)), 1, 1), "buffer must be a 1-d C-ordered array"),
    (lambda n: matrix_view(np.zeros(2 * n)[::2], 1, 1), "buffer must be a 1-d C-ordered array"),
    (lambda n: matrix_view(np.zeros(n), 1.0, 1), "rows and cols must be ints"),
])
def test_matrix_view_names_what_it_expected(call, message):
    with pytest.raises(numba.TypingError, match=message):
        numba.njit(call)(3)
