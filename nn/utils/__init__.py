"""Training utilities (`tensorgrad.nn.utils`): gradient clipping, parameters as one vector;
`rnn`: variable-length batches for the RNNs."""
import tensorgrad as tg
from tensorgrad import Tensor

from . import rnn  # noqa: F401


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale all gradients together so that their combined norm is at most max_norm.

    parameters: a Tensor or an iterable of Tensors (those without .grad are skipped).
    norm_type: the p of the p-norm over all gradients seen as one vector (float('inf') for the
    largest magnitude). Returns the total norm before clipping, as a 0-d Tensor. foreach= is
    accepted for PyTorch compatibility and changes nothing.
    """
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return tg.tensor(0.0)
    norm_type = float(norm_type)
    with tg.no_grad():
        norms = tg.stack([g.norm(norm_type) for g in grads])
        total = norms.norm(norm_type)
        if error_if_nonfinite and not bool(total.isfinite()):
            raise RuntimeError(f"clip_grad_norm_: the total {norm_type}-norm of the gradients is "
                               f"{total.item()}; pass error_if_nonfinite=False to clip anyway")
        scale = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for grad in grads:
            grad.mul_(scale)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient, in place, to [-clip_value, clip_value]. foreach= is accepted for
    PyTorch compatibility and changes nothing."""
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    clip_value = float(clip_value)
    with tg.no_grad():
        for p in params:
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)


def parameters_to_vector(parameters):
    """The parameters flattened and joined into one 1-D tensor (a copy, differentiable)."""
    params = list(parameters)
    _one_device(params, "parameters_to_vector")
    return tg.cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-D vec into the parameters, reshaped to theirs: the
    inverse of parameters_to_vector. PyTorch rebinds each `.data`; this writes in place."""
    if not isinstance(vec, Tensor) or vec.ndim != 1:
        raise TypeError(f"vector_to_parameters: expected a 1-D Tensor, got "
                        f"{type(vec).__name__} of shape {getattr(vec, 'shape', None)}")
    params = list(parameters)
    _one_device(params + [vec], "vector_to_parameters")
    total = sum(p.numel() for p in params)
    if total != vec.numel():
        raise RuntimeError(f"vector_to_parameters: the vector has {vec.numel()} elements, the "
                           f"parameters {total}")
    start = 0
    with tg.no_grad():
        for p in params:
            p.copy_(vec[start:start + p.numel()].reshape(p.shape))
            start += p.numel()


def _one_device(tensors, op):
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        raise TypeError(f"{op}: found tensors on different devices {sorted(map(str, devices))}")
