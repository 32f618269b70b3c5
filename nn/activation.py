"""Activation modules: each holds its function's options (PyTorch's constructor and repr) and
calls the functional form in nn.functional. PReLU is the one with a parameter."""
import tensorgrad as tg

from . import functional as F
from .module import Module, Parameter


class _Activation(Module):
    """An activation without options beyond torch's `inplace` flag, shown in the repr only when
    set (as PyTorch prints ReLU() and ReLU(inplace=True))."""

    function = None  # the functional form; subclasses name it

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self).function(input, inplace=self.inplace)

    def _options(self):
        return []

    def extra_repr(self):
        return ", ".join(self._options() + (["inplace=True"] if self.inplace else []))


class ReLU(_Activation):
    """max(x, 0), elementwise."""
    function = F.relu


class ReLU6(_Activation):
    """min(max(x, 0), 6), elementwise."""
    function = F.relu6


class SELU(_Activation):
    """scale * elu(x, alpha) with the self-normalising constants."""
    function = F.selu


class SiLU(_Activation):
    """x * sigmoid(x) (swish)."""
    function = F.silu


class Mish(_Activation):
    """x * tanh(softplus(x))."""
    function = F.mish


class Hardsigmoid(_Activation):
    """0 below -3, 1 above 3, x / 6 + 1/2 between. PyTorch does not show inplace in its repr."""
    function = F.hardsigmoid

    def extra_repr(self):
        return ""


class Hardswish(Hardsigmoid):
    """x * hardsigmoid(x)."""
    function = F.hardswish


class LeakyReLU(_Activation):
    """x for x > 0, negative_slope * x otherwise."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__(inplace)
        self.negative_slope = negative_slope

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def _options(self):
        return [f"negative_slope={self.negative_slope}"]


class ELU(_Activation):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    function = F.elu

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(inplace)
        self.alpha = alpha

    def forward(self, input):
        return type(self).function(input, self.alpha, self.inplace)

    def _options(self):
        return [f"alpha={self.alpha}"]


class CELU(ELU):
    """x for x > 0, alpha * (exp(x / alpha) - 1) otherwise."""
    function = F.celu


class Hardtanh(_Activation):
    """x clipped to [min_val, max_val]."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__(inplace)
        if max_val < min_val:
            raise ValueError(f"Hardtanh: max_val ({max_val}) must not be below min_val "
                             f"({min_val})")
        self.min_val, self.max_val = min_val, max_val

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def _options(self):
        return [f"min_val={self.min_val}", f"max_val={self.max_val}"]


class Threshold(_Activation):
    """x where x > threshold, value elsewhere."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__(inplace)
        self.threshold, self.value = threshold, value

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def _options(self):
        return [f"threshold={self.threshold}", f"value={self.value}"]


class GELU(Module):
    """GELU: x * Phi(x); approximate='tanh' is the tanh form GPT-2 and BERT were trained with."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """log(1 + exp(beta x)) / beta, linear where beta x > threshold."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class _Shrink(Module):
    function = None

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return type(self).function(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(_Shrink):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    function = F.softshrink


class Hardshrink(_Shrink):
    """x where |x| > lambd, 0 elsewhere."""
    function = F.hardshrink


class _Plain(Module):
    """An activation with no options at all."""
    function = None

    def forward(self, input):
        return type(self).function(input)


class Sigmoid(_Plain):
    function = F.sigmoid


class Tanh(_Plain):
    function = F.tanh


class Softsign(_Plain):
    """x / (1 + |x|)."""
    function = F.softsign


class LogSigmoid(_Plain):
    """log(sigmoid(x)), stable for large |x|."""
    function = F.logsigmoid


class Tanhshrink(_Plain):
    """x - tanh(x)."""
    function = F.tanhshrink


class PReLU(Module):
    """x for x > 0, a * x otherwise, with a learned slope a: one for all channels
    (num_parameters=1) or one per channel (dim 1 of the input). weight: (num_parameters,),
    initialised to `init`.

    Unlike torch, the module keeps no `num_parameters` attribute (the slope count is
    weight.numel()): it would hide Module.num_parameters(), which summary() calls on every
    module.
    """

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.init = init
        self.weight = Parameter(tg.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        with tg.no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.weight.numel()}"


class GLU(Module):
    """Gated linear unit: a * sigmoid(b) for the two halves a, b of the input along dim."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class _SoftmaxLike(Module):
    """softmax, softmin or log_softmax along dim. dim=None takes PyTorch's implicit (deprecated)
    choice: 0 for 0-, 1- and 3-d input, else 1; name the dim instead."""
    function = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        dim = self.dim
        if dim is None:
            dim = 0 if input.ndim in (0, 1, 3) else 1
        return type(self).function(input, dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxLike):
    function = F.softmax


class Softmin(_SoftmaxLike):
    function = F.softmin


class LogSoftmax(_SoftmaxLike):
    function = F.log_softmax


class Softmax2d(Module):
    """softmax over the channels of (N, C, H, W) or (C, H, W) input: at every pixel."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected (N, C, H, W) or (C, H, W) input, got "
                             f"{input.shape}")
        return F.softmax(input, dim=-3)
