"""Checkpoints: `nn.save(obj, path)` / `nn.load(path, device=None)`, tensorgrad's own names for
`tensorgrad.save` / `tensorgrad.load` (tensorgrad/serialization.py holds the format: safetensors
with a JSON structure and a checksum over every byte, atomic writes, never pickle).

The one difference: `nn.load` puts every tensor on `device`, default the default device, where
`tensorgrad.load(map_location=None)` restores each tensor to the device it was saved from.
"""
import tensorgrad as tg
from tensorgrad.serialization import CheckpointError, save

__all__ = ["CheckpointError", "load", "save"]


def load(path, device=None):
    """Read a checkpoint written by `save` (tensors on `device`, default: the default device),
    or any safetensors file as a flat {name: Tensor} dict. Raises CheckpointError naming the
    path when the file is truncated, corrupt or a pickle."""
    return tg.load(path, map_location=device if device is not None else tg.default_device())
