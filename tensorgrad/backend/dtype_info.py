"""`tensorgrad.finfo(dtype)` / `tensorgrad.iinfo(dtype)`: the numeric limits of a dtype, with
torch.finfo's and torch.iinfo's fields, as plain Python numbers."""
import numpy

from . import as_dtype, float32


class finfo:  # noqa: N801  (torch's spelling)
    """Limits of a floating point dtype (default float32): bits, eps (the gap between 1 and
    the next value), max, min (the lowest finite value, -max), tiny and smallest_normal (the
    smallest positive normal value), resolution (10 ** -decimal digits), dtype (its name)."""

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, dtype=None):
        dtype = as_dtype(dtype) or float32
        if dtype.kind != "f":
            raise TypeError(f"finfo: expected a floating point dtype, got {dtype}; use iinfo for "
                            "integer dtypes")
        info = numpy.finfo(dtype)
        self.bits = int(info.bits)
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.tiny)
        self.resolution = 10.0 ** -int(info.precision)  # exact, as torch gives it
        self.dtype = dtype.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, "
                f"eps={self.eps}, smallest_normal={self.smallest_normal}, tiny={self.tiny}, "
                f"dtype={self.dtype})")


class iinfo:  # noqa: N801
    """Limits of an integer dtype: bits, max, min, dtype (its name)."""

    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, dtype):
        dtype = as_dtype(dtype)
        if dtype is None or dtype.kind not in "iu":
            raise TypeError(f"iinfo: expected an integer dtype, got {dtype}; use finfo for "
                            "floating point dtypes")
        info = numpy.iinfo(dtype)
        self.bits, self.max, self.min = int(info.bits), int(info.max), int(info.min)
        self.dtype = dtype.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
