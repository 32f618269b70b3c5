"""The backward walk: `backward`, `grad`, and the engine both run on.

Gradients flow from the outputs through the recorded nodes in reverse topological order, found
without recursion; each VJP's gradients are summed back to their inputs' shapes here, in one
place, and added up per node before that node's own VJP runs.
"""
from ..creation import tensor as make_tensor
from ..tensor import Tensor, from_array, tensor_method
from . import hooks as _hooks
from .grad_mode import _anomaly_mode, _GradMode, autocast_off, check_finite, this_thread
from .graph import Node, freed_message, node_where


def _topological_order(roots, stop=()):
    """Nodes reachable from `roots`, every node after all the nodes that consume it; the walk
    does not go past nodes whose id is in `stop`."""
    order, visited = [], set()
    stack = [(node, False) for node in roots]
    while stack:
        node, children_done = stack.pop()
        if children_done:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        if node.parents is None:
            raise RuntimeError(freed_message(node))
        stack.append((node, True))
        if id(node) in stop:
            continue
        for parent in node.parents:
            if type(parent) is Node and id(parent) not in visited:
                stack.append((parent, False))
    order.reverse()
    return order


def sum_to(grad, shape):
    """Undo broadcasting: sum `grad` down to `shape`. The only place the engine does this."""
    if grad.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(
        lead + i for i, size in enumerate(shape) if size == 1 and grad.shape[lead + i] != 1)
    if dims:
        grad = grad.sum(dim=dims, keepdim=True)
    return grad.reshape(shape) if grad.shape != shape else grad


def _broadcasts_to(shape, target):
    """Whether broadcasting turns `shape` into `target`, so that `sum_to` can undo it."""
    lead = len(target) - len(shape)
    return lead >= 0 and all(size in (1, target[lead + i]) for i, size in enumerate(shape))


@tensor_method
def sum_to_size(self, *size):
    """Sum the dims broadcasting would have expanded, down to `size` (which must broadcast
    to this tensor's shape): `x.sum_to_size(1, 3)` on (2, 3) sums dim 0, keeping it."""
    size = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
    if not _broadcasts_to(size, self.shape):
        raise RuntimeError(f"sum_to_size: size {list(size)} is not expandable to size "
                           f"{list(self.shape)}")
    return sum_to(self, size)


