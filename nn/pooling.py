"""Pooling and reshaping layers: MaxPool1d/2d/3d, MaxUnpool1d/2d/3d, AvgPool1d/2d/3d,
AdaptiveAvgPool1d/2d, AdaptiveMaxPool1d/2d, Upsample, Flatten, Unflatten. PyTorch's
constructors; each calls the functional form."""
from . import functional as F
from .module import Module


class _MaxPool(Module):
    function = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return type(self).function(input, self.kernel_size, self.stride, self.padding,
                                   self.dilation, self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPool):
    """Max over windows of (N, C, L) or (C, L)."""
    function = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPool):
    """Max over windows of (N, C, H, W) or (C, H, W); stride defaults to kernel_size."""
    function = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPool):
    function = staticmethod(F.max_pool3d)


def _ntuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _MaxUnpool(Module):
    function, spatial = None, 0

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        n = self.spatial  # PyTorch keeps the sizes as tuples here, unlike MaxPool's
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride if stride is not None else kernel_size, n)
        self.padding = _ntuple(padding, n)

    def forward(self, input, indices, output_size=None):
        return type(self).function(input, indices, self.kernel_size, self.stride, self.padding,
                                   output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    """MaxPool1d's partial inverse: forward(input, indices) with the indices it returned."""
    function, spatial = staticmethod(F.max_unpool1d), 1


class MaxUnpool2d(_MaxUnpool):
    """MaxPool2d's partial inverse: each maximum back at its index, zeros elsewhere;
    output_size picks among the sizes the pooling could have come from."""
    function, spatial = staticmethod(F.max_unpool2d), 2


class MaxUnpool3d(_MaxUnpool):
    function, spatial = staticmethod(F.max_unpool3d), 3


class _AvgPool(Module):
    function = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        extra = () if self.divisor_override is None else (self.divisor_override,)
        return type(self).function(input, self.kernel_size, self.stride, self.padding,
                                   self.ceil_mode, self.count_include_pad, *extra)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPool):
    """Mean over windows of (N, C, L) or (C, L)."""
    function = staticmethod(F.avg_pool1d)

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)


class AvgPool2d(_AvgPool):
    """Mean over windows of (N, C, H, W) or (C, H, W); stride defaults to kernel_size."""
    function = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPool):
    function = staticmethod(F.avg_pool3d)


class _Adaptive(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return type(self).function(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    function = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_Adaptive):
    """Average (N, C, H, W) down to output_size; AdaptiveAvgPool2d(1) is global pooling."""
    function = staticmethod(F.adaptive_avg_pool2d)


class _AdaptiveMax(_Adaptive):
    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return type(self).function(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMax):
    function = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMax):
    function = staticmethod(F.adaptive_max_pool2d)


class Upsample(Module):
    """F.interpolate as a layer: to `size` or by `scale_factor`, with `mode`."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)

    def extra_repr(self):
        what = f"size={self.size}" if self.size is not None else \
            f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"


class Flatten(Module):
    """Flatten dims start_dim..end_dim into one: (N, C, H, W) -> (N, C * H * W) by default."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim into unflattened_size: Unflatten(1, (C, H, W)) undoes Flatten() on (N, C*H*W).
    One size may be -1."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        dim = self.dim % input.ndim if -input.ndim <= self.dim < input.ndim else None
        sizes = self.unflattened_size
        known = 1
        for s in sizes:
            known *= s if s != -1 else 1
        if dim is None or sizes.count(-1) > 1 or (
                input.shape[dim] % known if -1 in sizes else input.shape[dim] != known):
            raise ValueError(f"Unflatten: cannot split dim {self.dim} of shape {input.shape} "
                             f"into {sizes}")
        return input.reshape(input.shape[:dim] + sizes + input.shape[dim + 1:])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
