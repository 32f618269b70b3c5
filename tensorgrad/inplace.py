"""Tensor's in-place methods (add_, +=, copy_, fill_, set_ ...) and what in place means
next to autograd, PyTorch's rules:

- a leaf that requires grad refuses them while grad mode is on (an optimizer step runs under
  no_grad);
- outside the graph they write the tensor's memory: views see the write, and the version
  counter moves, so backward catches a saved tensor that changed after it was saved;
- a tensor inside the graph takes the out-of-place result instead (autograd records no writes
  into memory): the Tensor object itself gets the new data and grad_fn, so every reference to
  it sees PyTorch's value and gradient, but views taken of it before keep the old values.

Each is declared a Tensor method here (`tensor_method`), beside the rules it follows.
"""
from .autograd import hooks as _hooks, is_grad_enabled, no_grad
from .backend.overrides import overridable
from .ops import add, array_index, cast, clone, div, masked_fill, mul, pow
from .tensor import Tensor, from_array, tensor_method

# How far up PyTorch's type ladder a dtype kind is: an in-place op may not climb it
# (an int tensor cannot take a float result), only stay or go down.
_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


@overridable("add_scaled_")
def _add_scaled_(xp, y, x, alpha):
    """y += alpha * x in place, for float arrays of one shape and dtype (add_ with alpha: an SGD
    step's p.add_(grad, alpha=-lr), mlp_step)."""
    y += alpha * x
    return y


@tensor_method
def _inplace(self, op_name, writes_memory=True):
    """Check that `op_name` may change this tensor in place, then bump its version (so
    backward catches a saved tensor that changed after it was saved)."""
    if self.requires_grad and is_grad_enabled():
        if self._node is None:
            raise RuntimeError(f"{op_name}: a leaf Variable that requires grad is being used "
                               "in an in-place operation. Wrap the update in no_grad(), as "
                               "an optimizer step does")
        # Autograd records no writes into memory: going on would silently give wrong gradients.
        raise RuntimeError(f"{op_name}: in-place update of a tensor made by "
                           f"'{self._node.prim.name}' that requires grad; autograd does not "
                           "record in-place ops, use an out-of-place op (where, masked_fill, "
                           "cat) instead")
    if writes_memory:
        self._check_overlap(op_name)
    self._version[0] += 1


@tensor_method
def _check_overlap(self, op_name):
    data = self.data
    if data.size > 1 and 0 in data.strides and any(
            stride == 0 and n > 1 for stride, n in zip(data.strides, data.shape)):
        raise RuntimeError(f"{op_name}: unsupported operation: more than one element of the "
                           "written-to tensor refers to a single memory location. Please "
                           "clone() the tensor before performing the operation.")


@tensor_method
def _operand(self, value):
    if isinstance(value, Tensor):
        if value._backend is not self._backend:
            raise RuntimeError(f"in-place update of a {self.device} tensor with a "
                               f"{value.device} tensor")
        return value.data
    return value


@tensor_method
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
    recording = self.requires_grad or getattr(other, "requires_grad", False)
    if recording and is_grad_enabled():
        if self._node is None and self.requires_grad:
            self._inplace(op_name)  # raises PyTorch's leaf error
        self._check_overlap(op_name)
        # PyTorch's write would reach this memory: nodes that saved it, or a view of it, see
        # a new version (the op below saves it, if at all, at that version).
        self._version[0] += 1
        alias = from_array(self.data, self._backend,
                                   self.requires_grad, self._node, self._version)
        out = self._result(op_name, op(alias, other, **attrs))
        old_node = self._node
        self.data, self._node, self.requires_grad = out.data, out._node, out.requires_grad
        if _hooks.registry and old_node is not None:
            _hooks.moved(self, old_node)  # a retained .grad follows the new value
        # This Tensor is now `out`: it takes out's counter, so a node that saved the output
        # sees later writes, moved past every version the old value had, so a node that
        # saved this Tensor object fails clearly. The old data keeps the old counter.
        counter = out._version
        if counter is not self._version:
            node = out._node
            if node is not None and node.out_version is counter:
                node.out_saved_version = self._version[0]
            counter[0] = self._version[0]
        self._version = counter
        return self
    self._inplace(op_name)
    if ufunc is not None:
        operand = self._operand(other)
        alpha = attrs.get("alpha", 1)
        if alpha != 1:
            if (getattr(operand, "shape", None) == self.data.shape
                    and operand.dtype == self.data.dtype and operand.dtype.kind == "f"):
                _add_scaled_(self._backend, self.data, operand, alpha)
                return self
            operand = operand * alpha  # add_'s scale, on the array: no op dispatch
        try:
            ufunc(self.data, operand, out=self.data, casting="same_kind")
            return self
        except (TypeError, ValueError):
            pass  # a dtype or shape the result cannot take: the op below says which
    with no_grad():
        self.data[...] = self._result(op_name, op(self, other, **attrs)).data
    return self


