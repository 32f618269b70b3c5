"""Every operation on Tensors: primitives (forward + VJP side by side) and composites.

`tensorgrad.autograd.PRIMITIVES` is the registry of differentiable primitives; the functions
exported here are what users and Tensor methods call.
"""
from .attention import attention_weights, scaled_dot_product_attention  # noqa: F401
from .activation import gelu, relu, sigmoid, silu  # noqa: F401
from .arithmetic import (  # noqa: F401
    add, div, divide, mul, multiply, neg, negative, pow, reciprocal, square, sub, subtract,
    true_divide,
)
from .compare import (  # noqa: F401
    eq, ge, gt, isfinite, isinf, isnan, le, logical_and, logical_not, logical_or, lt, ne,
)
from .convert import cast, clone, to_device  # noqa: F401
from .dropout import dropout  # noqa: F401
from .loss import cross_entropy  # noqa: F401
from .norm import layer_norm, rms_norm  # noqa: F401
from .select import clamp, clip, maximum, minimum, where  # noqa: F401
from .softmax import log_softmax, softmax  # noqa: F401
from .unary import (  # noqa: F401
    abs, ceil, cos, erf, exp, floor, log, round, rsqrt, sign, sin, sqrt, tanh, trunc,
)
from .index import (  # noqa: F401
    array_index, embedding, gather, getitem, masked_fill, one_hot, scatter_add,
)
from .scatter import (  # noqa: F401
    argwhere, bincount, index_add, index_copy, index_fill, index_select, masked_scatter,
    masked_select, nonzero, scatter, scatter_reduce, take, take_along_dim, unique,
)
from .layout import (  # noqa: F401
    atleast_1d, atleast_2d, atleast_3d, cartesian_prod, column_stack, diag, diag_embed, diagonal,
    dstack, fliplr, flipud, hstack, meshgrid, moveaxis, repeat_interleave, roll, rot90, row_stack,
    swapaxes, swapdims, t, tile, tril_indices, triu_indices, unflatten, vstack,
)
from .random import bernoulli, multinomial, normal  # noqa: F401
from .linalg import einsum, linear, matmul  # noqa: F401
from .reduce import (  # noqa: F401
    all, amax, amin, aminmax, any, argmax, argmin, count_nonzero, cummax, cummin, cumprod, cumsum,
    logcumsumexp, logsumexp, max, mean, min, nanmean, nansum, norm, prod, std, std_mean, sum, var,
    var_mean,
)
from .shape import (  # noqa: F401
    broadcast_to, cat, chunk, concatenate, expand, expand_as, flatten, flip, movedim, narrow, pad,
    permute, repeat, reshape, reshape_as, split, squeeze, stack, transpose, tril, triu, unbind,
    unsqueeze, view, view_as,
)

from .. import tensor as _tensor  # noqa: E402
import sys as _sys  # noqa: E402

_tensor._ops = _sys.modules[__name__]  # the operators (+, @, [] ...) call ops through it
