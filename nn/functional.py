"""Functional forms (`import tensorgrad.nn.functional as F`), PyTorch's names and signatures.

Most are tensorgrad ops re-exported under their torch.nn.functional names; the rest are
composites of those ops and get their gradients for free.
"""
import tensorgrad as tg
from tensorgrad import (  # noqa: F401  (re-exported)
    cross_entropy, dropout, embedding, gelu, layer_norm, linear, log_softmax, one_hot, pad, relu,
    rms_norm, sigmoid, silu, softmax, tanh,
)
from tensorgrad import attention_weights, scaled_dot_product_attention  # noqa: F401
from tensorgrad import (  # noqa: F401
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d, adaptive_max_pool2d, avg_pool1d,
    avg_pool2d, avg_pool3d, batch_norm, conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,
    group_norm, instance_norm, max_pool1d, max_pool2d, max_pool3d,
)
from tensorgrad.ops.conv import fold, unfold  # noqa: F401  (not top-level: Tensor.unfold differs)
from tensorgrad.ops.channel_norm import normalize  # noqa: F401
from tensorgrad.ops.resize import interpolate  # noqa: F401

# --- activations and losses (tensorgrad/ops/activation.py, loss.py) ------------------------------
from tensorgrad import (  # noqa: F401  (re-exported)
    binary_cross_entropy, binary_cross_entropy_with_logits, cosine_embedding_loss,
    gaussian_nll_loss, glu, hardshrink, hinge_embedding_loss, huber_loss, kl_div, l1_loss,
    logsigmoid, margin_ranking_loss, mse_loss, nll_loss, poisson_nll_loss, prelu, smooth_l1_loss,
    soft_margin_loss, softplus, softshrink, softsign, tanhshrink,
)
from tensorgrad.ops import activation as _act
from tensorgrad.ops.unary import apply_inplace as _apply_inplace


def _maybe_inplace(input, op, inplace, name, *args):
    # torch's inplace=True writes the result into input; tensorgrad refuses it, as every
    # in-place update, for a tensor autograd tracks (it records no in-place ops).
    return _apply_inplace(input, op, name, *args) if inplace else op(input, *args)


def relu6(input, inplace=False):
    return _maybe_inplace(input, _act.relu6, inplace, "relu6")


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _maybe_inplace(input, _act.leaky_relu, inplace, "leaky_relu", negative_slope)


def elu(input, alpha=1.0, inplace=False):
    return _maybe_inplace(input, _act.elu, inplace, "elu", alpha)


def celu(input, alpha=1.0, inplace=False):
    return _maybe_inplace(input, _act.celu, inplace, "celu", alpha)


def selu(input, inplace=False):
    return _maybe_inplace(input, _act.selu, inplace, "selu")


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return _maybe_inplace(input, _act.hardtanh, inplace, "hardtanh", min_val, max_val)


def hardsigmoid(input, inplace=False):
    return _maybe_inplace(input, _act.hardsigmoid, inplace, "hardsigmoid")


def hardswish(input, inplace=False):
    return _maybe_inplace(input, _act.hardswish, inplace, "hardswish")


def mish(input, inplace=False):
    return _maybe_inplace(input, _act.mish, inplace, "mish")


def threshold(input, threshold, value, inplace=False):
    return _maybe_inplace(input, _act.threshold, inplace, "threshold", threshold, value)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-input) along dim (PyTorch's implicit dim for dim=None: 0 for 0-, 1- and 3-d
    input, else 1)."""
    if dim is None:
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return tg.softmax(-input if dtype is None else -input.to(dtype), dim=dim)


# torch's trailing-underscore functional forms: the same as inplace=True
def relu_(input):
    return relu(input, inplace=True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input, threshold, value):
    return _maybe_inplace(input, _act.threshold, True, "threshold_", threshold, value)
