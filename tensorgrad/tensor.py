"""Tensor: one backend array plus what autograd needs (requires_grad, grad, the node that made it).

Methods are thin: each forwards to a function in `tensorgrad.ops`, where the primitive and its
gradient live. The in-place methods (`add_`, `+=`, `set_` ...) and what in place means next to
autograd are in inplace.py; creation functions (`tensor`, `zeros`, `randn` ...) in creation.py.
"""
import functools

from . import backend as _backends
from .device import device
from .inplace import InPlaceMethods


class Tensor(InPlaceMethods):
    __slots__ = ("data", "grad", "requires_grad", "_node", "_backend", "_version", "__weakref__")
    # NumPy arrays and scalars on the left of an operator defer to our reflected methods.
    __array_priority__ = 1000

    def __init__(self, data, dtype=None, device=None, requires_grad=False):
        made = _creation.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        self.data, self._backend = made.data, made._backend
        self.grad, self.requires_grad, self._node, self._version = None, requires_grad, None, [0]

    @classmethod
    def _constant(cls, data, backend):
        """An array as a tensor outside any graph (masks, gradients computed on arrays)."""
        return new_tensor(cls, data, backend, False, None, None)

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
        return self.data.dtype

    def is_floating_point(self):
        return self.data.dtype.kind == "f"

    def is_complex(self):
        return self.data.dtype.kind == "c"

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
        data = base = self.data
        while getattr(base.base, "strides", None) is not None:  # up to the array that owns it
            base = base.base
        if base is data:
            return 0
        return (_address(data) - _address(base)) // data.itemsize

    def sum_to_size(self, *size):
        """Sum the dims broadcasting would have expanded, down to `size` (which must broadcast
        to this tensor's shape): `x.sum_to_size(1, 3)` on (2, 3) sums dim 0, keeping it."""
        size = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
        if not _autograd._broadcasts_to(size, self.shape):
            raise RuntimeError(f"sum_to_size: size {list(size)} is not expandable to size "
                               f"{list(self.shape)}")
        return _autograd.sum_to(self, size)

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

    def as_subclass(self, cls):
        """This tensor as an instance of `cls`, a subclass of Tensor (how Parameter is made):
        the same memory and version counter and the same place in the graph (a tensor that
        requires grad is reached through an alias node, as in PyTorch)."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError(f"as_subclass: expected a subclass of tensorgrad.Tensor, got {cls!r}")
        source = self
        if self.requires_grad and _autograd.is_grad_enabled():
            source = _autograd.PRIMITIVES["reshape"](self, shape=self.shape)  # the alias node
        return new_tensor(cls, source.data, source._backend, source.requires_grad, source._node,
                          source._version)

    def detach(self):
        """The same data, cut from the graph (shares memory and the version counter)."""
        return new_tensor(Tensor, self.data, self._backend, False, None, self._version)

    def detach_(self):
        """Cut this tensor from the graph in place: it becomes a leaf that requires no grad.
        Unlike PyTorch, a view is not refused (views are not tracked as such here)."""
        self._node, self.requires_grad = None, False
        return self

    def register_hook(self, hook):
        """`hook(grad)` runs when this tensor's gradient is computed (summed over every path,
        before it is used) and may return a replacement; returns a handle with `.remove()`.
        A hook registered before an in-place change sees the gradient of the old value."""
        return _hooks.register_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """`hook(self)` runs after this leaf's `.grad` has taken a backward's gradient;
        returns a handle with `.remove()`. Leaves only, as in PyTorch."""
        return _hooks.register_post_accumulate_grad_hook(self, hook)

    def retain_grad(self):
        """Keep this non-leaf's gradient in `.grad` at backward (taken after its hooks ran);
        for a leaf, which keeps it anyway, nothing to do."""
        _hooks.retain_grad(self)

    @property
    def retains_grad(self):
        return _hooks.retains_grad(self)

    def requires_grad_(self, requires_grad=True):
        if self._node is not None and not requires_grad:
            raise RuntimeError("requires_grad_(False) on a non-leaf tensor; use detach()")
        if requires_grad and self.dtype.kind not in "fc":
            raise RuntimeError(f"only floating point tensors can require gradients, got "
                               f"{self.dtype}")
        self.requires_grad = requires_grad
        return self

    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False):
        """`to("cuda")`, `to(float64)`, `to("cpu", float32)`, `to(other)`: a differentiable move
        or cast; self itself when nothing changes, unless copy=True. non_blocking is accepted
        for PyTorch code and has no effect (transfers here are synchronous)."""
        for arg in args:
            if isinstance(arg, str) and (arg == "cpu" or arg.startswith("cuda")):
                device = arg
            elif isinstance(arg, Tensor):
                device, dtype = arg.device, arg.dtype
            else:
                dtype = arg
        out = self
        if device is not None and _backends.normalize_device(device) != self.device:
            out = _ops.to_device(out, _backends.get_backend(device))
        dtype = _backends.as_dtype(dtype)
        if dtype is not None and dtype != out.dtype:
            out = _ops.cast(out, dtype)
        return _ops.clone(out) if copy and out is self else out

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
        return self if self.data.flags.c_contiguous else _ops.clone(self)

    def clone(self):
        return _ops.clone(self)

    # --- autograd ----------------------------------------------------------------------------
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate gradients of this tensor into every leaf's `.grad`.

        A non-scalar output needs `gradient` (same shape). The graph's saved tensors are freed
        afterwards unless `retain_graph=True`; `create_graph=True` records the backward itself
        so the gradients can be differentiated again. `inputs` (a Tensor or a sequence): only
        those tensors' `.grad` are accumulated into, as in torch.
        """
        _autograd.backward(self, gradient, retain_graph, create_graph, inputs)

    # --- operators -----------------------------------------------------------------------------
    # `a + b`, `a - b` and `a * b` are the ops themselves, declared in ops/arithmetic.py with
    # `tensor_method(add, "__add__")`: no method in between (op_overhead fwd).
    def __radd__(self, other):
        return _ops.add(other, self)

    def __rsub__(self, other):
        return _ops.sub(other, self)

    def __rmul__(self, other):
        return _ops.mul(other, self)

    def __truediv__(self, other):
        return _ops.div(self, other)

    def __rtruediv__(self, other):
        return _ops.div(other, self)

    def __pow__(self, other):
        return _ops.pow(self, other)

    def __rpow__(self, other):
        return _ops.pow(other, self)

    def __neg__(self):
        return _ops.neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _ops.abs(self)

    def __matmul__(self, other):
        return _ops.matmul(self, other)

    def __rmatmul__(self, other):
        return _ops.matmul(other, self)

    def __getitem__(self, index):
        return _ops.getitem(self, index)

    def __eq__(self, other):
        return _ops.eq(self, other)

    def __ne__(self, other):
        return _ops.ne(self, other)

    def __lt__(self, other):
        return _ops.lt(self, other)

    def __le__(self, other):
        return _ops.le(self, other)

    def __gt__(self, other):
        return _ops.gt(self, other)

    def __ge__(self, other):
        return _ops.ge(self, other)

    # & | ^ ~ << >> // % (reflected and augmented too) are declared by their ops with
    # `tensor_operator`, in ops/bitwise.py and ops/division.py.

    def where(self, condition, other):
        """`self` where condition holds, else `other` (torch.Tensor.where)."""
        return _ops.where(condition, self, other)

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


