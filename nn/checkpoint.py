"""Checkpoints: `nn.save(obj, path)` / `nn.load(path)` in the safetensors format, no pickle.

`obj` is a nested structure of dicts, lists and tuples holding Tensors, numbers, strings, bools
and None, e.g. {"model": model.state_dict(), "optim": opt.state_dict(), "step": 10}. Tensors go
into the safetensors body under their dotted path ("model.fc1.weight", "optim.state.0.exp_avg");
the structure with everything else (steps, config, hyper-parameters) goes into the header's
metadata as JSON, with a CRC-32 of the tensor bytes. Files without that metadata (a Hugging Face
checkpoint, say) load as a flat {name: Tensor} dict.

Writes are atomic: the file is written next to its destination, fsync'ed and renamed over it,
so a crash at any moment leaves either the old checkpoint or the new one, never half of one.
"""
import contextlib
import json
import os
import tempfile
import zlib

import safetensors
import safetensors.numpy

import tensorgrad as tg
from tensorgrad import Tensor

FORMAT = "tensorgrad-checkpoint-1"
_MARKERS = ("__tensor__", "__tuple__", "__items__")
_DTYPES = ("BOOL", "U8", "I8", "I16", "I32", "I64", "F16", "F32", "F64")


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read: truncated, corrupt, or not safetensors."""


def save(obj, path):
    """Write `obj` to `path` atomically (see the module docstring for what obj may hold)."""
    arrays = {}
    structure = _encode(obj, "", arrays)
    metadata = {"format": FORMAT, "structure": json.dumps(structure),
                "crc32": str(_crc32(arrays))}
    _atomic_write(os.fspath(path), safetensors.numpy.save(arrays, metadata=metadata))


def load(path, device=None):
    """Read a checkpoint written by `save` (tensors on `device`, default: the default device),
    or any safetensors file as a flat {name: Tensor} dict. Raises CheckpointError naming the
    path when the file is truncated or corrupt."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"load: no checkpoint at {path}")
    try:
        with safetensors.safe_open(path, framework="numpy") as f:
            metadata = f.metadata() or {}
            for name in f.keys():
                dtype = f.get_slice(name).get_dtype()
                if dtype not in _DTYPES:
                    raise CheckpointError(f"load: tensor {name!r} in {path} is {dtype}, which "
                                          f"NumPy cannot hold; supported: {', '.join(_DTYPES)}")
            arrays = {name: f.get_tensor(name) for name in f.keys()}
    except CheckpointError:
        raise
    except Exception as exc:  # safetensors reports damage as several error types
        raise CheckpointError(f"load: {path} is not a readable safetensors file; it may be "
                              f"truncated or corrupt ({exc})") from None
    if "crc32" in metadata and str(_crc32(arrays)) != metadata["crc32"]:
        raise CheckpointError(f"load: {path} is corrupt: its tensor data does not match the "
                              "checksum written with it")
    tensors = {name: tg.tensor(array, device=device) for name, array in arrays.items()}
    if metadata.get("format") != FORMAT:
        return tensors
    try:
        structure = json.loads(metadata["structure"])
    except (KeyError, ValueError) as exc:
        raise CheckpointError(f"load: {path} has a damaged structure header ({exc})") from None
    return _decode(structure, tensors)


# --- structure <-> JSON --------------------------------------------------------------------------
def _join(prefix, key):
    return f"{prefix}.{key}" if prefix else str(key)


def _encode(value, name, arrays):
    """`value` as JSON, with each Tensor moved into `arrays` and replaced by its name."""
    if isinstance(value, Tensor):
        key = name or "tensor"
        if key in arrays:  # keys containing dots can collide with nested paths
            key = f"{key}#{len(arrays)}"
        host = value._backend.to_host(value.data)
        # safetensors reads raw memory, so the array must be C-contiguous.
        arrays[key] = tg.backend.get_backend("cpu").asarray(host, order="C")
        return {"__tensor__": key}
    if isinstance(value, dict):
        if all(isinstance(k, str) and k not in _MARKERS for k in value):
            return {k: _encode(v, _join(name, k), arrays) for k, v in value.items()}
        # Non-string keys (an optimizer's parameter indices) survive as [key, value] pairs.
        for k in value:
            if not (k is None or isinstance(k, (str, int, float))):
                raise TypeError(f"save: dict key {k!r} at '{name}' is a {type(k).__name__}; "
                                "keys must be strings, numbers, bools or None")
        return {"__items__": [[k, _encode(v, _join(name, k), arrays)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        items = [_encode(v, _join(name, i), arrays) for i, v in enumerate(value)]
        return {"__tuple__": items} if isinstance(value, tuple) else items
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"save: cannot store a {type(value).__name__} at '{name or '<root>'}'; "
                    "checkpoints hold Tensors, numbers, strings, bools, None and "
                    "dicts/lists/tuples of them")


def _decode(value, tensors):
    if isinstance(value, list):
        return [_decode(v, tensors) for v in value]
    if not isinstance(value, dict):
        return value
    if "__tensor__" in value:
        return tensors[value["__tensor__"]]
    if "__tuple__" in value:
        return tuple(_decode(v, tensors) for v in value["__tuple__"])
    if "__items__" in value:
        return {k: _decode(v, tensors) for k, v in value["__items__"]}
    return {k: _decode(v, tensors) for k, v in value.items()}


def _crc32(arrays):
    crc = 0
    for name in sorted(arrays):
        crc = zlib.crc32(name.encode(), crc)
        if arrays[name].size:
            crc = zlib.crc32(arrays[name], crc)
    return crc


# --- atomic write --------------------------------------------------------------------------------
def _atomic_write(path, data):
    """Write bytes to a temporary file in path's directory, fsync it, then rename it over path
    (atomic on POSIX and Windows); on any failure the temporary file is removed."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"save: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    # Make the rename itself durable; directories cannot be opened on every platform.
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
