"""Tensor: one backend array plus what autograd needs (requires_grad, grad, the node that made it).

Methods are thin: each forwards to a function in `tensorgrad.ops`, where the primitive and its
gradient live. Creation functions (`tensor`, `zeros`, `randn` ...) are in creation.py.
"""
from . import backend as _backends


class Tensor:
    __slots__ = ("data", "grad", "requires_grad", "_node", "_backend", "_version", "__weakref__")
    # NumPy arrays and scalars on the left of an operator defer to our reflected methods.
    __array_priority__ = 1000

    def __init__(self, data, dtype=None, device=None, requires_grad=False):
        made = _creation.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        self.data, self._backend = made.data, made._backend
        self.grad, self.requires_grad, self._node, self._version = None, requires_grad, None, [0]

    @classmethod
    def _wrap(cls, data, backend, requires_grad, node, version):
        """Fast constructor used by ops: no validation, no copies."""
        t = object.__new__(cls)
        t.data = data
        t._backend = backend
        t.requires_grad = requires_grad
        t._node = node
        t.grad = None
        t._version = [0] if version is None else version
        return t

    @classmethod
    def _constant(cls, data, backend):
        """An array as a tensor outside any graph (masks, gradients computed on arrays)."""
        return cls._wrap(data, backend, False, None, None)

    # --- attributes ------------------------------------------------------------------------
    @property
    def shape(self):
        return self.data.shape  # a tuple in NumPy and CuPy

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

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

    @property
    def device(self):
        return self._backend.device

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

    def detach(self):
        """The same data, cut from the graph (shares memory and the version counter)."""
        return Tensor._wrap(self.data, self._backend, False, None, self._version)

    def requires_grad_(self, requires_grad=True):
        if self._node is not None and not requires_grad:
            raise RuntimeError("requires_grad_(False) on a non-leaf tensor; use detach()")
        if requires_grad and self.dtype.kind not in "fc":
            raise RuntimeError(f"only floating point tensors can require gradients, got "
                               f"{self.dtype}")
        self.requires_grad = requires_grad
        return self

    def to(self, *args, dtype=None, device=None):
        """`to("cuda")`, `to(float64)`, `to("cpu", float32)`: a differentiable move or cast."""
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
        return out

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
        return self

    def clone(self):
        return _ops.clone(self)

    # --- autograd ----------------------------------------------------------------------------
    def backward(self, gradient=None, retain_graph=None, create_graph=False):
        """Accumulate gradients of this tensor into every leaf's `.grad`.

        A non-scalar output needs `gradient` (same shape). The graph's saved tensors are freed
        afterwards unless `retain_graph=True`; `create_graph=True` records the backward itself
        so the gradients can be differentiated again.
        """
        _autograd.backward(self, gradient, retain_graph, create_graph)

    # --- in-place updates (optimizers, init, masking) --------------------------------------
    def _inplace(self, op_name):
        if self.requires_grad and _autograd.is_grad_enabled():
            if self._node is None:
                raise RuntimeError(f"{op_name}: a leaf tensor that requires grad is being modified "
                                   "in place while grad mode is on; wrap the update in no_grad()")
            # Autograd records no in-place ops: going on would silently give wrong gradients.
            raise RuntimeError(f"{op_name}: in-place update of a tensor made by "
                               f"'{self._node.prim.name}' that requires grad; autograd does not "
                               "record in-place ops, use an out-of-place op (where, masked_fill, "
                               "cat) instead")
        self._version[0] += 1

    def _operand(self, value):
        if isinstance(value, Tensor):
            if value._backend is not self._backend:
                raise RuntimeError(f"in-place update of a {self.device} tensor with a "
                                   f"{value.device} tensor")
            return value.data
        return value

    def copy_(self, src):
        self._inplace("copy_")
        src = self._operand(src)
        self.data[...] = src
        return self

    def zero_(self):
        return self.fill_(0)

    def fill_(self, value):
        self._inplace("fill_")
        self.data[...] = self._operand(value)
        return self

    def add_(self, other, alpha=1):
        self._inplace("add_")
        other = self._operand(other)
        if alpha != 1:
            other = other * alpha
        self._backend.add(self.data, other, out=self.data, casting="unsafe")
        return self

    def sub_(self, other, alpha=1):
        return self.add_(other, alpha=-alpha)

    def mul_(self, other):
        self._inplace("mul_")
        self._backend.multiply(self.data, self._operand(other), out=self.data, casting="unsafe")
        return self

    def div_(self, other):
        self._inplace("div_")
        self._backend.divide(self.data, self._operand(other), out=self.data, casting="unsafe")
        return self

    def clamp_(self, min=None, max=None):
        self._inplace("clamp_")
        self._backend.clip(self.data, min, max, out=self.data)
        return self

    def normal_(self, mean=0.0, std=1.0):
        self._inplace("normal_")
        sample = self._backend.random_normal(self.data.shape, self.dtype)
        sample *= std
        sample += mean
        self.data[...] = sample
        return self

    def uniform_(self, a=0.0, b=1.0):
        self._inplace("uniform_")
        sample = self._backend.random_uniform(self.data.shape, self.dtype)
        sample *= b - a
        sample += a
        self.data[...] = sample
        return self

    def __setitem__(self, index, value):
        self._inplace("__setitem__")
        self.data[_ops.array_index(index, self)] = self._operand(value)

    def __iadd__(self, other):
        return self.add_(other) if not self.requires_grad or not _autograd.is_grad_enabled() \
            else self + other

    def __isub__(self, other):
        return self.sub_(other) if not self.requires_grad or not _autograd.is_grad_enabled() \
            else self - other

    def __imul__(self, other):
        return self.mul_(other) if not self.requires_grad or not _autograd.is_grad_enabled() \
            else self * other

    def __itruediv__(self, other):
        return self.div_(other) if not self.requires_grad or not _autograd.is_grad_enabled() \
            else self / other

    # --- operators -----------------------------------------------------------------------------
    def __add__(self, other):
        return _ops.add(self, other)

    def __radd__(self, other):
        return _ops.add(other, self)

    def __sub__(self, other):
        return _ops.sub(self, other)

    def __rsub__(self, other):
        return _ops.sub(other, self)

    def __mul__(self, other):
        return _ops.mul(self, other)

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

    def __invert__(self):
        return _ops.logical_not(self)

    def __and__(self, other):
        return _ops.logical_and(self, other)

    def __or__(self, other):
        return _ops.logical_or(self, other)

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


def tensor_method(fn, name=None):
    """Declare an op a Tensor method as well: `@tensor_method` over `def softmax(x, dim=-1)`
    makes `x.softmax(-1)` call that very function, so a method has no second implementation and
    `help(Tensor.softmax)` shows the op's docstring. tests/tensorgrad/test_tensor_methods.py
    checks the methods against torch.Tensor's."""
    setattr(Tensor, name or fn.__name__, fn)
    return fn


from . import autograd as _autograd  # noqa: E402  (the engine needs Tensor defined first)
from . import creation as _creation  # noqa: E402  (Tensor(data) is tensor(data))

_ops = None  # tensorgrad.ops, bound by tensorgrad/ops/__init__.py once it has loaded (operators)
