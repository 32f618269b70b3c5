"""Activation checkpointing, as torch.utils.checkpoint: trade compute for memory.

    y = checkpoint(block, x, use_reentrant=False)   # block's activations are not kept
    y.sum().backward()                              # block runs again here, then backward

`checkpoint(function, *args, **kwargs)` runs `function` and keeps only what it was given: its
inner activations are freed as it returns, and the backward pass runs it again (with the random
state it had, so dropout draws the same masks) to differentiate it. The result is one graph
node per output; gradients reach the tensor arguments and every tensor the function reads that
requires grad (its parameters). These are use_reentrant=False's semantics: the arguments need
not require grad, and `tensorgrad.grad` works through it. use_reentrant=True gets the same
computation: it differs from False in PyTorch only where the reentrant variant fails.
"""
import copy

from .. import backend as _backends
from ..autograd import enable_grad, grad, is_grad_enabled, primitive
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]


def _rng_states():
    """A copy of every device's global random stream, to replay it."""
    states = {}
    for device, backend in _backends._backends.items():
        try:
            states[device] = copy.deepcopy(backend.rng)
        except TypeError as exc:  # a generator that cannot be copied
            raise RuntimeError(f"checkpoint: cannot copy the random stream of {device} ({exc}) "
                               "to replay it; pass preserve_rng_state=False") from None
    return states


class _Recomputation:
    """What a checkpointed call needs to run again at backward: the function, its arguments
    (tensors stand in as their positions) and the random streams it started from."""

    def __init__(self, function, args, kwargs, copies, rng_states):
        self.function, self.args, self.kwargs = function, args, kwargs
        self.copies = copies  # the tensor arguments, detached: the recomputed graph starts here
        self.rng_states = rng_states
        self.shapes = None  # the first run's output shapes, when checked
        self.targets = None  # what gradients are for: the copies requiring grad, then leaves
        self.first_outputs = None  # the first run's arrays, while its nodes are made
        self.outputs = None  # the run at backward's outputs, until every node has used them
        self.nodes = 0  # the outputs that are graph nodes
        self.waiting = 0  # of those, the ones whose backward has not used `outputs` yet

    def run(self, tensors):
        """function(*args, **kwargs) with `tensors` in place of the tensor arguments."""
        args, kwargs = _place(self.args, self.kwargs, tensors)
        return self.function(*args, **kwargs)

    def replay(self, tensors):
        """function run again on `tensors`, recorded, with the random streams of the first run;
        its outputs must have the first run's shapes."""
        streams = {}
        for device, state in self.rng_states.items():
            backend = _backends.get_backend(device)
            streams[device], backend.rng = backend.rng, copy.deepcopy(state)
        try:
            with enable_grad():
                outputs = _as_tuple(self.run(tensors))
        finally:
            for device, stream in streams.items():
                _backends.get_backend(device).rng = stream
        shapes = _shapes(outputs)
        if self.shapes is not None and shapes != self.shapes:
            raise RuntimeError(f"checkpoint: the function gave outputs of shapes {shapes} when "
                               f"run again at backward, but {self.shapes} at first; it must "
                               "compute the same thing both times")
        return outputs

    def recompute(self):
        """The replayed outputs, one run for all the nodes of one backward pass."""
        if self.outputs is None:
            self.waiting = self.nodes
            self.outputs = self.replay(self.copies)
        self.waiting -= 1
        outputs = self.outputs
        if self.waiting == 0:
            self.outputs = None  # the replayed graph goes when this backward is done
        return outputs


@primitive("checkpoint", saves="all")
def _checkpointed(xp, *inputs, record, index):
    return record.first_outputs[index]


