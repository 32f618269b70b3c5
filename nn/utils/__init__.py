"""Training utilities (`tensorgrad.nn.utils`); `rnn`: variable-length batches for the RNNs."""
import tensorgrad as tg
from tensorgrad import Tensor

from . import rnn  # noqa: F401


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scale all gradients together so that their combined norm is at most max_norm.

    parameters: a Tensor or an iterable of Tensors (those without .grad are skipped).
    norm_type: the p of the p-norm over all gradients seen as one vector (float('inf') for the
    largest magnitude). Returns the total norm before clipping, as a 0-d Tensor.
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
