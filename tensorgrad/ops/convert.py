"""dtype and device moves and copies: cast, to_device, clone, and the Tensor methods made of
them (`to`, `clone`, `as_subclass`)."""
from .. import backend as _backends
from ..autograd import PRIMITIVES, is_grad_enabled, primitive
from ..tensor import Tensor, from_array, tensor_method


@primitive("cast")
def _cast(xp, x, dtype):
    return x.astype(dtype)


@_cast.defvjp
def _cast_vjp(ctx, g):
    return g  # the engine casts every gradient back to its input's dtype


def cast(x, dtype):
    if dtype.kind not in "fc" and x.requires_grad:
        return _cast(x.detach(), dtype=dtype)
    return _cast(x, dtype=dtype)


@primitive("to_device")
def _to_device(xp, x, target, source):
    return target.from_host(source.to_host(x))


@_to_device.defvjp
def _to_device_vjp(ctx, g):
    return to_device(g, ctx.attrs["source"])


def to_device(x, target):
    out = _to_device(x, target=target, source=x._backend)
    out._backend = target
    return out


@primitive("clone")
def _clone(xp, x):
    return x.copy()


@_clone.defvjp
def _clone_vjp(ctx, g):
    return g


@tensor_method
def clone(x):
    return _clone(x)


@tensor_method
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
        out = to_device(out, _backends.get_backend(device))
    dtype = _backends.as_dtype(dtype)
    if dtype is not None and dtype != out.dtype:
        out = cast(out, dtype)
    return clone(out) if copy and out is self else out


@tensor_method
def as_subclass(self, cls):
    """This tensor as an instance of `cls`, a subclass of Tensor (how Parameter is made):
    the same memory and version counter and the same place in the graph (a tensor that
    requires grad is reached through an alias node, as in PyTorch)."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass: expected a subclass of tensorgrad.Tensor, got {cls!r}")
    source = self
    if self.requires_grad and is_grad_enabled():
        source = PRIMITIVES["reshape"](self, shape=self.shape)  # the alias node
    return from_array(source.data, source._backend, source.requires_grad, source._node,
                      source._version, cls)

