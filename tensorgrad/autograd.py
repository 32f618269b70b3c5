"""The autograd engine: primitives, graph nodes, grad mode, scopes and reverse-mode backward.

A primitive is a name, an array-level forward written against the backend (`xp`) and a VJP rule
written in tensorgrad ops. Calling a primitive on Tensors runs the forward and, when a gradient
is wanted, records a Node that remembers the primitive, its parents and only the tensors its
VJP reads. `backward` walks the nodes in reverse topological order without recursion.
"""
import contextlib
import functools

from .tensor import Tensor

_wrap = Tensor._wrap  # bound once: ops call it for every output

# ----------------------------------------------------------------------------------------------
# Global switches: grad mode, anomaly detection, the current scope.
# Plain module globals rather than thread-locals: they are read on every op.
# ----------------------------------------------------------------------------------------------
_grad_enabled = True
_anomaly = False
_scope = ""


def is_grad_enabled():
    return _grad_enabled


class _GradMode(contextlib.ContextDecorator):
    def __init__(self, enabled):
        self.enabled = enabled

    def _recreate_cm(self):
        # One switch per decorated call: a shared one would let recursion overwrite `previous`.
        return _GradMode(self.enabled)

    def __enter__(self):
        global _grad_enabled
        self.previous, _grad_enabled = _grad_enabled, self.enabled

    def __exit__(self, *exc):
        global _grad_enabled
        _grad_enabled = self.previous


def no_grad():
    """Context manager and decorator: ops inside record no graph (evaluation, optimizer steps)."""
    return _GradMode(False)


def enable_grad():
    """Context manager and decorator: switch recording back on inside a `no_grad` region."""
    return _GradMode(True)


class set_grad_enabled(_GradMode):
    """Switch grad mode at once when called, as in PyTorch; `with` restores it at the end."""

    def __init__(self, mode):
        global _grad_enabled
        super().__init__(bool(mode))
        self.previous, _grad_enabled = _grad_enabled, self.enabled

    def __enter__(self):
        pass  # the call already switched

    def __call__(self, fn):
        self.__exit__()  # as a decorator: undo the switch made when decorating
        return super().__call__(fn)


@contextlib.contextmanager
def scope(name):
    """Name the nodes created inside: `with scope("attn"):` inside `blocks.0` gives `blocks.0.attn`.

    A name starting with '/' replaces the current scope instead of extending it.
    """
    previous = enter_scope(name)
    try:
        yield _scope
    finally:
        set_scope(previous)


def enter_scope(name):
    """`scope` without the context manager: returns the scope to hand back to `set_scope`."""
    global _scope
    previous = _scope
    if name.startswith("/"):
        _scope = name[1:]
    else:
        _scope = f"{previous}.{name}" if previous else name
    return previous


def set_scope(scope):
    """Make `scope`, a full dotted path ("" for none), the current one and return the one it
    replaces: how modules enter their precomputed paths, and how any scope is left again."""
    global _scope
    previous, _scope = _scope, scope
    return previous


def current_scope():
    return _scope


@contextlib.contextmanager
def _anomaly_mode(enabled):
    global _anomaly
    previous, _anomaly = _anomaly, enabled
    try:
        yield
    finally:
        _anomaly = previous


def detect_anomaly():
    """Raise at the first op (forward) or VJP (backward) whose output holds NaN or Inf."""
    return _anomaly_mode(True)


def _check_finite(array, backend, what):
    if array.dtype.kind in "fc" and not bool(backend.isfinite(array).all()):
        bad = "NaN" if bool(backend.isnan(array).any()) else "Inf"
        raise FloatingPointError(f"detect_anomaly: {what} produced {bad} "
                                 f"(shape {tuple(array.shape)}, dtype {array.dtype})")


# ----------------------------------------------------------------------------------------------
# Primitives and the registry
# ----------------------------------------------------------------------------------------------
PRIMITIVES = {}


