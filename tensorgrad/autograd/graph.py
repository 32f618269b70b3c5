"""Primitives, their registry, and the Node each recorded call leaves in the graph.

Calling a primitive on Tensors runs its array-level forward and, when a gradient is wanted,
records a Node that remembers the primitive, its parents and only the tensors its VJP reads.
"""
import functools

from ..errors import OpError
from ..tensor import Tensor, from_array
from .grad_mode import anomaly_threads, autocast_threads, check_finite, this_thread, where

PRIMITIVES = {}


class Primitive:
    """One differentiable operation: forward on arrays, VJP on Tensors.

    saves: indices of the inputs the VJP reads ("all" for every one); saves_out: whether it
    reads the output. Everything else is dropped as soon as the forward returns, so the graph
    holds no more memory than the gradients need.

    saves_when: {saved input index: the inputs whose gradients read it}; that input is saved
    only when one of them wants a gradient, and saves_out may be such a tuple too. PyTorch's
    rule, so that an in-place write raises where its does: `x * 2` does not save x (only the
    gradient of the 2 would read it), `x ** 3` does not save its output.

    saves_extra: the forward returns (output, extra) and `ctx.extra` hands `extra` (statistics
    such as a layer norm's mean and 1/std) to the VJP, so it need not recompute them.

    composite: the same function written in tensorgrad ops. A fused primitive whose VJP works on
    raw arrays for speed names its composite; when the backward is itself being recorded
    (create_graph=True) the engine differentiates the composite instead, so gradients of
    gradients stay exact without a second hand-written rule.
    """

    def __init__(self, name, forward, saves=(), saves_out=False, saves_extra=False,
                 composite=None, differentiable=True, view=False, saves_when=None):
        self.name = name
        self.forward = forward
        self.saves = saves if saves == "all" else tuple(saves)
        # saves naming the first k inputs: one tuple slice, not a loop (op_overhead fwd); else None
        self._saved_slice = (slice(None) if saves == "all" else slice(len(self.saves))
                             if self.saves == tuple(range(len(self.saves))) else None)
        self.saves_out = saves_out
        self.saves_when = saves_when
        # saves_when as (position in the saved tuple, the inputs that read it): the node's loop
        self._dropped_unless = None if saves_when is None else tuple(
            (k, tuple(saves_when[i])) for k, i in enumerate(self.saves) if i in saves_when)
        self.saves_extra = saves_extra
        self.composite = composite
        self.differentiable = differentiable
        self.view = view
        self.vjp = None
        self.accumulate = None
        # update_wrapper's attributes, no instance __dict__: it slows every read (op_overhead fwd)
        for attr in functools.WRAPPER_ASSIGNMENTS:
            if hasattr(forward, attr):
                setattr(self, attr, getattr(forward, attr))
        self.__wrapped__ = forward

    def defvjp(self, rule):
        """Register the VJP: rule(ctx, grad_output) -> gradient or tuple of gradients."""
        self.vjp = rule
        return rule

    def defaccumulate(self, rule):
        """Register a shortcut for a primitive whose gradient is mostly zeros (a slice's): rule(
        ctx, grad_output, into) adds the gradient for input 0 into the array `into` in place,
        where the VJP would return a whole array. The engine uses it, outside create_graph,
        to sum several slices' gradients into one buffer (benchmarks/: gpt_step, whose q, k
        and v are slices of one projection)."""
        self.accumulate = rule
        return rule

    def __call__(self, *args, **attrs):
        # One pass over the arguments, no helper calls: this runs for every op (op_overhead fwd).
        backend = None
        datas = []
        needs_grad = False
        if autocast_threads[0] and this_thread.switches.autocast is not None:
            args = this_thread.switches.autocast(self.name, args)
        for arg in args:
            if arg is None:
                datas.append(None)
                continue
            if backend is None:
                backend = arg._backend
            elif arg._backend is not backend:
                devices = ", ".join(str(a.device) for a in args if a is not None)
                raise RuntimeError(f"{self.name}: expected all tensors on one device, got {devices}"
                                   f"{where()}")
            datas.append(arg.data)
            if arg.requires_grad:
                needs_grad = True
        try:
            out = self.forward(backend, *datas, **attrs)
        except (ValueError, TypeError, IndexError) as exc:
            raise _library_error(self.name, exc, datas) from None
        extra = None
        if self.saves_extra:
            out, extra = out
        # NumPy reductions return scalars, not arrays (ndim: no shape tuple made, op_overhead fwd)
        if not out.ndim and backend.isscalar(out):
            out = backend.asarray(out)
        if anomaly_threads[0] and this_thread.switches.anomaly:
            check_finite(out, backend, f"op '{self.name}'{where()} in forward")
        version = args[0]._version if self.view else None
        if not (needs_grad and self.differentiable):
            return from_array(out, backend, False, None, version)
        mode = this_thread.switches  # this thread's, looked up once per op (op_overhead fwd)
        if not mode.grad_enabled:
            return from_array(out, backend, False, None, version)
        saves_out = self.saves_out
        if saves_out is not True and saves_out:
            saves_out = any(args[i] is not None and args[i].requires_grad for i in saves_out)
        if saves_out:
            # The node keeps the output's version counter, to check it at backward like inputs'.
            if version is None:
                version = [0]
            node = Node(self, args, attrs, backend, mode.scope, extra, out, version)
        else:
            node = Node(self, args, attrs, backend, mode.scope, extra, None, None)
        return from_array(out, backend, True, node, version)

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


