"""`torch.autograd.Function`: a user-defined operation with its own forward and backward.

`MyOp.apply(*args)` runs `forward(ctx, *args)` under no_grad and records, for each output that
needs a gradient, a node whose VJP calls `backward(ctx, *grad_outputs)`. The nodes are made by
one unregistered Primitive per Function class (the PRIMITIVES registry lists tensorgrad's own
operations only), so the engine, hooks, anomaly mode and create_graph treat them like any op.
A backward written in tensorgrad ops differentiates again (double backward).

An output's node passes its own gradient and zeros (None after `set_materialize_grads(False)`)
for the others, so a Function with several outputs runs backward once per output that receives
a gradient, and the engine sums the results: the same gradients, as backward is linear in its
grad_outputs.
"""
from ..tensor import Tensor
from .graph import Primitive, freed_message, modified_message
from .grad_mode import is_grad_enabled, no_grad


class FunctionCtx:
    """The `ctx` that forward fills and backward reads."""

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self.materialize_grads = True
        self.non_differentiable = set()
        self._saved = ()
        self._versions = ()
        self._node = None  # the first output's node: its release tells that the graph was freed

    def save_for_backward(self, *tensors):
        """Keep tensors (inputs, outputs or None) for backward; an in-place change to one after
        this is an error at backward, as in PyTorch."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward: expected Tensors or None, got "
                                f"{type(t).__name__}")
        self._saved = tensors
        self._versions = tuple(None if t is None else t._version[0] for t in tensors)

    @property
    def saved_tensors(self):
        node = self._node
        if node is not None and node.parents is None:
            raise RuntimeError(freed_message(node))
        for t, version in zip(self._saved, self._versions):
            if t is not None and t._version[0] != version:
                raise RuntimeError(modified_message(node, "a tensor", version, t._version[0]))
        return self._saved

    def mark_non_differentiable(self, *outputs):
        """These outputs get no gradient (integer indices, masks); backward receives zeros
        for them."""
        self.non_differentiable.update(id(t) for t in outputs)

    def set_materialize_grads(self, value):
        """False: backward receives None, not zeros, for outputs that got no gradient."""
        self.materialize_grads = bool(value)


class Function:
    """Subclass with static `forward(ctx, *args)` and `backward(ctx, *grad_outputs)` (or
    `forward(*args)` plus `setup_context(ctx, inputs, output)`), then call `apply`. backward
    returns one gradient (or None) per argument of forward."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass must define forward")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function subclass must define backward to be "
                                  "differentiated")

    @classmethod
    def apply(cls, *args):
        recording = is_grad_enabled()
        needs = tuple(recording and isinstance(a, Tensor) and a.requires_grad for a in args)
        ctx = FunctionCtx(needs)
        separate = hasattr(cls, "setup_context")  # forward(*args), then setup_context
        with no_grad():
            result = cls.forward(*args) if separate else cls.forward(ctx, *args)
        if separate:
            cls.setup_context(ctx, args, result)
        single = not isinstance(result, tuple)
        outputs = (result,) if single else result
        for out in outputs:
            if out is not None and not isinstance(out, Tensor):
                raise TypeError(f"{cls.__name__}.forward must return Tensors (or a tuple of "
                                f"them), got {type(out).__name__}")
        inputs = [a for a in args if isinstance(a, Tensor)]
        if not any(needs):
            return result
        prim = _primitive_of(cls)
        made = []
        for i, out in enumerate(outputs):
            if out is None or id(out) in ctx.non_differentiable or out.dtype.kind not in "fc":
                made.append(out if out is None else out.detach())
                continue
            made.append(prim(*inputs, ctx=ctx, function=cls, index=i, outputs=outputs,
                             positions=tuple(j for j, a in enumerate(args)
                                             if isinstance(a, Tensor))))
            if ctx._node is None:
                ctx._node = made[-1]._node
        # a saved output is the recorded one (its gradient history, its version counter)
        swap = {id(out): new for out, new in zip(outputs, made) if out is not None}
        ctx._saved = tuple(swap.get(id(t), t) if t is not None else None for t in ctx._saved)
        ctx._versions = tuple(None if t is None else t._version[0] for t in ctx._saved)
        return made[0] if single else tuple(made)


def _primitive_of(cls):
    prim = cls.__dict__.get("_primitive")
    if prim is None:
        prim = Primitive(cls.__name__, _pass_through)
        prim.defvjp(_function_vjp)
        cls._primitive = prim
    return prim


def _pass_through(xp, *arrays, ctx, function, index, outputs, positions):
    """The forward already ran: the node only records the output."""
    return outputs[index].data


def _function_vjp(node, grad):
    attrs = node.attrs
    ctx, function, index = attrs["ctx"], attrs["function"], attrs["index"]
    outputs, positions = attrs["outputs"], attrs["positions"]
    grads = []
    for i, out in enumerate(outputs):
        if i == index:
            grads.append(grad)
        elif out is None or not ctx.materialize_grads:
            grads.append(None)
        else:
            grads.append(out.detach() * 0)  # zeros of the output's shape, dtype and device
    result = function.backward(ctx, *grads)
    result = result if isinstance(result, tuple) else (result,)
    expected = len(ctx.needs_input_grad)
    if len(result) < expected or any(g is not None for g in result[expected:]):
        raise RuntimeError(f"{function.__name__}.backward returned an incorrect number of "
                           f"gradients (expected {expected}, got {len(result)})")
    return tuple(result[j] for j in positions)