class Primitive:
    """One differentiable operation: forward on arrays, VJP on Tensors.

    saves: indices of the inputs the VJP reads ("all" for every one); saves_out: whether it
    reads the output. Everything else is dropped as soon as the forward returns, so the graph
    holds no more memory than the gradients need.

    saves_extra: the forward returns (output, extra) and `ctx.extra` hands `extra` (statistics
    such as a layer norm's mean and 1/std) to the VJP, so it need not recompute them.

    composite: the same function written in tensorgrad ops. A fused primitive whose VJP works on
    raw arrays for speed names its composite; when the backward is itself being recorded
    (create_graph=True) the engine differentiates the composite instead, so gradients of
    gradients stay exact without a second hand-written rule.
    """

    def __init__(self, name, forward, saves=(), saves_out=False, saves_extra=False,
                 composite=None, differentiable=True, view=False):
        self.name = name
        self.forward = forward
        self.saves = saves if saves == "all" else tuple(saves)
        self.saves_out = saves_out
        self.saves_extra = saves_extra
        self.composite = composite
        self.differentiable = differentiable
        self.view = view
        self.vjp = None
        functools.update_wrapper(self, forward)

    def defvjp(self, rule):
        """Register the VJP: rule(ctx, grad_output) -> gradient or tuple of gradients."""
        self.vjp = rule
        return rule

    def __call__(self, *args, **attrs):
        backend = None
        datas = []
        needs_grad = False
        for arg in args:
            if arg is None:
                datas.append(None)
                continue
            if backend is None:
                backend = arg._backend
            elif arg._backend is not backend:
                devices = ", ".join(str(a.device) for a in args if a is not None)
                raise RuntimeError(f"{self.name}: expected all tensors on one device, got {devices}"
                                   f"{_where()}")
            datas.append(arg.data)
            needs_grad = needs_grad or arg.requires_grad
        try:
            out = self.forward(backend, *datas, **attrs)
        except (ValueError, TypeError, IndexError) as exc:
            raise _library_error(self.name, exc, datas) from None
        extra = None
        if self.saves_extra:
            out, extra = out
        if not out.shape and backend.isscalar(out):  # NumPy reductions return scalars, not arrays
            out = backend.asarray(out)
        if _anomaly:
            _check_finite(out, backend, f"op '{self.name}'{_where()} in forward")
        version = args[0]._version if self.view else None
        if not (needs_grad and _grad_enabled and self.differentiable):
            return _wrap(out, backend, False, None, version)
        node = Node(self, args, attrs, out if self.saves_out else None, backend)
        node.extra = extra
        return _wrap(out, backend, True, node, version)

    def __repr__(self):
        return f"<primitive {self.name}>"


def primitive(name, **options):
    """Decorator: `@primitive("exp", saves_out=True)` over `def exp(xp, x): ...`."""
    def register(forward):
        if name in PRIMITIVES:
            raise ValueError(f"primitive {name!r} registered twice")
        prim = Primitive(name, forward, **options)
        PRIMITIVES[name] = prim
        return prim
    return register


def _library_error(name, exc, datas):
    """Re-raise an array library's complaint with the op's name and what it was given."""
    inputs = ", ".join(f"{tuple(d.shape)} {d.dtype}" for d in datas if hasattr(d, "shape"))
    message = str(exc)
    if "broadcast" in message:
        message = "the shapes cannot be broadcast together"
    return type(exc)(f"{name}: {message}; got inputs {inputs}{_where()}")


def _where():
    return f" in scope '{_scope}'" if _scope else ""


class Node:
    """A recorded application of a primitive; it is also the `ctx` a VJP rule receives."""

    # needs_grad: one bool per input, does it want a gradient (a VJP may skip the others).
    __slots__ = ("prim", "parents", "needs_grad", "saved", "versions", "attrs", "scope",
                 "in_shapes", "in_dtypes", "out_data", "backend", "extra", "__weakref__")

    def __init__(self, prim, args, attrs, out_data, backend):
        self.prim = prim
        self.backend = backend
        self.extra = None
        self.attrs = attrs
        self.scope = _scope
        self.out_data = out_data
        # One pass, no helpers: this runs once per recorded op.
        parents, needs, shapes, dtypes = [], [], [], []
        for a in args:
            if a is None:
                parents.append(None)
                needs.append(False)
                shapes.append(None)
                dtypes.append(None)
            else:
                data = a.data
                shapes.append(data.shape)
                dtypes.append(data.dtype)
                needs.append(a.requires_grad)
                parents.append((a._node or a) if a.requires_grad else None)
        self.parents, self.needs_grad = parents, needs
        self.in_shapes, self.in_dtypes = shapes, dtypes
        saves = prim.saves
        self.saved = saved = args if saves == "all" else [args[i] for i in saves]
        versions = []
        for t in saved:
            versions.append(None if t is None else t._version[0])
        self.versions = versions

    @property
    def name(self):
        return self.prim.name

    @property
    def inputs(self):
        """The saved inputs, in the order the primitive's `saves` lists them."""
        if self.saved is None:
            raise RuntimeError(_freed_message(self))
        for tensor, version in zip(self.saved, self.versions):
            if version is not None and tensor._version[0] != version:
                raise RuntimeError(
                    f"{self.prim.name}{_node_where(self)}: an input saved for backward was "
                    f"modified in place (version {version} -> {tensor._version[0]}); clone it "
                    "before modifying, or modify it outside the graph")
        return self.saved

    @property
    def out(self):
        """The output as a Tensor attached to this node, so VJPs that use it stay differentiable."""
        if self.out_data is None:
            raise RuntimeError(_freed_message(self))
        return Tensor._wrap(self.out_data, self.backend, True, self, None)

    def release(self):
        self.parents = None
        self.saved = None
        self.out_data = None
        self.extra = None

    def __repr__(self):
        return f"<Node {self.prim.name}{_node_where(self)}>"


