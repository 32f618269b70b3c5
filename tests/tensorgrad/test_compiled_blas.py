"""kernels/blas.py: MKL's GEMM called from compiled code by its address, against NumPy."""
import numpy as np
import pytest

from tensorgrad.backend import kernel_loading, mkl_blas

numba = pytest.importorskip("numba", reason="numba is not installed: no compiled code calls "
                                            "the BLAS (pip install tensorgrad[fast])")
if kernel_loading.mode() == "off":
    pytest.skip("TENSORGRAD_NUMBA=0: the kernels are switched off", allow_module_level=True)
if mkl_blas.library() is None:
    pytest.skip("MKL not loaded: libmkl_rt not found (pip install tensorgrad[mkl]) or "
                "TENSORGRAD_BLAS=numpy", allow_module_level=True)

from tensorgrad.backend.kernels import blas  # noqa: E402  (needs Numba)

_NO_TRANS, _TRANS = 111, 112


@numba.njit
def _product(address, a, transpose_a, b, transpose_b, beta, c):
    m, n = c.shape
    k = a.shape[0] if transpose_a else a.shape[1]
    blas.gemm(address, _TRANS if transpose_a else _NO_TRANS,
              _TRANS if transpose_b else _NO_TRANS, m, n, k, 0.5, a, a.shape[1], b, b.shape[1],
              beta, c, c.strides[0] // c.itemsize)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_gemm_at_an_address_is_numpys_product(dtype, transpose_a, transpose_b, beta):
    """c = alpha op(a) op(b) + beta c, with either operand transposed, written into a row
    slice of a wider array (its leading dimension is the row stride), in both dtypes."""
    rng = np.random.default_rng(0)
    m, n, k = 5, 7, 3
    a = rng.standard_normal((k, m) if transpose_a else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if transpose_b else (k, n)).astype(dtype)
    wide = rng.standard_normal((m, n + 4)).astype(dtype)
    before = wide.copy()
    _product(mkl_blas.gemm_address(np.dtype(dtype)), a, transpose_a, b, transpose_b, beta,
             wide[:, :n])
    expected = 0.5 * ((a.T if transpose_a else a) @ (b.T if transpose_b else b))
    expected += beta * before[:, :n]
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(wide[:, :n], expected, rtol=tolerance, atol=tolerance)
    np.testing.assert_array_equal(wide[:, n:], before[:, n:])  # past the row's end: untouched


def test_gemm_refuses_arrays_of_two_dtypes_when_compiling():
    a = np.ones((2, 2), np.float32)
    with pytest.raises(numba.core.errors.TypingError, match="one dtype"):
        _product(mkl_blas.gemm_address(a.dtype), a, False, a.astype(np.float64), False, 0.0, a)
