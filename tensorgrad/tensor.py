"""Tensor: one backend array plus what autograd needs (requires_grad, grad, the node that made it).

This file imports nothing of the engine or the ops: a method that runs an op is declared beside
that op with `tensor_method`, so each module above imports Tensor and none imports back:
- `Tensor(data)` is `tensor(data)`, in creation.py (with the creation functions);
- operators and op methods (`+`, `@`, `[]`, `x.softmax()`) in their ops/ family, `to()` and
  `clone()` in ops/convert.py;
- `backward()` and `sum_to_size()` in autograd/backward.py, hooks in autograd/hooks.py;
- the in-place methods (`add_`, `+=`, `copy_`, `set_` ...), and what in place means next to
  autograd, in inplace.py.
"""
import functools

from . import backend as _backends
from .device import device
from .size import Size as _Size

_DTYPES = _backends.BY_NUMPY


class Tensor:
    __slots__ = ("data", "grad", "requires_grad", "_node", "_backend", "_version", "__weakref__")
    # NumPy arrays and scalars on the left of an operator defer to our reflected methods.
    __array_priority__ = 1000

    # --- attributes ------------------------------------------------------------------------
    @property
    def shape(self):
        return self.data.shape  # a tuple in NumPy and CuPy

    def size(self, dim=None):
        """The shape as a `tensorgrad.Size` (a tuple with `numel()`), or one dim's length.
        `.shape` is a plain tuple (see Size for why)."""
        return _Size(self.data.shape) if dim is None else self.data.shape[dim]

    @property
    def ndim(self):
        return self.data.ndim

    def dim(self):
        return self.data.ndim

    def numel(self):
        return int(self.data.size)

    @property
    def dtype(self):
        return _DTYPES[self.data.dtype]  # one object per dtype: a lookup, not a construction

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def is_complex(self):
        return self.dtype.is_complex

    def element_size(self):
        """Bytes per element."""
        return self.data.dtype.itemsize

    @property
    def itemsize(self):
        return self.data.dtype.itemsize

    @property
    def nbytes(self):
        """numel() * element_size(), as in PyTorch (an expanded tensor counts every element)."""
        return int(self.data.size) * self.data.dtype.itemsize

    def stride(self, dim=None):
        """Steps in elements, not bytes (NumPy's strides divided by the item size). Unlike
        PyTorch, a step may be negative: `flip` here is a view."""
        data = self.data
        strides = tuple(s // data.itemsize for s in data.strides)
        return strides if dim is None else strides[dim]

    def is_contiguous(self):
        return bool(self.data.flags.c_contiguous)

    def storage_offset(self):
        """Elements between the start of the memory this tensor views and its first element."""
        data = self.data
        base = self._backend.owner(data)
        if base is data:
            return 0
        return (_address(data) - _address(base)) // data.itemsize

    @property
    def device(self):
        name = self._backend.device
        return _DEVICES.get(name) or device(name)

    @property
    def is_cuda(self):
        return self._backend.device.startswith("cuda")

    @property
    def is_leaf(self):
        return self._node is None

    @property
    def grad_fn(self):
        return self._node

    @property
    def T(self):
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self):
        return self.transpose(-2, -1)

    @property
    def H(self):
        """The conjugate transpose of a matrix (tensorgrad has no complex ops: real only)."""
        if self.ndim not in (0, 2) or self.is_complex():
            raise RuntimeError(f"tensor.H is only supported on real matrices (2-D tensors), got "
                               f"a {self.ndim}-D {self.dtype} tensor; for batches use tensor.mH")
        return self.T

    @property
    def mH(self):
        if self.ndim < 2 or self.is_complex():
            raise RuntimeError(f"tensor.mH is only supported on real matrices or batches of "
                               f"matrices, got a {self.ndim}-D {self.dtype} tensor")
        return self.mT

    # --- conversion --------------------------------------------------------------------------
    def numpy(self):
        if self.requires_grad:
            raise RuntimeError("numpy(): the tensor requires grad; call .detach().numpy()")
        return self._backend.to_host(self.data)

    def __array__(self, dtype=None, copy=None):
        array = self._backend.to_host(self.data)
        return array if dtype is None else array.astype(dtype)

    def item(self):
        if self.data.size != 1:
            raise ValueError(f"item(): only a one-element tensor converts to a Python number, "
                             f"got shape {self.shape}")
        return self._backend.to_host(self.data).reshape(()).item()

    def tolist(self):
        return self._backend.to_host(self.data).tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer tensors can be used as an index, got {self.dtype}")
        return int(self.item())

    def __bool__(self):
        if self.data.size != 1:
            raise RuntimeError(f"the truth value of a tensor with {self.data.size} elements is "
                               "ambiguous; use .any() or .all()")
        return bool(self.item())

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self):
        return id(self)

    def __format__(self, spec):
        """f"{loss:.4f}" formats a 0-d tensor's number; other tensors take only an empty spec
        (their str), as in PyTorch."""
        if self.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def detach(self):
        """The same data, cut from the graph (shares memory and the version counter)."""
        return from_array(self.data, self._backend, False, None, self._version)

    def detach_(self):
        """Cut this tensor from the graph in place: it becomes a leaf that requires no grad.
        Unlike PyTorch, a view is not refused (views are not tracked as such here)."""
        self._node, self.requires_grad = None, False
        return self

    def requires_grad_(self, requires_grad=True):
        if self._node is not None and not requires_grad:
            raise RuntimeError("requires_grad_(False) on a non-leaf tensor; use detach()")
        if requires_grad and self.dtype.kind not in "fc":
            raise RuntimeError(f"only floating point tensors can require gradients, got "
                               f"{self.dtype}")
        self.requires_grad = requires_grad
        return self

    def type(self, dtype=None, non_blocking=False):
        """With no argument, the type's name as PyTorch spells it with `tensorgrad` for `torch`:
        'tensorgrad.FloatTensor', 'tensorgrad.cuda.LongTensor'. With a dtype, or a name of
        that form ('torch.DoubleTensor' too), the tensor cast (and moved, for a cuda name)."""
        if dtype is None:
            where = "cuda." if self.is_cuda else ""
            return f"tensorgrad.{where}{_TYPE_NAMES.get(self.dtype, str(self.dtype))}Tensor"
        if not isinstance(dtype, str) or not dtype.endswith("Tensor"):
            return self.to(dtype)
        package, _, name = dtype[:-len("Tensor")].rpartition(".")
        by_name = {v: k for k, v in _TYPE_NAMES.items()}
        if package not in ("torch", "tensorgrad", "torch.cuda", "tensorgrad.cuda") \
                or name not in by_name:
            raise ValueError(f"type(): unknown tensor type {dtype!r}; expected a dtype or a name "
                             f"such as 'tensorgrad.FloatTensor'")
        moved = self.cuda() if package.endswith("cuda") else self.cpu()
        return moved.to(by_name[name])

    def cpu(self):
        return self.to("cpu")

    def cuda(self, index=0):
        return self.to(f"cuda:{index}")

    def float(self):
        return self.to(_backends.float32)

    def double(self):
        return self.to(_backends.float64)

    def half(self):
        return self.to(_backends.float16)

    def bfloat16(self):
        return self.to(_backends.bfloat16)

    def long(self):
        return self.to(_backends.int64)

    def int(self):
        return self.to(_backends.int32)

    def bool(self):
        return self.to(_backends.bool_)

    def type_as(self, other):
        return self.to(other.dtype)

    def contiguous(self):
        """Self when its memory is already row-major, else a row-major copy (differentiable)."""
        return self if self.data.flags.c_contiguous else self.clone()

    def __pos__(self):
        return self

    def __repr__(self):
        body = _backends.array_repr(self._backend.to_host(self.data))
        extras = []
        if self.device != "cpu":
            extras.append(f"device='{self.device}'")
        if self.dtype != _backends.float32 and self.dtype != _backends.int64 \
                and self.dtype != _backends.bool_:
            extras.append(f"dtype={self.dtype}")
        if self._node is not None:
            where = f" in {self._node.scope}" if self._node.scope else ""
            extras.append(f"grad_fn=<{self._node.prim.name}{where}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + ", ".join([body] + extras) + ")"


