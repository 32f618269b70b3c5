"""tensorgrad.Size: a tensor's shape as torch.Size is, a tuple of ints with `numel()`."""
import math
import operator


class Size(tuple):
    """`x.size()`: a tuple of ints (it compares, hashes and unpacks as one) that also knows its
    element count, `numel()`. Slicing, `+` and `*` give a Size again, as in PyTorch.

    `x.shape` stays a plain tuple here (PyTorch gives a Size): it is read by every op, and a
    new object per read would cost the op overhead benchmark for a difference that only shows
    in `type()`, `repr` and `.numel()`."""

    __slots__ = ()

    def __new__(cls, sizes=()):
        items = []
        for i, n in enumerate(sizes):
            try:
                items.append(operator.index(n))
            except TypeError:
                raise TypeError(f"tensorgrad.Size() takes an iterable of 'int' (item {i} is "
                                f"'{type(n).__name__}')") from None
        return super().__new__(cls, items)

    def numel(self):
        """The number of elements a tensor of this shape holds (1 for the empty shape)."""
        return math.prod(self)

    def __getitem__(self, index):
        item = super().__getitem__(index)
        return Size(item) if isinstance(index, slice) else item

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(self) + other)

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(other + tuple(self))

    def __mul__(self, times):
        return Size(tuple(self) * times)

    __rmul__ = __mul__

    def __repr__(self):
        return f"tensorgrad.Size({list(self)})"

    __str__ = __repr__

    def __reduce__(self):
        return Size, (tuple(self),)