def _wrong_shape_message(node, in_grads):
    """Name the first input whose gradient cannot be summed back to its shape. The index is
    found here, off the hot loop, which would otherwise enumerate every input (op_overhead
    fwd+bwd)."""
    for index, (parent, g, shape) in enumerate(zip(node.parents, in_grads, node.in_shapes)):
        if parent is not None and g is not None and not _broadcasts_to(shape, g.data.shape):
            return (f"{node.prim.name}{node_where(node)}: its VJP returned a gradient of shape "
                    f"{tuple(g.data.shape)} for input {index}, which has shape {tuple(shape)}; a "
                    "gradient must have its input's shape, or a shape the input broadcasts to "
                    "(it is summed back)")
    raise AssertionError("no input has a gradient of the wrong shape")


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=None,
                 partial=False):
    """Propagate gradients from `outputs`. With `inputs`, return their gradients instead of
    accumulating into leaves' `.grad`; with `partial` too, treat the inputs as independent
    (stop at them rather than following their own history)."""
    grads = {}
    roots = []
    # Hooks are looked up only when some tensor has one (op_overhead fwd+bwd). A composite's
    # inner walk (`partial`) runs none: the outer walk runs them.
    hooks = _hooks.registry if _hooks.registry and not partial else None
    held = {}  # hooked leaves: id -> [leaf, summed gradient], delivered after the walk
    owned = {id(g.data) for g in grad_outputs}  # arrays a leaf's .grad may not take as its own
    # Nodes whose gradient so far is an array this walk made (a sum, or a buffer slices' gradients
    # were added into): until the node's turn, nothing else holds it, so more is added in place.
    summed = set()
    captured = {} if inputs is not None else None
    wanted = {}
    if inputs is not None:
        for i, t in enumerate(inputs):
            wanted.setdefault(id(t._node) if t._node is not None else id(t), []).append(i)
    for out, grad in zip(outputs, grad_outputs):
        if not out.requires_grad:
            raise RuntimeError(f"element {len(roots)} of outputs does not require grad and has no "
                               "graph; did you compute it under no_grad or from constants?")
        if out._node is None:
            if hooks is not None and id(out) in hooks:
                _hold(held, out, grad)
            else:
                _deliver(out, grad, captured, wanted, create_graph, owned)
            continue
        key = id(out._node)
        grads[key] = grad if key not in grads else grads[key] + grad
        roots.append(out._node)

    check = this_thread.switches.anomaly
    # Inside a VJP the forward check is off: a NaN there is reported below, as the gradient of
    # the op being differentiated rather than as the forward of some op inside its VJP.
    with _GradMode(create_graph), _anomaly_mode(False), autocast_off():
        for node in _topological_order(roots, wanted if partial else ()):
            grad = grads.pop(id(node), None)
            if grad is None:
                continue
            if hooks is not None and id(node) in hooks:
                grad = _hooks.run(hooks[id(node)], grad, create_graph)
            if captured is not None and id(node) in wanted:
                for i in wanted[id(node)]:
                    captured[i] = grad
                if partial:
                    continue
            prim = node.prim
            if prim.vjp is None:
                raise RuntimeError(f"{prim.name} has no gradient rule")
            if node.out_version is not None:  # the output is saved: was it changed since?
                node.check_out()
            if node.guards is not None:
                node.check_guards()
            if prim.accumulate is not None and not create_graph and \
                    type(node.parents[0]) is Node:
                _accumulate(node, grad, grads, summed)
                if not retain_graph:
                    node.release()
                continue
            if create_graph and prim.composite is not None:
                in_grads = _composite_vjp(node, grad)
            else:
                in_grads = prim.vjp(node, grad)
            if type(in_grads) is not tuple:
                in_grads = (in_grads,)
            for parent, g, shape, dtype in zip(node.parents, in_grads, node.in_shapes,
                                               node.in_dtypes):
                if parent is None or g is None:
                    continue
                # compared here: the common, matching case costs no call (op_overhead fwd+bwd)
                if g.data.shape != shape:
                    if not _broadcasts_to(shape, g.data.shape):
                        raise RuntimeError(_wrong_shape_message(node, in_grads))
                    g = sum_to(g, shape)
                if g.data.dtype != dtype:
                    g = g.to(dtype)
                if check:
                    check_finite(g.data, g._backend,
                                 f"the gradient of op '{prim.name}'{node_where(node)}")
                if type(parent) is Node:
                    key = id(parent)
                    previous = grads.get(key)
                    if previous is None:
                        grads[key] = g
                    elif create_graph:
                        grads[key] = previous + g
                    elif key in summed:  # same shape and dtype by now: add the arrays in place
                        previous.data += g.data
                    else:  # skipping the op machinery (op_overhead fwd+bwd)
                        grads[key] = from_array(previous.data + g.data, g._backend)
                        summed.add(key)
                elif hooks is not None and id(parent) in hooks:
                    _hold(held, parent, g)
                else:
                    _deliver(parent, g, captured, wanted, create_graph, owned)
            if not retain_graph:
                node.release()
        # A hooked leaf's hooks run once, on its gradient summed over every path (PyTorch).
        for leaf, grad in held.values():
            entry = hooks.get(id(leaf))  # None if a hook removed the last one meanwhile
            if entry is not None:
                grad = _hooks.run(entry, grad, create_graph)
            _deliver(leaf, grad, captured, wanted, create_graph, owned)
            if entry is not None and entry.post_hooks and captured is None:
                _hooks.run_post_accumulate(entry, leaf)
    if captured is not None:
        return [captured.get(i) for i in range(len(inputs))]
    return None


def _accumulate(node, grad, grads, summed):
    """Add a node's gradient for its input 0 into that parent's running sum with the
    primitive's `accumulate` rule, starting the sum as zeros (or a copy of what arrived
    before) when this walk does not own it yet."""
    key = id(node.parents[0])
    total = grads.get(key)
    if key not in summed:
        shape, dtype = node.in_shapes[0], node.in_dtypes[0]
        data = node.backend.zeros(shape, dtype) if total is None else total.data.copy()
        total = grads[key] = from_array(data, node.backend)
        summed.add(key)
    node.prim.accumulate(node, grad, total.data)


def _composite_vjp(node, grad):
    """The VJP of a fused primitive obtained by differentiating its composite (create_graph
    only): every op is recorded, so the result can be differentiated again."""
    inputs = node.inputs
    with _GradMode(True):
        out = node.prim.composite(*inputs, **node.attrs)
    # The composite's gradient for a tensor passed in several slots (attention(q, q, q)) is
    # already the sum over those slots: the first slot takes it, the others None, or the engine
    # would add it once per slot.
    wanted, firsts, seen = [], [], set()
    for t, need in zip(inputs, node.needs_grad):
        key = None if t is None else id(t._node) if t._node is not None else id(t)
        first = need and key not in seen
        if first:
            seen.add(key)
            wanted.append(t)
        firsts.append(first)
    grads = iter(run_backward([out], [grad], True, True, wanted, partial=True))
    return tuple(next(grads) if first else None for first in firsts)


