"""Dropout: a composite (a random keep-mask times the input), so it needs no gradient code."""
from ..tensor import from_array


def dropout(x, p=0.5, training=True):
    """Zero each element with probability p and scale the rest by 1 / (1 - p) (training only)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    xp = x._backend
    keep = xp.random_uniform(x.shape, x.dtype) >= p
    scale = keep.astype(x.dtype) * (1.0 / (1.0 - p) if p < 1.0 else 0.0)
    return x * from_array(scale.astype(x.dtype, copy=False), xp)