def untracked_view(base, array):
    """`array`, a view of `base`'s array taken by array code (a slice, a reshape), as the Tensor
    a view op gives when it records nothing: no node, and base's version counter, so that an
    in-place write to either counts as a change of both. Only for a base that requires no grad:
    one that does needs the view op, which records the view. For hot paths that take several
    views of one tensor (nn.Attention's q, k, v and its KV cache's views when decoding, a
    primitive call each otherwise: generate)."""
    if base.requires_grad:
        raise RuntimeError("untracked_view: the base tensor requires grad; take the view with "
                           "tensor ops (slicing, reshape), which record it for backward")
    return from_array(array, base._backend, False, None, base._version)


def guard(out, *constants):
    """`out`, whose backward raises if one of `constants` (an index, a mask, a target: tensors
    the op read as arrays, which a VJP reads again) is written in place after the op, as
    PyTorch's saved copy of them does. Without it such a write changes the gradient silently."""
    node = out._node
    if node is not None:
        node.guards = [(t, t._version[0]) for t in constants if isinstance(t, Tensor)]
    return out


def _library_error(name, exc, datas):
    """Re-raise an array library's complaint with the op's name and what it was given."""
    inputs = ", ".join(f"{tuple(d.shape)} {d.dtype}" for d in datas if hasattr(d, "shape"))
    message = str(exc)
    if "broadcast" in message:
        message = "the shapes cannot be broadcast together"
    kind = OpError if type(exc) is ValueError else type(exc)  # PyTorch raises RuntimeError there
    return kind(f"{name}: {message}; got inputs {inputs}{where()}")


