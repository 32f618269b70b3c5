"""dtype and device moves and copies: cast, to_device, clone."""
from ..autograd import primitive


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


def clone(x):
    return _clone(x)

