"""Tensor: one backend array plus what autograd needs (requires_grad, grad, the node that made it).

Methods are thin: each forwards to a function in `tensorgrad.ops`, where the primitive and its
gradient live. Creation functions (`tensor`, `zeros`, `randn` ...) are in creation.py.
"""
from . import backend as _backends

# How far up PyTorch's type ladder a dtype kind is: an in-place op may not climb it
# (an int tensor cannot take a float result), only stay or go down.
_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


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
        """Check that `op_name` may write into this tensor's memory, then bump its version (so
        backward catches a saved tensor that changed after it was saved)."""
        if self.requires_grad and _autograd.is_grad_enabled():
            if self._node is None:
                raise RuntimeError(f"{op_name}: a leaf Variable that requires grad is being used "
                                   "in an in-place operation. Wrap the update in no_grad(), as "
                                   "an optimizer step does")
            # Autograd records no writes into memory: going on would silently give wrong gradients.
            raise RuntimeError(f"{op_name}: in-place update of a tensor made by "
                               f"'{self._node.prim.name}' that requires grad; autograd does not "
                               "record in-place ops, use an out-of-place op (where, masked_fill, "
                               "cat) instead")
        data = self.data
        if data.size > 1 and 0 in data.strides and any(
                stride == 0 and n > 1 for stride, n in zip(data.strides, data.shape)):
            raise RuntimeError(f"{op_name}: unsupported operation: more than one element of the "
                               "written-to tensor refers to a single memory location. Please "
                               "clone() the tensor before performing the operation.")
        self._version[0] += 1

    def _operand(self, value):
        if isinstance(value, Tensor):
            if value._backend is not self._backend:
                raise RuntimeError(f"in-place update of a {self.device} tensor with a "
                                   f"{value.device} tensor")
            return value.data
        return value

    def _update(self, op_name, op, other, ufunc=None, **attrs):
        """`self <- op(self, other, **attrs)` with PyTorch's meaning of an in-place op (add_, +=).

        Outside the graph (no_grad, or nothing involved requires grad) the result is written
        into this tensor's memory: views see it and the version counter moves. A leaf that
        requires grad raises PyTorch's error. On a tensor inside the graph, autograd records no
        writes into memory, so this Tensor object takes the out-of-place result instead (its
        data and grad_fn): every reference to it sees PyTorch's value and gradient, but views
        taken of it before keep the old values. ufunc: a backend function that writes the
        result in place directly (`xp.add`, with add's `alpha` applied to the operand first),
        the fast path optimizer steps take.
        """
        if _autograd.is_grad_enabled() and (self.requires_grad or getattr(other, "requires_grad",
                                                                          False)):
            if self._node is None and self.requires_grad:
                self._inplace(op_name)  # raises PyTorch's leaf error
            alias = Tensor._wrap(self.data, self._backend, self.requires_grad, self._node,
                                 self._version)
            out = self._result(op_name, op(alias, other, **attrs))
            self.data, self._node, self.requires_grad = out.data, out._node, out.requires_grad
            # Nodes that saved this Tensor would now read the new data: a new, higher version
            # makes their backward fail clearly. The old data keeps the old counter (and views).
            self._version = [self._version[0] + 1]
            return self
        self._inplace(op_name)
        if ufunc is not None:
            operand = self._operand(other)
            if attrs.get("alpha", 1) != 1:
                operand = operand * attrs["alpha"]  # add_'s scale, on the array: no op dispatch
            try:
                ufunc(self.data, operand, out=self.data, casting="same_kind")
                return self
            except (TypeError, ValueError):
                pass  # a dtype or shape the result cannot take: the op below says which
        with _autograd.no_grad():
            self.data[...] = self._result(op_name, op(self, other, **attrs)).data
        return self

    def _result(self, op_name, out):
        """An in-place op's out-of-place result, checked against this tensor as PyTorch does
        (the broadcast shape must be this shape, the dtype must not go up a kind) and cast."""
        if out.shape != self.shape:
            raise RuntimeError(f"{op_name}: output with shape {list(self.shape)} doesn't match "
                               f"the broadcast shape {list(out.shape)}")
        if out.dtype != self.dtype:
            if _KIND_RANK[out.dtype.kind] > _KIND_RANK[self.dtype.kind]:
                raise RuntimeError(f"{op_name}: result type {out.dtype} can't be cast to the "
                                   f"desired output type {self.dtype}")
            out = _ops.cast(out, self.dtype)
        return out

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

    def masked_fill_(self, mask, value):
        """Write `value` where the bool `mask` (broadcast to this shape) is True."""
        return self._update("masked_fill_", lambda x, v: _ops.masked_fill(x, mask, v), value)

    def add_(self, other, alpha=1):
        return self._update("add_", _ops.add, other, self._backend.add, alpha=alpha)

    def sub_(self, other, alpha=1):
        return self.add_(other, alpha=-alpha)

    def mul_(self, other):
        return self._update("mul_", _ops.mul, other, self._backend.multiply)

    def div_(self, other, rounding_mode=None):
        """In-place `div` (true division, or rounding_mode "trunc" / "floor")."""
        if rounding_mode is not None:
            return self._update("div_", _ops.div, other, rounding_mode=rounding_mode)
        return self._update("div_", _ops.div, other, self._backend.divide)

    def pow_(self, exponent):
        return self._update("pow_", _ops.pow, exponent, self._backend.power)

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

    # The augmented operators are the in-place ops (`p -= lr * p.grad` updates p), as in
    # PyTorch; those of the integer ops (//=, %=, &=, |=, ^=, <<=, >>=) are declared with their
    # ops in ops/division.py and ops/bitwise.py.
    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def __ipow__(self, other):
        return self.pow_(other)

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


def tensor_method(fn, name=None):
    """Declare an op a Tensor method as well: `@tensor_method` over `def softmax(x, dim=-1)`
    makes `x.softmax(-1)` call that very function, so a method has no second implementation and
    `help(Tensor.softmax)` shows the op's docstring. tests/tensorgrad/test_tensor_methods.py
    checks the methods against torch.Tensor's."""
    setattr(Tensor, name or fn.__name__, fn)
    return fn


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
from . import creation as _creation  # noqa: E402  (Tensor(data) is tensor(data))

_ops = None  # tensorgrad.ops, bound by tensorgrad/ops/__init__.py once it has loaded (operators)