def from_array(data, backend, requires_grad=False, node=None, version=None, cls=Tensor,
               _new=object.__new__):
    """The one way the engine makes a Tensor of a backend array: no validation, no copies.
    With the defaults, an array as a tensor outside any graph (masks, gradients computed on
    arrays). A plain function, not a classmethod: the engine calls it for every output
    (op_overhead fwd)."""
    t = _new(cls)
    t.data = data
    t._backend = backend
    t.requires_grad = requires_grad
    t._node = node
    t.grad = None
    t._version = [0] if version is None else version
    return t


_DEVICES = {name: device(name) for name in ("cpu", "cuda:0")}  # Tensor.device, without a new one
_TYPE_NAMES = {  # PyTorch's legacy type names (x.type())
    _backends.float32: "Float", _backends.float64: "Double", _backends.float16: "Half",
    _backends.int64: "Long", _backends.int32: "Int", _backends.int16: "Short",
    _backends.int8: "Char", _backends.uint8: "Byte", _backends.bool_: "Bool",
}


def _address(array):
    """Where an array's first element is in memory (host or device), from its array protocol."""
    interface = getattr(array, "__cuda_array_interface__", None) or array.__array_interface__
    return interface["data"][0]


def tensor_method(fn, name=None):
    """Declare an op a Tensor method as well: `@tensor_method` over `def softmax(x, dim=-1)`
    makes `x.softmax(-1)` call that very function, so a method has no second implementation and
    `help(Tensor.softmax)` shows the op's docstring. tests/tensorgrad/test_tensor_methods.py
    checks the methods against torch.Tensor's. An op with a `dim` parameter also takes NumPy's
    names, as PyTorch's do: `x.sum(axis=1, keepdims=True)`. A property is declared the same
    way, under its name."""
    code = getattr(fn, "__code__", None)
    if code is not None and "dim" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount] \
            and not hasattr(fn, "__wrapped__"):
        fn = _numpy_names(fn)
    own = getattr(fn, "__name__", "")
    if name and own.startswith("_") and not own.startswith("__"):
        # a private function that exists only as this method: help() shows Tensor.<name>
        fn.__name__, fn.__qualname__ = name, f"Tensor.{name}"
    setattr(Tensor, name or fn.__name__, fn)
    return fn