def _node_where(node):
    return f" in scope '{node.scope}'" if node.scope else ""


def _freed_message(node):
    return (f"{node.prim.name}{_node_where(node)}: trying to backward through the graph a second "
            "time, but its saved tensors were freed after the first backward; pass "
            "retain_graph=True to the first backward if you need to do this")


# ----------------------------------------------------------------------------------------------
# Backward
# ----------------------------------------------------------------------------------------------
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
            raise RuntimeError(_freed_message(node))
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


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=None,
                 partial=False):
    """Propagate gradients from `outputs`. With `inputs`, return their gradients instead of
    accumulating into leaves' `.grad`; with `partial` too, treat the inputs as independent
    (stop at them rather than following their own history)."""
    grads = {}
    roots = []
    owned = {id(g.data) for g in grad_outputs}  # arrays a leaf's .grad may not take as its own
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
            _deliver(out, grad, captured, wanted, create_graph, owned)
            continue
        key = id(out._node)
        grads[key] = grad if key not in grads else grads[key] + grad
        roots.append(out._node)

    check = _anomaly
    # Inside a VJP the forward check is off: a NaN there is reported below, as the gradient of
    # the op being differentiated rather than as the forward of some op inside its VJP.
    with _GradMode(create_graph), _anomaly_mode(False):
        for node in _topological_order(roots, wanted if partial else ()):
            grad = grads.pop(id(node), None)
            if grad is None:
                continue
            if captured is not None and id(node) in wanted:
                for i in wanted[id(node)]:
                    captured[i] = grad
                if partial:
                    continue
            prim = node.prim
            if prim.vjp is None:
                raise RuntimeError(f"{prim.name} has no gradient rule")
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
                if g.data.shape != shape:
                    g = sum_to(g, shape)
                if g.data.dtype != dtype:
                    g = g.to(dtype)
                if check:
                    _check_finite(g.data, g._backend,
                                  f"the gradient of op '{prim.name}'{_node_where(node)}")
                if type(parent) is Node:
                    key = id(parent)
                    previous = grads.get(key)
                    if previous is None:
                        grads[key] = g
                    elif create_graph:
                        grads[key] = previous + g
                    else:  # same shape and dtype by now: add the arrays, skip the op machinery
                        grads[key] = Tensor._constant(previous.data + g.data, g._backend)
                else:
                    _deliver(parent, g, captured, wanted, create_graph, owned)
            if not retain_graph:
                node.release()
    if captured is not None:
        return [captured.get(i) for i in range(len(inputs))]
    return None


def _composite_vjp(node, grad):
    """The VJP of a fused primitive obtained by differentiating its composite (create_graph
    only): every op is recorded, so the result can be differentiated again."""
    inputs = node.inputs
    with _GradMode(True):
        out = node.prim.composite(*inputs, **node.attrs)
    wanted = [t for t, need in zip(inputs, node.needs_grad) if need]
    grads = iter(run_backward([out], [grad], True, True, wanted, partial=True))
    return tuple(next(grads) if need else None for need in node.needs_grad)


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
    # that no other leaf got is taken as it is; a view (a broadcast, say), one already handed to
    # another leaf, or the caller's own seed gradient is copied.
    data = grad.data
    if data.base is not None or id(data) in owned:
        data = data.copy()
    owned.add(id(data))
    leaf.grad = Tensor._constant(data, grad._backend)


def backward(tensor, gradient=None, retain_graph=None, create_graph=False):
    """Accumulate d(tensor)/d(leaf) into every leaf's `.grad` (see `Tensor.backward`)."""
    gradient = _default_grad(tensor, gradient, "backward")
    if retain_graph is None:
        retain_graph = create_graph
    run_backward([tensor], [gradient], retain_graph, create_graph)


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
        return Tensor._constant(tensor._backend.ones_like(tensor.data), tensor._backend)
    if not isinstance(gradient, Tensor):
        from .creation import tensor as make_tensor
        gradient = make_tensor(gradient, dtype=tensor.dtype, device=tensor.device)
    if gradient.shape != tensor.shape:
        raise RuntimeError(f"{what}: gradient has shape {gradient.shape} but the output has shape "
                           f"{tensor.shape}")
    return gradient
