"""Every operation on Tensors: primitives (forward + VJP side by side) and composites.

`tensorgrad.autograd.PRIMITIVES` is the registry of differentiable primitives; the functions
exported here are what users and Tensor methods call.
"""
from .attention import attention_weights, scaled_dot_product_attention  # noqa: F401
from .elementwise import (  # noqa: F401
    abs, add, cast, ceil, clamp, clip, clone, cos, div, divide, eq, erf, exp, floor, ge, gelu, gt,
    isfinite, isinf, isnan, le, log, logical_and, logical_not, logical_or, lt, maximum, minimum,
    mul, multiply, ne, neg, negative, pow, reciprocal, relu, round, rsqrt, sigmoid, sign, silu,
    sin, sqrt, square, sub, subtract, tanh, to_device, true_divide, where,
)
from .fused import cross_entropy, dropout, layer_norm, log_softmax, rms_norm, softmax  # noqa: F401
from .index import (  # noqa: F401
    array_index, embedding, gather, getitem, masked_fill, one_hot, scatter_add,
)
from .linalg import einsum, linear, matmul  # noqa: F401
from .reduce import (  # noqa: F401
    all, amax, amin, any, argmax, argmin, cumsum, logsumexp, max, mean, min, norm, std, sum, var,
)
from .optim_step import adam_step_  # noqa: F401
from .sort import argsort, kthvalue, median, mode, msort, nanmedian, sort, topk  # noqa: F401
from .shape import (  # noqa: F401
    broadcast_to, cat, chunk, concatenate, expand, expand_as, flatten, flip, movedim, narrow, pad,
    permute, repeat, reshape, reshape_as, split, squeeze, stack, transpose, tril, triu, unbind,
    unsqueeze, view, view_as,
)

from .. import tensor as _tensor  # noqa: E402
import sys as _sys  # noqa: E402

_tensor._ops = _sys.modules[__name__]  # the operators (+, @, [] ...) call ops through it