def new_tensor(cls, data, backend, requires_grad, node, version, _new=object.__new__):
    """The one way the engine makes a Tensor of an array: no validation, no copies. A plain
    function: the engine calls it for every output, and a classmethod's binding costs a fifth
    of the call (op_overhead fwd). `Tensor._constant(data, backend)` is its graph-free form."""
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
    names, as PyTorch's do: `x.sum(axis=1, keepdims=True)`."""
    if "dim" in getattr(fn.__code__, "co_varnames", ())[:fn.__code__.co_argcount
                                                      + fn.__code__.co_kwonlyargcount] \
            and not hasattr(fn, "__wrapped__"):
        fn = _numpy_names(fn)
    setattr(Tensor, name or fn.__name__, fn)
    return fn


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
    `%=` runs; see `Tensor._update` for what in place means inside the graph)."""
    def reflected(self, other):
        return op(other, self)

    def inplace(self, other):
        return self._update(inplace.__name__, op, other)

    reflected.__name__ = f"__r{dunder}__"
    inplace.__name__ = f"{op.__name__}_"
    inplace.__doc__ = f"In-place `{op.__name__}`; the augmented operator (`__i{dunder}__`) runs it."
    tensor_method(op, f"__{dunder}__")
    tensor_method(reflected)
    tensor_method(inplace)
    tensor_method(inplace, f"__i{dunder}__")
    return op


from . import autograd as _autograd  # noqa: E402  (the engine needs Tensor defined first)
from .autograd import hooks as _hooks  # noqa: E402
from . import creation as _creation  # noqa: E402  (Tensor(data) is tensor(data))
from .size import Size as _Size  # noqa: E402

_ops = None  # tensorgrad.ops, bound by tensorgrad/ops/__init__.py once it has loaded (operators)
