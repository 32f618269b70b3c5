"""Every operation on Tensors: primitives (forward + VJP side by side) and composites.

`tensorgrad.autograd.PRIMITIVES` is the registry of differentiable primitives; the functions
exported here are what users and Tensor methods call.
"""
from .attention import attention_weights, scaled_dot_product_attention  # noqa: F401
from .linear_attention import linear_attention  # noqa: F401
from .sparse_attention import block_sparse_attention, merge_attention  # noqa: F401
from .activation import (  # noqa: F401
    celu, elu, gelu, glu, hardshrink, hardsigmoid, hardswish, hardtanh, leaky_relu, logsigmoid,
    mish, prelu, relu, relu6, selu, sigmoid, silu, softplus, softshrink, softsign, tanhshrink,
    threshold,
)
from .arithmetic import (  # noqa: F401
    add, mul, multiply, neg, negative, pow, reciprocal, square, sub, subtract,
)
from .binary import (  # noqa: F401
    atan2, copysign, hypot, lerp, logaddexp, logaddexp2, xlogy,
)
from .bitwise import (  # noqa: F401
    bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or, bitwise_right_shift, bitwise_xor,
)
from .channel_norm import batch_norm, group_norm, instance_norm  # noqa: F401
from .compare import (  # noqa: F401
    allclose, eq, equal, ge, gt, isclose, isfinite, isin, isinf, isnan, le, logical_and,
    logical_not, logical_or, lt, ne,
)
from .conv import (  # noqa: F401
    conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d,
)
from .convert import cast, clone, to_device  # noqa: F401
from .division import div, divide, floor_divide, fmod, remainder, true_divide  # noqa: F401
from .dropout import dropout  # noqa: F401
from .loss import (  # noqa: F401
    binary_cross_entropy, binary_cross_entropy_with_logits, cosine_embedding_loss, cross_entropy,
    gaussian_nll_loss, hinge_embedding_loss, huber_loss, kl_div, l1_loss, margin_ranking_loss,
    mse_loss, nll_loss, poisson_nll_loss, smooth_l1_loss, soft_margin_loss,
)
from .layer_norm import layer_norm, rms_norm  # noqa: F401
from .select import clamp, clip, maximum, minimum, where  # noqa: F401
from .softmax import log_softmax, softmax  # noqa: F401
from .index import (  # noqa: F401
    array_index, embedding, gather, getitem, masked_fill, one_hot, scatter_add,
)
from .scatter import (  # noqa: F401
    argwhere, bincount, index_add, index_copy, index_fill, index_select, masked_scatter,
    masked_select, nonzero, scatter, scatter_reduce, take, take_along_dim, unique,
)
from .layout import (  # noqa: F401
    atleast_1d, atleast_2d, atleast_3d, block_diag, cartesian_prod, column_stack, diag,
    diag_embed, diagonal, diff, dstack, fliplr, flipud, hstack, meshgrid, moveaxis,
    repeat_interleave, roll, rot90, row_stack, swapaxes, swapdims, t, tile, tril_indices,
    triu_indices, unflatten, vstack,
)
from .pointwise import (  # noqa: F401
    addcdiv, addcmul, clamp_max, clamp_min, float_power, heaviside, logit, nan_to_num, sgn,
    signbit,
)
from .random import bernoulli, multinomial, normal  # noqa: F401
from .einsum import einsum  # noqa: F401
from .matmul import bmm, linear, matmul, mm, mv  # noqa: F401
from .products import (  # noqa: F401
    addbmm, addmm, addmv, baddbmm, cdist, cross, dot, ger, inner, kron, outer, tensordot, trace,
    vdot,
)
from .pool import (  # noqa: F401
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d, adaptive_max_pool2d, avg_pool1d,
    avg_pool2d, avg_pool3d, max_pool1d, max_pool2d, max_pool3d,
)
from .reduce import (  # noqa: F401
    all, amax, amin, aminmax, any, argmax, argmin, count_nonzero, cummax, cummin, cumprod, cumsum,
    logcumsumexp, logsumexp, max, mean, min, nanmean, nansum, norm, prod, std, std_mean, sum, var,
    var_mean,
)
from .optim_step import adam_step_  # noqa: F401
from .sort import (  # noqa: F401
    argsort, bucketize, kthvalue, median, mode, msort, nanmedian, searchsorted, sort, topk,
)
from .shape import (  # noqa: F401
    broadcast_shapes, broadcast_tensors, broadcast_to, cat, chunk, concat, concatenate, expand,
    expand_as, flatten, flip, movedim, narrow, pad, permute, repeat, reshape, reshape_as, select,
    split, squeeze, stack, transpose, tril, triu, unbind, unsqueeze, view, view_as,
)
from .unary import (  # noqa: F401
    abs, acos, acosh, arccos, arccosh, arcsin, arcsinh, arctan, arctanh, asin, asinh, atan, atanh,
    ceil, cos, cosh, erf, erfinv, exp, exp2, expm1, floor, frac, log, log1p, log2, log10, round,
    rsqrt, sign, sin, sinc, sinh, sqrt, tan, tanh, trunc,
)
