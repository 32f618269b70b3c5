"""Convolution layers: Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d.

PyTorch's constructors, parameter names and shapes (weight (out, in / groups, *kernel), or
(in, out / groups, *kernel) for the transposes) and default initialisation, so a PyTorch
state_dict loads and a fresh layer trains like its PyTorch twin.
"""
import math

import tensorgrad as tg
from tensorgrad.ops.conv import ntuple

from . import functional as F
from . import init
from .module import Module, Parameter

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    spatial = None  # 1, 2 or 3, set by each subclass
    transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 groups, bias, padding_mode, output_padding=0, device=None, dtype=None):
        super().__init__()
        name, n = type(self).__name__, self.spatial
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels={in_channels} and out_channels={out_channels} "
                             f"must both be divisible by groups={groups}")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {_PADDING_MODES}, got "
                             f"{padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = ntuple(kernel_size, n, "kernel_size", name)
        self.stride = ntuple(stride, n, "stride", name)
        self.dilation = ntuple(dilation, n, "dilation", name)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{name}: padding must be 'same', 'valid' or ints, got "
                                 f"{padding!r}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{name}: padding='same' needs stride 1, got {self.stride}")
            self.padding = padding
        else:
            self.padding = ntuple(padding, n, "padding", name)
        self.output_padding = ntuple(output_padding, n, "output_padding", name)
        self.padding_mode = padding_mode
        shape = ((in_channels, out_channels // groups) if self.transposed
                 else (out_channels, in_channels // groups)) + self.kernel_size
        self.weight = Parameter(tg.empty(*shape, device=device, dtype=dtype))
        self.bias = Parameter(tg.empty(out_channels, device=device, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        # kaiming_uniform(a=sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as for Linear
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = init._calculate_fan_in_and_fan_out(self.weight)[0]
            bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
            init.uniform_(self.bias, -bound, bound)

    def _mode_padding(self):
        """F.pad widths (last dim first) for a non-zeros padding_mode."""
        if self.padding == "valid":
            return (0, 0) * self.spatial
        if self.padding == "same":
            totals = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            pairs = [(t // 2, t - t // 2) for t in totals]
        else:
            pairs = [(p, p) for p in self.padding]
        return tuple(w for pair in reversed(pairs) for w in pair)

    def extra_repr(self):
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0,) * self.spatial:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self.spatial:
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self.spatial:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device=device, dtype=dtype)

    def forward(self, input):
        conv = (F.conv1d, F.conv2d, F.conv3d)[self.spatial - 1]
        if self.padding_mode == "zeros":
            return conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)
        padded = F.pad(input, self._mode_padding(), mode=self.padding_mode)
        return conv(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


class Conv1d(_Conv):
    """(N, C_in, L) or (C_in, L) -> (N, C_out, L_out); weight (C_out, C_in / groups, k)."""
    spatial = 1


class Conv2d(_Conv):
    """(N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out); weight
    (C_out, C_in / groups, kh, kw), bias (C_out,). padding: ints, 'same' or 'valid';
    padding_mode 'zeros', 'reflect', 'replicate' or 'circular'."""
    spatial = 2


class Conv3d(_Conv):
    """Conv2d with three spatial dims."""
    spatial = 3


class _ConvTranspose(_ConvNd):
    transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f"{type(self).__name__}: only padding_mode='zeros' is supported "
                             f"(as in PyTorch), got {padding_mode!r}")
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be ints, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, output_padding, device, dtype)

    def forward(self, input, output_size=None):
        """output_size: the wanted spatial size (or the full shape), which picks the
        output_padding among the sizes this stride can reach."""
        extra = self.output_padding
        if output_size is not None:
            extra = self._output_padding(input, output_size)
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self.spatial - 1]
        return conv(input, self.weight, self.bias, self.stride, self.padding, extra, self.groups,
                    self.dilation)

    def _output_padding(self, input, output_size):
        wanted = tuple(output_size)[-self.spatial:]
        sizes = input.shape[-self.spatial:]
        extra = []
        for size, want, s, p, d, k in zip(sizes, wanted, self.stride, self.padding,
                                          self.dilation, self.kernel_size):
            smallest = (size - 1) * s - 2 * p + d * (k - 1) + 1
            if not smallest <= want < smallest + max(s, d):
                raise ValueError(f"{type(self).__name__}: output_size {tuple(output_size)} is "
                                 f"out of reach for input {input.shape}: each size must lie in "
                                 f"[{smallest}, {smallest + max(s, d) - 1}] for this layer")
            extra.append(want - smallest)
        return tuple(extra)


class ConvTranspose1d(_ConvTranspose):
    """(N, C_in, L) -> (N, C_out, L_out), L_out = (L - 1) * stride - 2 * padding +
    dilation * (k - 1) + output_padding + 1; weight (C_in, C_out / groups, k)."""
    spatial = 1


class ConvTranspose2d(_ConvTranspose):
    """(N, C_in, H, W) -> (N, C_out, H_out, W_out), each size as in ConvTranspose1d; weight
    (C_in, C_out / groups, kh, kw), bias (C_out,)."""
    spatial = 2


class ConvTranspose3d(_ConvTranspose):
    """(N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out), each size as in ConvTranspose1d;
    weight (C_in, C_out / groups, kd, kh, kw), bias (C_out,)."""
    spatial = 3
