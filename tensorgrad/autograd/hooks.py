"""Tensor hooks and retained gradients: `register_hook`, `retain_grad`, PyTorch's semantics.

A hook belongs to where a tensor's gradient arrives: the node that made it (a non-leaf: every
tensor made by one node has the same gradient) or the leaf tensor itself. The registry is one
dict keyed by the id of that node or leaf; the engine reads it only when it is not empty, so a
backward with no hook anywhere costs one test per node (op_overhead fwd+bwd). An entry goes
away with the object it is keyed by (a weak reference's callback), so ids are never reused
while an entry exists.

As in PyTorch: hooks run in registration order on the gradient summed over every path, before
it is used (a non-leaf's VJP, a leaf's `.grad`, what `grad()` returns); a hook returning a
tensor replaces the gradient; a retained `.grad` is taken last, after every hook. A leaf's
post-accumulate hooks (`register_post_accumulate_grad_hook`) run after its `.grad` was updated,
with the leaf itself (DistributedDataParallel averages `.grad` from there).
"""
import itertools
import weakref

from ..tensor import Tensor, tensor_method

registry = {}  # id(node or leaf tensor) -> _Entry
_ids = itertools.count()


class _Entry:
    __slots__ = ("target", "hooks", "post_hooks", "retainer")

    def __init__(self, target):
        key = id(target)
        self.target = weakref.ref(target, lambda _: registry.pop(key, None))
        self.hooks = {}  # handle id -> fn, in registration order
        self.post_hooks = {}  # handle id -> fn(leaf), after the leaf's .grad is updated
        self.retainer = None  # a weak reference to the non-leaf tensor whose .grad is kept


def _entry(target):
    entry = registry.get(id(target))
    if entry is None:
        entry = registry[id(target)] = _Entry(target)
    return entry


def _forget_if_empty(key, entry):
    if (not entry.hooks and not entry.post_hooks and entry.retainer is None
            and registry.get(key) is entry):
        del registry[key]


class RemovableHandle:
    """What `register_hook` returns: `.remove()` unregisters the hook (also as `with handle:`)."""

    __slots__ = ("id", "_key")

    def __init__(self, key, hook_id):
        self._key, self.id = key, hook_id

    def remove(self):
        entry = registry.get(self._key)
        if entry is None:
            return
        if (entry.hooks.pop(self.id, None) or entry.post_hooks.pop(self.id, None)) is not None:
            _forget_if_empty(self._key, entry)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


@tensor_method
def register_hook(tensor, hook):
    """Tensor.register_hook: `hook(grad)` runs when this tensor's gradient is computed (summed
    over every path, before it is used) and may return a replacement; returns a handle with
    `.remove()`. A hook registered before an in-place change sees the gradient of the old value."""
    if not tensor.requires_grad:
        raise RuntimeError("register_hook: cannot register a hook on a tensor that doesn't "
                           f"require gradient (shape {tuple(tensor.shape)}, {tensor.dtype})")
    if not callable(hook):
        raise TypeError(f"register_hook: expected a callable hook(grad), got "
                        f"{type(hook).__name__}")
    target = tensor._node if tensor._node is not None else tensor
    hook_id = next(_ids)
    _entry(target).hooks[hook_id] = hook
    return RemovableHandle(id(target), hook_id)


@tensor_method
def register_post_accumulate_grad_hook(tensor, hook):
    """Tensor.register_post_accumulate_grad_hook: `hook(tensor)` runs once the leaf's `.grad`
    has taken this backward's gradient (not for `grad()`, which fills no `.grad`); returns a
    handle with `.remove()`. Leaves only, as in PyTorch."""
    if tensor._node is not None:
        raise RuntimeError("register_post_accumulate_grad_hook: post accumulate grad hooks "
                           "cannot be registered on non-leaf tensors")
    if not tensor.requires_grad:
        raise RuntimeError("register_post_accumulate_grad_hook: cannot register a hook on a "
                           f"tensor that doesn't require gradient (shape {tuple(tensor.shape)})")
    if not callable(hook):
        raise TypeError("register_post_accumulate_grad_hook: expected a callable hook(tensor), "
                        f"got {type(hook).__name__}")
    hook_id = next(_ids)
    _entry(tensor).post_hooks[hook_id] = hook
    return RemovableHandle(id(tensor), hook_id)


def run_post_accumulate(entry, leaf):
    for fn in list(entry.post_hooks.values()):  # a hook may remove itself
        fn(leaf)


@tensor_method
def retain_grad(tensor):
    """Tensor.retain_grad: a non-leaf keeps its gradient in `.grad` at backward (taken after
    its hooks ran); a leaf already does."""
    if not tensor.requires_grad:
        raise RuntimeError("retain_grad: can't retain_grad on a tensor that has "
                           "requires_grad=False")
    if tensor._node is not None:
        _entry(tensor._node).retainer = weakref.ref(tensor)


def retains_grad(tensor):
    entry = registry.get(id(tensor._node)) if tensor._node is not None else None
    return entry is not None and entry.retainer is not None and entry.retainer() is tensor


tensor_method(property(retains_grad), "retains_grad")


def moved(tensor, old_node):
    """An in-place op gave `tensor` a new node: its retained .grad follows it there (PyTorch:
    .grad is the gradient of the modified tensor); hooks stay on the old node, so they see the
    gradient of the value before the change."""
    entry = registry.get(id(old_node))
    if entry is not None and entry.retainer is not None and entry.retainer() is tensor:
        entry.retainer = None
        _forget_if_empty(id(old_node), entry)
        retain_grad(tensor)


def run(entry, grad, create_graph):
    """Run one node's or leaf's hooks on its summed gradient; returns the gradient to use."""
    for fn in list(entry.hooks.values()):  # a hook may remove itself
        new = fn(grad)
        if new is not None:
            name = getattr(fn, "__name__", repr(fn))
            if not isinstance(new, Tensor):
                raise TypeError(f"hook '{name}' returned {type(new).__name__}; a hook returns "
                                "None or a Tensor (the replacement gradient)")
            if new.shape != grad.shape:
                raise RuntimeError(f"hook '{name}' has changed the size of value: it returned "
                                   f"shape {tuple(new.shape)} for a gradient of shape "
                                   f"{tuple(grad.shape)}")
            if new.dtype != grad.dtype or new._backend is not grad._backend:
                raise RuntimeError(f"hook '{name}' has changed the type of value: it returned "
                                   f"{new.dtype} on {new.device} for a gradient of "
                                   f"{grad.dtype} on {grad.device}")
            grad = new
    tensor = entry.retainer() if entry.retainer is not None else None
    if tensor is not None:
        if create_graph:
            tensor.grad = grad.clone() if tensor.grad is None else tensor.grad + grad
        elif tensor.grad is None:  # a copy: the array goes on to the VJP, which may hand it on
            tensor.grad = grad.detach().clone()
        else:
            tensor.grad = (tensor.grad + grad).detach()
    return grad
