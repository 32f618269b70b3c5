"""tensorgrad.backends: torch.backends' switches, answered truthfully for tensorgrad.

`cudnn`: tensorgrad does not call cuDNN (its GPU kernels are CuPy's), so `is_available()` is
False; the flags `enabled`, `benchmark`, `deterministic` and `allow_tf32` can be read and set as
in torch and change nothing. `mps`: tensorgrad has no Apple-GPU backend, so `is_available()` and
`is_built()` are False.
"""
from . import cudnn, mps  # noqa: F401