@tensor_method
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
        out = cast(out, self.dtype)
    return out


@tensor_method
def copy_(self, src):
    """Copy `src` (broadcast to this shape, cast to this dtype) into this tensor. A source
    that requires grad, in grad mode, makes this tensor a copy of it in the graph."""
    if getattr(src, "requires_grad", False) and is_grad_enabled() \
            and self.dtype.kind in "fc":
        return self._update("copy_", _copy_of, src)
    self._inplace("copy_")
    self.data[...] = self._operand(src)
    return self


@tensor_method
def set_(self, source):
    """Make this tensor hold `source`'s data (its memory, shape, dtype and device), keeping
    its identity, requires_grad and .grad; the version bumps, so a graph that saved it
    refuses to backward. Module.to() moves and casts parameters with it. Unlike
    torch.Tensor.set_, a different dtype is accepted (a floating one if this requires grad).
    """
    if not isinstance(source, Tensor):
        raise TypeError(f"set_: expected a Tensor, got {type(source).__name__}")
    if self.requires_grad and source.dtype.kind not in "fc":
        raise RuntimeError(f"set_: this tensor requires grad, so its data must stay floating "
                           f"point; got a {source.dtype} source")
    self._inplace("set_", writes_memory=False)
    self.data, self._backend = source.data, source._backend
    return self


@tensor_method
def zero_(self):
    return self.fill_(0)


@tensor_method
def fill_(self, value):
    self._inplace("fill_")
    self.data[...] = self._operand(value)
    return self


@tensor_method
def masked_fill_(self, mask, value):
    """Write `value` where the bool `mask` (broadcast to this shape) is True."""
    return self._update("masked_fill_", lambda x, v: masked_fill(x, mask, v),
                        value)


@tensor_method
def add_(self, other, alpha=1):
    return self._update("add_", add, other, self._backend.add, alpha=alpha)


@tensor_method
def sub_(self, other, alpha=1):
    return self.add_(other, alpha=-alpha)


@tensor_method
def mul_(self, other):
    return self._update("mul_", mul, other, self._backend.multiply)


@tensor_method
def div_(self, other, rounding_mode=None):
    """In-place `div` (true division, or rounding_mode "trunc" / "floor")."""
    if rounding_mode is not None:
        return self._update("div_", div, other, rounding_mode=rounding_mode)
    return self._update("div_", div, other, self._backend.divide)


@tensor_method
def pow_(self, exponent):
    return self._update("pow_", pow, exponent, self._backend.power)


@tensor_method
def clamp_(self, min=None, max=None):
    self._inplace("clamp_")
    self._backend.clip(self.data, min, max, out=self.data)
    return self


@tensor_method
def normal_(self, mean=0.0, std=1.0):
    self._inplace("normal_")
    sample = self._backend.random_normal(self.data.shape, self.dtype)
    sample *= std
    sample += mean
    self.data[...] = sample
    return self


@tensor_method
def uniform_(self, a=0.0, b=1.0):
    self._inplace("uniform_")
    sample = self._backend.random_uniform(self.data.shape, self.dtype)
    sample *= b - a
    sample += a
    self.data[...] = sample
    return self


@tensor_method
def __setitem__(self, index, value):
    self._inplace("__setitem__")
    self.data[array_index(index, self)] = self._operand(value)


# The augmented operators are the in-place ops (`p -= lr * p.grad` updates p), as in
# PyTorch; those of the integer ops (//=, %=, &=, |=, ^=, <<=, >>=) are declared with their
# ops in ops/division.py and ops/bitwise.py.
for _dunder, _method in (("__iadd__", add_), ("__isub__", sub_), ("__imul__", mul_),
                         ("__itruediv__", div_), ("__ipow__", pow_)):
    tensor_method(_method, _dunder)


def _copy_of(x, src):
    """src as a fresh tensor of x's shape and dtype: copy_'s result when it joins the graph."""
    return clone(src.expand(x.shape)).to(x.dtype)

