"""autocast: inside it, each op on the chosen device's float tensors runs in the precision
PyTorch's autocast gives it.

Matmuls, convolution and attention run in the lower precision (float16 on cuda by default,
bfloat16 on cpu), where tensor cores and halved memory traffic pay; ops whose range or
accumulation suffers in 16 bits (softmax, norms, losses, exp, log, pow, sums) run in float32.
Every other op runs in the dtype of its inputs, the wider one when they differ.

The casts are ordinary `cast` ops recorded in the graph, so each gradient comes back in its
parameter's own dtype, and the parameters stay float32. float64 tensors are never cast, as in
PyTorch. These are PyTorch's cuda lists; on the cpu PyTorch keeps softmax, norms, exp, log,
pow and sums in the lower precision, and tensorgrad applies the cuda lists on both (a
deliberate difference: one set of rules, with float32 where 16 bits lose accuracy).
The backward pass runs without autocast (it is switched off during backward) so that
each VJP runs in its forward's dtypes.
"""
import functools
import threading
import warnings

from .. import backend as _backends
from ..autograd.grad_mode import autocast_threads, this_thread

# Primitive names (tensorgrad.autograd.PRIMITIVES): PyTorch's autocast lists, as our primitives
# spell them. Composites follow from their parts (mse_loss's pow and sum run in float32).
LOWER_PRECISION_OPS = frozenset({
    "matmul", "linear", "conv", "einsum", "scaled_dot_product_attention",
})
FLOAT32_OPS = frozenset({
    "softmax", "log_softmax", "layer_norm", "rms_norm", "cross_entropy", "exp", "expm1", "log",
    "log10", "log2", "log1p", "pow", "sum", "cumsum", "cumprod", "acos", "asin", "cosh", "sinh",
    "tan", "erfinv",
})
_lock = threading.Lock()


def _supported():
    """The lower-precision dtypes autocast offers (on either device type)."""
    halves = [_backends.float16]
    bfloat16 = getattr(_backends, "bfloat16", None)
    if bfloat16 is not None:
        halves.append(bfloat16)
    return halves


def _default_dtype(device_type):
    if device_type == "cuda":
        return _backends.float16
    return getattr(_backends, "bfloat16", None)


class _Policy:
    """This thread's autocast settings: {device type: dtype}, and the casts of leaf tensors
    (weights) made so far in the outermost region, so a weight used twice is cast once."""

    def __init__(self, dtypes, cache):
        self.dtypes, self.cache = dtypes, cache

    def __call__(self, name, args):
        if name in LOWER_PRECISION_OPS:
            lower = True
        elif name in FLOAT32_OPS:
            lower = False
        else:
            return args
        return tuple(self._cast(a, lower) for a in args)

    def covers(self, tensor):
        """Whether this region autocasts ops on `tensor`'s device."""
        return tensor._backend.device.partition(":")[0] in self.dtypes

    def _cast(self, a, lower):
        if a is None:
            return a
        dtype = a.data.dtype
        if dtype.kind != "f" or dtype.itemsize > 4:  # ints, bools and float64 stay as they are
            return a
        target = self.dtypes.get(a._backend.device.partition(":")[0])
        if target is None:
            return a
        if not lower:
            target = _backends.float32
        if dtype == target:
            return a
        if self.cache is None or not (a.requires_grad and a._node is None):
            return a.to(target)
        key = (id(a), target)
        hit = self.cache.get(key)
        if hit is None or hit[0] is not a or hit[1] != a._version[0]:
            hit = self.cache[key] = (a, a._version[0], a.to(target))
        return hit[2]


class autocast:
    """Context manager and decorator, as torch.autocast(device_type, dtype=None, enabled=True,
    cache_enabled=None).

    device_type: 'cuda' or 'cpu'. dtype: the lower precision; None takes float16 on cuda and
    bfloat16 on cpu. A dtype the device does not offer warns and disables autocast, as PyTorch
    does. enabled=False switches autocast off inside an enclosing region. cache_enabled (None
    means True): cast each weight once per outermost region.
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if device_type not in ("cuda", "cpu"):
            raise RuntimeError(f"autocast: unsupported device_type {device_type!r}; expected "
                               "'cuda' or 'cpu'")
        self.device = device_type
        self.fast_dtype = _backends.as_dtype(dtype) if dtype is not None else \
            _default_dtype(device_type)
        self._enabled = bool(enabled)
        if self._enabled and self.fast_dtype not in _supported():
            asked = self.fast_dtype or "bfloat16 (tensorgrad has no bfloat16 dtype yet)"
            warnings.warn(f"autocast: {device_type} autocast does not support {asked}; it "
                          f"supports {[str(d) for d in _supported()]}. Disabling autocast.",
                          UserWarning, stacklevel=2)
            self._enabled = False
        self._cache_enabled = True if cache_enabled is None else bool(cache_enabled)

    def __enter__(self):
        switches = this_thread.switches
        self._previous = previous = switches.autocast
        dtypes = dict(previous.dtypes) if previous is not None else {}
        if self._enabled:
            dtypes[self.device] = self.fast_dtype
        else:
            dtypes.pop(self.device, None)
        cache = previous.cache if previous is not None else ({} if self._cache_enabled else None)
        switches.autocast = _Policy(dtypes, cache) if dtypes else None
        with _lock:
            autocast_threads[0] += 1
        return self

    def __exit__(self, *exc):
        this_thread.switches.autocast = self._previous
        with _lock:
            autocast_threads[0] -= 1
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return fn(*args, **kwargs)
        return run


def is_autocast_enabled(device_type="cuda"):
    """Whether ops on `device_type` tensors are autocast in this thread now."""
    policy = this_thread.switches.autocast
    return policy is not None and device_type in policy.dtypes


def get_autocast_dtype(device_type):
    """The lower precision autocast uses on `device_type` (its default when not inside one)."""
    policy = this_thread.switches.autocast
    if policy is not None and device_type in policy.dtypes:
        return policy.dtypes[device_type]
    return _default_dtype(device_type)
