"""The GPU backend: CuPy arrays on one CUDA device, imported only when a cuda tensor is made."""
import contextlib

import cupy
import cupyx
import cupyx.scipy.special
import numpy


class CupyBackend:
    name = "cupy"
    xp = cupy

    def __init__(self, index=0):
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except cupy.cuda.runtime.CUDARuntimeError as exc:  # CuPy installed, no GPU or driver
            raise RuntimeError(f"device 'cuda:{index}' needs CuPy and an NVIDIA GPU ({exc}); "
                               "use device='cpu'") from None
        if index >= count:
            raise RuntimeError(f"device cuda:{index} requested but only {count} GPU(s) are visible")
        self.index = index
        self.device = f"cuda:{index}"
        with cupy.cuda.Device(index):
            self.rng = cupy.random.default_rng()

    def seed(self, seed):
        self.rng = self.new_rng(seed)

    def new_rng(self, seed):
        """A seeded random generator on this GPU (see NumpyBackend.new_rng)."""
        with cupy.cuda.Device(self.index):
            return cupy.random.default_rng(seed)

    def from_host(self, array):
        with cupy.cuda.Device(self.index):
            return cupy.asarray(array)

    def to_host(self, array):
        return cupy.asnumpy(array)

    def kernels(self, *arrays, family=None):
        """No fused kernels here yet: ops run their array code on the GPU."""
        return None

    def scatter_add(self, target, index, values):
        cupyx.scatter_add(target, index, values)

    def erf(self, x):
        return cupyx.scipy.special.erf(x).astype(x.dtype, copy=False)

    def errstate(self, **kwargs):
        """NumPy's errstate, which CuPy lacks: GPU kernels raise no floating-point warnings."""
        return contextlib.nullcontext()

    def random_normal(self, shape, dtype, rng=None):
        rng = self.rng if rng is None else rng
        with cupy.cuda.Device(self.index):
            if dtype in (numpy.float32, numpy.float64):
                return rng.standard_normal(shape, dtype=dtype)
            return rng.standard_normal(shape).astype(dtype)

    def random_uniform(self, shape, dtype, rng=None):
        rng = self.rng if rng is None else rng
        with cupy.cuda.Device(self.index):
            if dtype in (numpy.float32, numpy.float64):
                return rng.random(shape, dtype=dtype)
            # Rounded to a short mantissa a draw near 1 becomes 1.0; a grid of k / 2**bits cannot.
            steps = 2.0 ** (numpy.finfo(dtype).nmant + 1)
            return (cupy.floor(rng.random(shape) * steps) / steps).astype(dtype)

    def random_integers(self, low, high, shape, dtype, rng=None):
        rng = self.rng if rng is None else rng
        with cupy.cuda.Device(self.index):
            return rng.integers(low, high, size=shape, dtype=dtype)

    def owner(self, array):
        """The array whose memory `array` views: array itself when it owns its memory."""
        owner = array
        while isinstance(owner.base, self.xp.ndarray):
            owner = owner.base
        return owner

    def map_matrices(self, fn, items):
        """fn(i, *arrays) for each (i, arrays) of items, in order: one device runs them."""
        for i, arrays in items:
            fn(i, *arrays)

    def linear(self, x, weight, bias=None):
        """x @ weight.T + bias (the NumPy backend's, which see)."""
        out = self.xp.matmul(x, weight.T)
        if bias is not None:
            out += bias
        return out

    def matmul_into(self, a, b, out, accumulate=False):
        """out = a @ b, or out += a @ b with `accumulate` (the NumPy backend's, which see)."""
        if accumulate:
            out += self.xp.matmul(a, b)
        else:
            self.xp.matmul(a, b, out=out)
        return out

    def __repr__(self):
        return f"CupyBackend({self.device})"

    def __getattr__(self, name):
        value = getattr(self.xp, name)
        setattr(self, name, value)
        return value

    def __deepcopy__(self, memo):
        # A backend is a process-wide singleton per device: copies of tensors share it.
        return self
