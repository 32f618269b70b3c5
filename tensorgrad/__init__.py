"""tensorgrad: tensors with reverse-mode automatic differentiation on NumPy or CuPy.

    import tensorgrad as tg
    x = tg.randn(3, 4, requires_grad=True)
    (x.tanh() ** 2).sum().backward()
    x.grad                      # d/dx of the sum, shape (3, 4)
    model = tg.nn.Linear(4, 2)  # tg.nn, tg.optim and tg.models load on first use
"""
import importlib as _importlib

from .autograd import (  # noqa: F401
    PRIMITIVES, current_scope, detect_anomaly, enable_grad, grad, inference_mode,
    is_grad_enabled, is_inference_mode_enabled, no_grad, primitive, scope, set_grad_enabled,
)
from .backend import (  # noqa: F401
    bool_, complex64, complex128, cuda_is_available, default_device, dtype, float16,
    float32, float64, get_default_dtype, int8, int16, int32, int64, manual_seed,
    set_default_device, set_default_dtype, set_printoptions, uint8,
)
from .backend.dtype_info import finfo, iinfo  # noqa: F401
from .backend.threads import get_num_threads, set_num_threads  # noqa: F401
from .generator import Generator  # noqa: F401
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401
from . import viz  # noqa: F401  (graph pictures; graphviz is imported only when drawing)
from .ops import *  # noqa: F401,F403
from .ops import abs, all, any, max, min, pow, round, sum  # noqa: F401  (shadow builtins on purpose)
from . import inplace  # noqa: F401  (Tensor's in-place methods: add_, +=, copy_ ...)
from .serialization import CheckpointError, load, save  # noqa: F401  (safetensors, no pickle)
from .size import Size  # noqa: F401
from .tensor import Tensor, device  # noqa: F401
from .creation import (  # noqa: F401
    arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like, is_tensor,
    linspace, logspace, ones, ones_like, rand, rand_like, randint, randn, randn_like, randperm,
    tensor, zeros, zeros_like,
)
from . import linalg  # noqa: F401,E402  (torch.linalg's norms)
from .compiler import compile  # noqa: F401,E402,A001  (accepted; tensorgrad runs eagerly)
from . import backends, cuda, distributed  # noqa: F401,E402  (cupy, mpi4py: only when used)
from . import amp  # noqa: F401,E402  (mixed precision: autocast, GradScaler)
from .amp import autocast  # noqa: F401,E402  (torch.autocast is torch.amp.autocast)
from . import utils  # noqa: F401,E402  (last: utils.data uses the names bound above)

# torch.numel(x), torch.is_floating_point(x), torch.is_complex(x): the methods, as functions
numel, is_floating_point, is_complex = Tensor.numel, Tensor.is_floating_point, Tensor.is_complex

# torch's aliases: tensorgrad.float is float32, tensorgrad.long is int64, ...
bool = bool_  # noqa: A001
float, double, half = float32, float64, float16  # noqa: A001
int, long, short = int32, int64, int16  # noqa: A001
cfloat, cdouble = complex64, complex128

__version__ = "0.1.0"

# The layers above tensorgrad, reachable as torch.nn is after `import torch`. They load on first
# use: importing them here would turn the layering upside down (nn imports tensorgrad).
_LAYERS_ABOVE = {"nn": "tensorgrad.nn", "optim": "tensorgrad.nn.optim",
                 "models": "tensorgrad.models"}


def __getattr__(name):
    if name in _LAYERS_ABOVE:
        module = _importlib.import_module(_LAYERS_ABOVE[name])
        globals()[name] = module
        return module
    if name == "bfloat16":  # made at first use: ml_dtypes takes half a second to import
        from .backend import dtypes
        globals()[name] = dtypes.bfloat16
        return dtypes.bfloat16
    raise AttributeError(f"module 'tensorgrad' has no attribute {name!r}")