@_checkpointed.defvjp
def _checkpointed_vjp(ctx, g):
    record, index = ctx.attrs["record"], ctx.attrs["index"]
    inputs = ctx.inputs  # raises if an argument or leaf it read was changed in place since
    if is_grad_enabled():  # create_graph: the gradient must be a function of the inputs
        n = sum(c.requires_grad for c in record.copies)
        arguments = iter(inputs[:n])  # a view of each: the replay's own start, in the graph
        copies = [next(arguments).view_as(c) if c.requires_grad else c for c in record.copies]
        outputs = record.replay(copies)
        targets = [c for c in copies if c.requires_grad] + list(inputs[n:])
    else:
        outputs, targets = record.recompute(), record.targets
    # retain_graph: a tensor with a history that the function read from outside leads this
    # walk into the outer graph, which the outer backward still has to walk
    return grad([outputs[index]], targets, [g], retain_graph=True,
                create_graph=is_grad_enabled(), allow_unused=True)


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True,
               determinism_check="default", **kwargs):
    """function(*args, **kwargs), keeping only its arguments for the backward pass.

    preserve_rng_state: replay the random streams at recomputation (dropout masks repeat).
    determinism_check: "default" checks the recomputed outputs have the first run's shapes;
    "none" skips that. Outputs that are not tensors requiring grad are returned as they are.
    """
    if determinism_check not in ("default", "none"):
        raise ValueError(f"checkpoint: determinism_check must be 'default' or 'none', got "
                         f"{determinism_check!r}")
    if use_reentrant not in (None, True, False):
        raise ValueError(f"checkpoint: use_reentrant must be a bool, got {use_reentrant!r}")
    if not is_grad_enabled():  # nothing would be kept anyway
        return function(*args, **kwargs)
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
    copies = [t.detach().requires_grad_(t.requires_grad) for t in tensors]
    rng_states = _rng_states() if preserve_rng_state else {}
    record = _Recomputation(function, args, kwargs, copies, rng_states)
    result = record.run(copies)
    outputs = _as_tuple(result)
    if determinism_check == "default":
        record.shapes = _shapes(outputs)
    leaves = _leaves([o for o in outputs if isinstance(o, Tensor) and o.requires_grad], copies)
    record.targets = [c for c in copies if c.requires_grad] + leaves
    if not record.targets:  # nothing to differentiate: no graph to save memory on
        return result
    inputs = [t for t in tensors if t.requires_grad] + leaves  # the node's parents
    record.first_outputs = [o.data if isinstance(o, Tensor) else None for o in outputs]
    wrapped = []
    for i, out in enumerate(outputs):
        if isinstance(out, Tensor) and out.requires_grad:
            record.nodes += 1
            wrapped.append(_checkpointed(*inputs, record=record, index=i))
        else:
            wrapped.append(out)
    record.first_outputs = None  # the nodes' outputs hold the arrays now
    return tuple(wrapped) if isinstance(result, tuple) else wrapped[0]


def _leaves(outputs, copies):
    """The tensors requiring grad that `outputs` were computed from, other than `copies`: the
    function's parameters, and any tensor with a history it read from outside."""
    own = {id(c) for c in copies}
    found, seen = {}, set()
    stack = [o._node if o._node is not None else o for o in outputs]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Tensor):  # a leaf
            if id(item) not in own:
                found[id(item)] = item
            continue
        stack.extend(p for p in item.parents if p is not None)
    return list(found.values())


def _shapes(outputs):
    return [tuple(o.shape) if isinstance(o, Tensor) else None for o in outputs]


def _as_tuple(result):
    return result if isinstance(result, tuple) else (result,)


def _place(args, kwargs, tensors):
    """args and kwargs with their tensors replaced, in order, by `tensors`."""
    supply = iter(tensors)
    args = tuple(next(supply) if isinstance(a, Tensor) else a for a in args)
    kwargs = {k: next(supply) if isinstance(v, Tensor) else v for k, v in kwargs.items()}
    return args, kwargs


def checkpoint_sequential(functions, segments, input, use_reentrant=None,
                          preserve_rng_state=True):
    """Run `functions` (an nn.Sequential or a list of modules) on `input` in `segments` runs of
    consecutive modules, checkpointing every run but the last (as torch's)."""
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be at least 1, got {segments}")

    def run(start, end):
        def forward(x):
            for f in functions[start:end]:
                x = f(x)
            return x
        return forward

    size = len(functions) // segments
    end = 0
    for start in range(0, size * (segments - 1), size):
        end = start + size
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve_rng_state)
    return run(end, len(functions))(input)
