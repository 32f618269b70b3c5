"""tensorgrad.utils: helpers around the core, as torch.utils: `data` (loading batches) and
`checkpoint` (activation recomputation)."""
from . import checkpoint, data  # noqa: F401
