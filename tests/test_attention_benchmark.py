"""benchmarks/attention.py: every implementation's step computes causal attention at a length
past one tile, and the products-only row runs exactly the products the tiled path runs."""
import importlib.util

import numpy as np
import pytest

import tensorgrad as tg
from benchmarks import attention as bench
from tensorgrad.ops import attention


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 8 queries x 16 keys, so T=40 crosses several of them."""
    monkeypatch.setattr(attention, "TILE", 8)
    monkeypatch.setattr(attention, "KEY_TILE", 16)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def _needs_torch(name):
    return [pytest.mark.skipif(name.startswith("torch") and importlib.util.find_spec("torch")
                               is None, reason="torch is not installed"),
            *([pytest.mark.parity] if name.startswith("torch") else [])]


@pytest.mark.parametrize("name", [pytest.param(n, marks=_needs_torch(n))
                                  for n in bench.IMPLEMENTATIONS])
def test_every_implementation_computes_causal_attention(name, small_blocks):
    arrays = [np.asarray(a) for a in bench.step_for(name, 40)()]
    assert all(np.isfinite(a).all() for a in arrays)
    if name != "tensorgrad products":  # the first query sees the first key alone
        out, v = arrays
        assert out.shape == (bench.B, bench.HEADS, 40, bench.HEAD_DIM)
        np.testing.assert_allclose(out[..., 0, :], v[..., 0, :], rtol=1e-5, atol=1e-6)


def test_products_row_runs_the_tiled_paths_products(small_blocks, monkeypatch):
    """Seven products per block (two forward, five backward): count the tiled path's own, in
    its array loop (the compiled one makes the same products out of the backend's sight)."""
    counted = {"tiled": 0, "products": 0}
    backend = tg.randn(1)._backend
    monkeypatch.setattr(backend, "_kernels", None)
    def counted_as_product(product):
        def counting(self, *args, **kwargs):
            counted[which] += 1
            return product(self, *args, **kwargs)
        return counting
    for name in ("matmul", "matmul_into"):  # a product is either
        monkeypatch.setattr(type(backend), name, counted_as_product(getattr(type(backend), name)))
    which = "tiled"
    q, k, v = (tg.randn(1, 1, 40, 4, requires_grad=True) for _ in range(3))
    tg.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    which = "products"
    step = bench._tensorgrad_products(40)
    counted["products"] = 0
    step()
    assert counted["products"] == bench.B * bench.HEADS * counted["tiled"]
