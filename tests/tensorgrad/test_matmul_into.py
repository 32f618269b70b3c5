"""backend.matmul_into(a, b, out, accumulate): a 2-D product written (or added) into a given
array, through MKL's GEMM (beta 0 or 1) where it takes the operands and NumPy otherwise; the
tiled attention path reuses its block buffers with it."""
import numpy as np
import pytest

from tensorgrad import backend as backends
from tensorgrad.backend import mkl_blas


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("a_transposed, b_transposed", [(False, False), (False, True),
                                                        (True, False), (True, True)])
@pytest.mark.parametrize("through_mkl", [False, True])
def test_matmul_into_writes_or_adds_the_product_in_place(device, dtype, accumulate, a_transposed,
                                                        b_transposed, through_mkl, monkeypatch):
    if through_mkl:  # small products, which MKL normally leaves to NumPy
        monkeypatch.setattr(mkl_blas, "MIN_WORK", 0)
    backend = backends.get_backend(device)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 5) if a_transposed else (5, 6)).astype(dtype)
    b = rng.standard_normal((4, 6) if b_transposed else (6, 4)).astype(dtype)
    a, b = (a.T if a_transposed else a), (b.T if b_transposed else b)
    target = rng.standard_normal((9, 4)).astype(dtype)  # out: rows 2-6 of it, as dq[rows]
    expected = target.copy()
    expected[2:7] = (expected[2:7] if accumulate else 0) + a.astype(np.float64) @ b
    whole = backend.from_host(target)
    out = whole[2:7]
    returned = backend.matmul_into(backend.from_host(a), backend.from_host(b), out,
                                   accumulate=accumulate)
    assert returned is out
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(backend.to_host(whole), expected, rtol=tolerance, atol=tolerance)


def test_mkl_declines_what_it_cannot_write_into(monkeypatch):
    """A column-major or mistyped `out` is left to NumPy, which still gets it right."""
    monkeypatch.setattr(mkl_blas, "MIN_WORK", 0)
    cpu = backends.get_backend("cpu")
    a, b = np.ones((3, 2), np.float32), np.ones((2, 4), np.float32)
    column_major = np.zeros((4, 3), np.float32).T
    assert not mkl_blas.gemm_into(a, b, column_major, False)
    cpu.matmul_into(a, b, column_major)
    np.testing.assert_array_equal(column_major, np.full((3, 4), 2.0))
    assert not mkl_blas.gemm_into(a, b, np.zeros((3, 4)), False)  # float64 out
    row_major = np.zeros((3, 4), np.float32)
    assert mkl_blas.gemm_into(a, b, row_major, False) == (mkl_blas.library() is not None)
