"""Weight initialisation (`tensorgrad.nn.init`), PyTorch's functions and formulas.

Each fills a tensor in place under no_grad, from the tensor's own device generator (seeded by
`tg.manual_seed`), and returns it.
"""
import math

import tensorgrad as tg


def calculate_gain(nonlinearity, param=None):
    """The gain that keeps activations' variance steady through `nonlinearity`:
    1 for linear/sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for
    leaky_relu (slope = param, default 0.01), 3/4 for selu."""
    linear = ("linear", "identity", "sigmoid", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
              "conv_transpose2d", "conv_transpose3d")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3.0
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"calculate_gain: negative slope {param!r} is not a number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4.0
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(tensor):
    """fan_in = shape[1] * receptive field, fan_out = shape[0] * receptive field (PyTorch's
    convention: a Linear weight is (out_features, in_features))."""
    if tensor.ndim < 2:
        raise ValueError(f"fan in and fan out need a tensor with at least 2 dimensions, got "
                         f"shape {tensor.shape}")
    receptive = 1
    for size in tensor.shape[2:]:
        receptive *= size
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0):
    """Fill with samples from U(a, b)."""
    with tg.no_grad():
        return tensor.uniform_(a, b)


def normal_(tensor, mean=0.0, std=1.0):
    """Fill with samples from N(mean, std^2)."""
    with tg.no_grad():
        return tensor.normal_(mean, std)


def constant_(tensor, val):
    with tg.no_grad():
        return tensor.fill_(val)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor, gain=1.0):
    """Glorot & Bengio (2010): U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor, gain=1.0):
    """Glorot & Bengio (2010): N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    """He et al. (2015): U(-b, b) with b = gain * sqrt(3 / fan); gain from `nonlinearity` with
    negative slope `a`."""
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    """He et al. (2015): N(0, std^2) with std = gain / sqrt(fan)."""
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std)


def _normal_cdf(x, mean, std):
    return 0.5 * (1.0 + math.erf((x - mean) / (std * math.sqrt(2.0))))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    """N(mean, std^2) restricted to [a, b] (absolute bounds, as in PyTorch), by resampling the
    values that fall outside until none do."""
    if not a < b:
        raise ValueError(f"trunc_normal_: need a < b, got a={a}, b={b}")
    if _normal_cdf(b, mean, std) - _normal_cdf(a, mean, std) < 1e-4:
        raise ValueError(f"trunc_normal_: [{a}, {b}] holds less than 1e-4 of N({mean}, {std}^2); "
                         "rejection sampling would not finish")
    with tg.no_grad():
        tensor.normal_(mean, std)
        outside = (tensor < a) | (tensor > b)
        while outside.any():
            count = int(outside.sum())
            tensor[outside] = tg.randn(count, dtype=tensor.dtype, device=tensor.device) * std + mean
            outside = (tensor < a) | (tensor > b)
    return tensor


def orthogonal_(tensor, gain=1.0):
    """Saxe et al. (2014): the tensor, seen as a (rows, cols) matrix, filled with gain times a
    (semi-)orthogonal matrix drawn uniformly: the Q of a Gaussian matrix's QR decomposition
    with R's diagonal made positive, built here by Gram-Schmidt in float64."""
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: only tensors with 2 or more dimensions are supported, "
                         f"got shape {tuple(tensor.shape)}")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    tall = max(rows, cols), min(rows, cols)
    with tg.no_grad():
        a = tg.randn(*tall, dtype=tg.float64, device=tensor.device)
        columns = []
        for j in range(tall[1]):
            v = a[:, j]
            for _ in range(2):  # twice is enough to be orthogonal to rounding (Kahan)
                for q in columns:
                    v = v - (q * v).sum() * q
            columns.append(v / v.norm())
        q = tg.stack(columns, dim=1)  # (max, min), orthonormal columns
        if rows < cols:
            q = q.t()
        tensor.copy_((q * gain).reshape(tensor.shape))
    return tensor
