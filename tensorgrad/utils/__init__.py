"""tensorgrad.utils: helpers around the core, as torch.utils (today: `data`, loading batches)."""
from . import data  # noqa: F401
