"""Random sampling from the backend's seeded generator (`tensorgrad.manual_seed`): multinomial,
bernoulli, normal, and the in-place fills bernoulli_, exponential_ and random_.

As in PyTorch, a sample drawn from parameters that require grad requires grad too, with a zero
gradient: sampling is not reparameterised (write mean + std * randn for that).
"""
from .. import backend as _backends
from ..tensor import Tensor, from_array, tensor_method
from .select import where


def _zero_gradient(sample, *params):
    """`sample`, attached to the tensor params that require grad with a zero gradient."""
    for p in params:
        if isinstance(p, Tensor) and p.requires_grad:
            never = from_array(p._backend.zeros(sample.shape, dtype=bool), p._backend)
            sample = where(never, p.to(sample.dtype), sample)
    return sample


@tensor_method
def multinomial(input, num_samples, replacement=False):
    """Category indices drawn from the non-negative weights in each row of `input` ((n,) or
    (rows, n); weights need not sum to 1): (num_samples,) or (rows, num_samples) int64. Without
    replacement each row's draws are distinct, so num_samples may not exceed its non-zero
    weights."""
    if input.ndim not in (1, 2) or input.dtype.kind != "f":
        raise RuntimeError(f"multinomial: expects a 1-D or 2-D floating point tensor of weights, "
                           f"got shape {input.shape} {input.dtype}")
    xp = input._backend
    weights = input.data.reshape(-1, input.shape[-1]).astype("float64")
    rows, n = weights.shape
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: num_samples must be positive, got {num_samples}")
    if not bool(xp.isfinite(weights).all()) or bool((weights < 0).any()):
        raise RuntimeError("multinomial: weights must be finite and non-negative")
    positive = (weights > 0).sum(axis=1)
    if bool((positive == 0).any()):
        raise RuntimeError("multinomial: every row needs at least one positive weight")
    if not replacement and num_samples > int(positive.min()):
        raise RuntimeError(f"multinomial: cannot draw {num_samples} samples without replacement "
                           f"from a row with {int(positive.min())} non-zero weights")
    if replacement:
        # Inverse CDF: count the categories whose cumulative weight lies at or below u * total.
        cdf = xp.cumsum(weights, axis=1)
        u = xp.random_uniform((rows, num_samples), _backends.float64) * cdf[:, -1:]
        picks = (cdf[:, None, :] <= u[:, :, None]).sum(axis=2)
        last = n - 1 - xp.argmax(weights[:, ::-1] > 0, axis=1)  # rounding must not pass it
        picks = xp.minimum(picks, last[:, None])
    else:
        # Exponential race: each category's arrival time is Exp(1) / weight; the first
        # num_samples arrivals are an ordered draw without replacement.
        u = xp.random_uniform((rows, n), _backends.float64)
        some = weights > 0
        times = xp.where(some, -xp.log1p(-u) / xp.where(some, weights, 1.0), xp.inf)
        picks = xp.argsort(times, axis=1, kind="stable")[:, :num_samples]
    picks = picks.astype("int64")
    return from_array(picks.reshape(num_samples) if input.ndim == 1 else picks, xp)


def _check_probabilities(p, op):
    data = p.data
    if data.size and (bool((data < 0).any()) or bool((data > 1).any())):
        raise RuntimeError(f"{op}: probabilities must lie in [0, 1], got values in "
                           f"[{float(data.min())}, {float(data.max())}]")


@tensor_method
def bernoulli(input, p=None):
    """1 with probability `input` (or the number `p` for every element), else 0, in input's
    dtype."""
    xp = input._backend
    if p is not None:
        prob = xp.full(input.shape, p, dtype="float64")
    else:
        _check_probabilities(input, "bernoulli")
        prob = input.data
    draw = xp.random_uniform(input.shape, _backends.float64) < prob
    dtype = input.dtype if input.dtype.kind in "fc" else _backends.get_default_dtype()
    return _zero_gradient(from_array(draw.astype(dtype), xp), input if p is None else None)


def normal(mean, std=1.0, size=None, dtype=None, device=None):
    """Normal samples: mean and std are tensors (broadcast together) or numbers; with numbers
    only, `size` gives the shape."""
    tensors = [a for a in (mean, std) if isinstance(a, Tensor)]
    if tensors:
        backend = tensors[0]._backend
        dtype = tensors[0].dtype if dtype is None else _backends.as_dtype(dtype)
        shape = backend.broadcast_shapes(*(t.shape for t in tensors))
        m, s = (a.data if isinstance(a, Tensor) else a for a in (mean, std))
    else:
        if size is None:
            raise TypeError("normal: with a number mean and std, size must be given")
        backend = _backends.get_backend(device)
        dtype = _backends.as_dtype(dtype) or _backends.get_default_dtype()
        shape, m, s = tuple(size), mean, std
    if dtype.kind != "f":
        raise TypeError(f"normal: samples are floating point, got dtype {dtype}")
    if bool((backend.asarray(s) < 0).any()):
        raise RuntimeError("normal: std must be non-negative")
    sample = backend.random_normal(shape, dtype) * s + m
    return _zero_gradient(from_array(sample.astype(dtype, copy=False), backend), *tensors)


# --- in-place fills ------------------------------------------------------------------------------
def _fill(x, name, sample):
    x._inplace(name)
    x.data[...] = sample
    return x


def bernoulli_(x, p=0.5):
    """Fill with 1 with probability p (a number or a tensor broadcast to x), else 0."""
    prob = p.data if isinstance(p, Tensor) else p
    return _fill(x, "bernoulli_", x._backend.random_uniform(x.shape, _backends.float64) < prob)


def exponential_(x, lambd=1.0):
    """Fill with Exponential(rate lambd) samples."""
    if lambd <= 0:
        raise RuntimeError(f"exponential_: lambd must be positive, got {lambd}")
    u = x._backend.random_uniform(x.shape, _backends.float64)
    return _fill(x, "exponential_", -x._backend.log1p(-u) / lambd)


def random_(x, from_=0, to=None):
    """Fill with integers uniform in [from_, to); random_(to) means [0, to). Without bounds:
    [0, 2**mantissa] for floats (every integer exactly representable), [0, max] for ints."""
    if to is None and from_ != 0:
        from_, to = 0, from_
    if to is None:
        dtype = x.dtype
        to = 2 ** x._backend.finfo(dtype).nmant + 1 if dtype.kind == "f" else \
            (2 if dtype.kind == "b" else int(x._backend.iinfo(dtype).max) + 1)
    if to <= from_:
        raise RuntimeError(f"random_: expects from < to, got [{from_}, {to})")
    return _fill(x, "random_", x._backend.random_integers(from_, to, x.shape, "int64"))


for _fill_method in (bernoulli_, exponential_, random_):
    tensor_method(_fill_method)