def _hold(held, leaf, grad):
    pending = held.get(id(leaf))
    if pending is None:
        held[id(leaf)] = [leaf, grad]
    else:
        pending[1] = pending[1] + grad


def _deliver(leaf, grad, captured, wanted, create_graph, owned):
    """A leaf's gradient: captured for `grad()`, else accumulated into `.grad`."""
    if captured is not None:
        for i in wanted.get(id(leaf), ()):
            captured[i] = grad if i not in captured else captured[i] + grad
        return
    if create_graph:
        leaf.grad = grad if leaf.grad is None else leaf.grad + grad
        return
    if leaf.grad is not None:
        leaf.grad = (leaf.grad + grad).detach()
        return
    # The leaf must own its .grad (optimizers and clipping update it in place). A fresh array
    # that no other leaf got is taken as it is, not copied (mlp_step); a view (a broadcast, say),
    # one already handed to another leaf, or the caller's own seed gradient is copied.
    data = grad.data
    if grad._backend.owner(data) is not data or id(data) in owned:
        data = data.copy()
    owned.add(id(data))
    leaf.grad = from_array(data, grad._backend)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of `tensors` into the leaves' `.grad`, as torch.autograd.backward.

    tensors: a Tensor or a sequence of Tensors; grad_tensors: one gradient per tensor (None, or
    a None entry, for a single-element tensor: 1). With `inputs` (a Tensor or a sequence), only
    those tensors' `.grad` receive a gradient, leaves or not; the rest of the graph is left
    alone. See `Tensor.backward` for retain_graph and create_graph.
    """
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if grad_tensors is None or isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors] * len(tensors)
    else:
        grad_tensors = list(grad_tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"backward: got {len(grad_tensors)} gradients for {len(tensors)} "
                           "tensors")
    grad_tensors = [_default_grad(t, g, "backward") for t, g in zip(tensors, grad_tensors)]
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is None:
        run_backward(tensors, grad_tensors, retain_graph, create_graph)
        return
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if not inputs:
        raise RuntimeError("backward: inputs, when given, cannot be empty")
    for i, t in enumerate(inputs):
        if not t.requires_grad:
            raise RuntimeError(f"backward: input {i} (shape {t.shape}) does not require grad")
    grads = run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs)
    owned = {id(g.data) for g in grad_tensors}
    for t, g in zip(inputs, grads):
        # an input the tensors do not depend on keeps its .grad; a non-leaf that retains its
        # gradient has had it stored by the walk already (once, as in torch)
        if g is not None and not (t._node is not None and _hooks.retains_grad(t)):
            _deliver(t, g, None, None, create_graph, owned)


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of this tensor into every leaf's `.grad`.

    A non-scalar output needs `gradient` (same shape). The graph's saved tensors are freed
    afterwards unless `retain_graph=True`; `create_graph=True` records the backward itself
    so the gradients can be differentiated again. `inputs` (a Tensor or a sequence): only
    those tensors' `.grad` are accumulated into, as in torch.
    """
    backward(self, gradient, retain_graph, create_graph, inputs)


tensor_method(_tensor_backward, "backward")


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False):
    """Gradients of `outputs` with respect to `inputs`, returned rather than stored in `.grad`.

    outputs, inputs: a Tensor or a sequence of Tensors. Returns a tuple with one gradient per
    input (None for an input the outputs do not depend on, when `allow_unused`).
    """
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs] * len(outputs)
    grad_outputs = [_default_grad(o, g, "grad") for o, g in zip(outputs, grad_outputs)]
    for i, t in enumerate(inputs):
        if not t.requires_grad:
            raise RuntimeError(f"grad: input {i} (shape {t.shape}) does not require grad")
    if retain_graph is None:
        retain_graph = create_graph
    result = run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs)
    for i, g in enumerate(result):
        if g is None and not allow_unused:
            raise RuntimeError(f"grad: input {i} (shape {inputs[i].shape}) is not used by the "
                               "outputs; pass allow_unused=True to get None for it")
        if g is not None and not create_graph:
            result[i] = g.detach()
    return tuple(result)


def _default_grad(tensor, gradient, what):
    if gradient is None:
        if tensor.data.size != 1:
            raise RuntimeError(f"{what}: a gradient can be created implicitly only for a "
                               f"single-element output, got shape {tensor.shape}; pass "
                               "gradient=Tensor of that shape")
        return from_array(tensor._backend.ones_like(tensor.data), tensor._backend)
    if not isinstance(gradient, Tensor):
        gradient = make_tensor(gradient, dtype=tensor.dtype, device=tensor.device)
    if gradient.shape != tensor.shape:
        raise RuntimeError(f"{what}: gradient has shape {gradient.shape} but the output has shape "
                           f"{tensor.shape}")
    return gradient
