"""tensorgrad's dtypes (`tensorgrad.float32`, `tensorgrad.bfloat16`, ...): torch.dtype's
attributes around one NumPy dtype.

A `dtype` holds its NumPy dtype in `.dtype`, which is how NumPy and CuPy accept it wherever they
take a dtype (`xp.zeros(3, dtype=tensorgrad.float32)`), and compares equal to that NumPy dtype
with the same hash, so arrays' dtypes and ours mix in comparisons and dict keys. There is one
object per dtype: `Tensor.dtype` is a dict lookup. Besides torch's `is_floating_point`,
`is_complex`, `is_signed` and `itemsize`, it keeps NumPy's `kind`, `name` and `type` for the code
that reads them; bfloat16 (from `ml_dtypes`) has kind "f", where NumPy says "V". Importing
ml_dtypes takes about half a second, more than the rest of `import tensorgrad`, so bfloat16 is
made at its first use (`tensorgrad.bfloat16`, the name "bfloat16", a BF16 checkpoint).
"""
import numpy


class dtype:  # noqa: N801  (torch's spelling)
    """A tensor's element type, as torch.dtype: `x.dtype == tensorgrad.float32`."""

    __slots__ = ("dtype", "kind", "name", "type", "itemsize", "is_floating_point", "is_complex",
                 "is_signed")

    def __init__(self, numpy_dtype):
        self.dtype = numpy_dtype
        self.kind = "f" if numpy_dtype.name == "bfloat16" else numpy_dtype.kind
        self.name, self.type, self.itemsize = numpy_dtype.name, numpy_dtype.type, \
            numpy_dtype.itemsize
        self.is_floating_point, self.is_complex = self.kind == "f", self.kind == "c"
        self.is_signed = self.kind in "fci"

    def __repr__(self):
        return f"tensorgrad.{self.name}"

    def __str__(self):  # the bare name, as NumPy's, in messages and a Tensor's repr
        return self.name

    def __eq__(self, other):
        """Equal to itself, to its NumPy dtype and to NumPy's scalar type (`numpy.float32`), as
        the NumPy dtype is; not to a string (torch.float32 == "float32" is False)."""
        if isinstance(other, dtype):
            return self is other
        if isinstance(other, numpy.dtype) or (isinstance(other, type)
                                              and issubclass(other, numpy.generic)):
            return self.dtype == other
        return NotImplemented

    def __hash__(self):
        return hash(self.dtype)

    def __reduce__(self):  # pickle and copy give back the one object of this dtype
        return _of_numpy, (self.dtype,)


class _Table(dict):
    """NumPy dtype -> our dtype, made on first sight for dtypes not named below."""

    def __missing__(self, numpy_dtype):
        made = self[numpy_dtype] = dtype(numpy_dtype)
        return made


BY_NUMPY = _Table()


def _of_numpy(numpy_dtype):
    return BY_NUMPY[numpy_dtype]


(float16, float32, float64, complex64, complex128, int8, int16, int32, int64, uint8, bool_) = (
    BY_NUMPY[numpy.dtype(name)] for name in (
        "float16", "float32", "float64", "complex64", "complex128", "int8", "int16", "int32",
        "int64", "uint8", "bool"))

NAMES = {"float16": float16, "half": float16, "float32": float32, "float": float32,
         "float64": float64, "double": float64, "complex64": complex64, "cfloat": complex64,
         "complex128": complex128, "cdouble": complex128, "int8": int8, "int16": int16,
         "short": int16, "int32": int32, "int": int32, "int64": int64, "long": int64,
         "uint8": uint8, "bool": bool_}
LAZY_NAMES = ("bfloat16",)  # made at first use: named(), the module attribute


def named(name):
    """Our dtype of this name (KeyError if there is none)."""
    if name == "bfloat16" and name not in NAMES:
        return _bfloat16()
    return NAMES[name]


def _bfloat16():
    import ml_dtypes
    made = NAMES["bfloat16"] = BY_NUMPY[numpy.dtype(ml_dtypes.bfloat16)]
    globals()["bfloat16"] = made
    return made


def __getattr__(name):
    if name == "bfloat16":
        return _bfloat16()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
