"""Fused CPU kernels compiled with Numba, one module per op family, mirroring tensorgrad/ops/: each
registers compiled overrides of the math its op's file declares overridable
(backend/overrides.py; activation.py <-> ops/activation.py, layer_norm.py <-> ops/layer_norm.py,
attention.py <-> ops/attention.py, loss.py <-> ops/loss.py, matmul.py <-> ops/matmul.py,
optim.py <-> ops/optim_step.py and inplace.py's add_) and makes one pass over memory where the
reference makes several (one NumPy call per arithmetic step, each writing a temporary).
tiled_attention.py and whole_attention.py are twins of whole loops, ops/attention.py's tiled and
whole-matrix paths, whose products they make themselves through MKL (blas.py: its GEMM called
by address); matmul.py's `gemm` makes the backend's large 2-D products that way too. The
kernels marked `@threaded` (jit.py) split their outer loop over the CPU threads
(tensorgrad.get_num_threads), as PyTorch's CPU kernels do.

The NumPy backend loads this package (registering the overrides) through
`backend.kernels(*arrays)` when Numba is installed (`pip install tensorgrad[fast]`) and
TENSORGRAD_NUMBA is not 0; otherwise that returns None and every op runs its reference, which is
also what the CuPy backend runs. tests/tensorgrad/test_overrides.py runs every override against
its reference, test_kernels.py and test_attention_loops.py the kernels and loops themselves,
test_threaded_kernels.py the split loops against the plain ones. Only float32 and float64 arrays
are handled (`supports`, supports.py).
"""
from .activation import (gelu_erf, gelu_erf_backward, gelu_tanh, gelu_tanh_backward,  # noqa: F401
                         relu, relu_backward)
from .attention import (exp_shifted_, hide_future_, online_step_, softmax_rows,  # noqa: F401
                        softmax_rows_backward)
from .index import scatter_add_rows  # noqa: F401
from .jit import DTYPES, GRAIN  # noqa: F401
from .layer_norm import norm_rows, norm_rows_backward  # noqa: F401
from .loss import max_and_sum_exp, scaled_softmax  # noqa: F401
from .matmul import add_to_rows_, column_sums, gemm, linear  # noqa: F401
from .optim import adam_step, add_scaled_  # noqa: F401
from .tiled_attention import tiled_backward, tiled_forward  # noqa: F401
from .whole_attention import whole_backward, whole_forward  # noqa: F401


def supports(arrays):
    for a in arrays:
        if a is not None and a.dtype not in DTYPES:
            return False
    return True