def tensor_reflected(op, dunder):
    """Declare `op` with its operands swapped as a reflected operator:
    `tensor_reflected(add, "add")` makes `2 + x` call `add(2, x)`."""
    def reflected(self, other):
        return op(other, self)

    reflected.__name__ = f"__r{dunder}__"
    return tensor_method(reflected)


_NUMPY_NAMES = {"axis": "dim", "keepdims": "keepdim"}


def _numpy_names(fn):
    """fn, taking `axis=` for `dim=` and `keepdims=` for `keepdim=` (PyTorch's NumPy aliases)."""
    @functools.wraps(fn)
    def op(*args, **kwargs):
        if "axis" in kwargs or "keepdims" in kwargs:
            for alias, name in _NUMPY_NAMES.items():
                if alias in kwargs:
                    if name in kwargs:
                        raise TypeError(f"{fn.__name__}() got both {name}= and its alias "
                                        f"{alias}=")
                    kwargs[name] = kwargs.pop(alias)
        return fn(*args, **kwargs)
    return op


def tensor_operator(op, dunder):
    """Declare a binary op's operators: `tensor_operator(remainder, "mod")` makes `a % b`,
    `2 % a` and `a %= b` call `remainder`, and adds the in-place method `remainder_` (what
    `%=` runs; see `_update` in inplace.py for what in place means inside the graph)."""
    def inplace(self, other):
        return self._update(inplace.__name__, op, other)

    inplace.__name__ = f"{op.__name__}_"
    inplace.__doc__ = f"In-place `{op.__name__}`; the augmented operator (`__i{dunder}__`) runs it."
    tensor_method(op, f"__{dunder}__")
    tensor_reflected(op, dunder)
    tensor_method(inplace)
    tensor_method(inplace, f"__i{dunder}__")
    return op