class Node:
    """A recorded application of a primitive; it is also the `ctx` a VJP rule receives."""

    # needs_grad: one bool per input, does it want a gradient (a VJP may skip the others).
    # versions: the saved inputs' versions when saved; out_version: the output's version counter
    # (shared with the output tensor, its views and detached aliases) when the output is saved,
    # else None; out_saved_version: its value then, set only when the output is saved.
    # __slots__: one Node per recorded op, so no per-instance dict (op_overhead fwd).
    __slots__ = ("prim", "parents", "needs_grad", "saved", "versions", "attrs", "scope",
                 "in_shapes", "in_dtypes", "out_data", "out_version", "out_saved_version",
                 "backend", "extra", "guards", "__weakref__")

    def __init__(self, prim, args, attrs, backend, scope, extra, out_data, out_version):
        self.prim = prim
        self.backend = backend
        self.extra = extra
        self.guards = None
        self.attrs = attrs
        self.scope = scope
        self.out_data = out_data
        self.out_version = out_version
        if out_version is not None:
            self.out_saved_version = out_version[0]
        # One pass, no helper calls: this runs once per recorded op (op_overhead fwd+bwd).
        parents, needs, shapes, dtypes = [], [], [], []
        for a in args:
            if a is None:
                parents.append(None)
                needs.append(False)
                shapes.append(None)
                dtypes.append(None)
                continue
            data = a.data
            shapes.append(data.shape)
            dtypes.append(data.dtype)
            if a.requires_grad:
                parents.append(a._node or a)
                needs.append(True)
            else:
                parents.append(None)
                needs.append(False)
        # tuples of untracked values, the lists freed: the cyclic GC stops walking them, and a
        # recorded graph then starts far fewer collections (op_overhead, result alive too)
        self.parents, self.needs_grad = parents, tuple(needs)
        self.in_shapes, self.in_dtypes = tuple(shapes), tuple(dtypes)
        sliced = prim._saved_slice
        saved = args[sliced] if sliced is not None else [args[i] for i in prim.saves]
        dropped_unless = prim._dropped_unless
        if dropped_unless is not None:  # loops, no generators: once per recorded mul or matmul
            saved = list(saved)
            for k, readers in dropped_unless:
                for j in readers:
                    if needs[j]:
                        break
                else:  # no gradient that reads it is wanted
                    saved[k] = None
        self.saved = saved
        versions = []
        for t in saved:  # a loop, not a comprehension: no function object made (op_overhead fwd)
            versions.append(None if t is None else t._version[0])
        self.versions = tuple(versions)

    @property
    def name(self):
        return self.prim.name

    @property
    def inputs(self):
        """The saved inputs, in the order the primitive's `saves` lists them."""
        if self.saved is None:
            raise RuntimeError(freed_message(self))
        for tensor, version in zip(self.saved, self.versions):
            if version is not None and tensor._version[0] != version:
                raise RuntimeError(modified_message(self, "an input", version, tensor._version[0]))
        return self.saved

    @property
    def out(self):
        """The output as a Tensor attached to this node, so VJPs that use it stay differentiable.

        It shares the output's version counter, so a graph recorded from it (create_graph)
        checks the output again."""
        if self.out_data is None:
            raise RuntimeError(freed_message(self))
        self.check_out()
        return from_array(self.out_data, self.backend, True, self, self.out_version)

    def check_out(self):
        """Raise if the saved output was modified in place since the forward (the engine calls
        this before every VJP, which may read `out_data` directly)."""
        counter = self.out_version
        if counter is not None and counter[0] != self.out_saved_version:
            raise RuntimeError(modified_message(self, "the output", self.out_saved_version,
                                                counter[0]))

    def check_guards(self):
        """Raise if an index, mask or target that `guard` named was written in place since."""
        for tensor, version in self.guards:
            if tensor._version[0] != version:
                raise RuntimeError(modified_message(self, "an index, mask or target it read",
                                                    version, tensor._version[0]))

    def release(self):
        self.guards = None
        self.parents = None
        self.saved = None
        self.out_data = None
        self.extra = None

    def __repr__(self):
        return f"<Node {self.prim.name}{node_where(self)}>"


def node_where(node):
    """' in scope ...' for a message about a recorded node ('' when it was made outside any)."""
    return f" in scope '{node.scope}'" if node.scope else ""


def modified_message(node, which, saved, now):
    return (f"{node.prim.name}{node_where(node)}: {which} saved for backward was modified in place "
            f"(version {saved} -> {now}); clone it before modifying, or modify it outside the "
            "graph")


def freed_message(node):
    return (f"{node.prim.name}{node_where(node)}: trying to backward through the graph a second "
            "time, but its saved tensors were freed after the first backward; pass "
            "retain_graph=True to the first backward if you need to do this")
