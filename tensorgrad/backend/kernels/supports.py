"""The conditions the kernels share, as `supports` predicates (tensorgrad/backend/overrides.py)."""
import numpy

from .jit import DTYPES, GRAIN


def floats(*args, **kwargs):
    """Every array argument float32 or float64, and a NumPy array (None and scalars pass)."""
    for a in args:  # a loop, no generator made: every kernel call asks (generate_user)
        if isinstance(a, numpy.ndarray) and a.dtype not in DTYPES:
            return False
    return True


def floats_over_grain(*args, **kwargs):
    """floats, and the first argument big enough to split over the threads (jit.GRAIN): below
    it NumPy's or the BLAS's own call is as fast."""
    return args[0].size >= GRAIN and floats(*args)
