"""`tensorgrad.save(obj, f)` / `tensorgrad.load(f, map_location=None)`: checkpoints as
safetensors files with a JSON structure, never pickle.

`obj` is a nested structure of dicts, lists and tuples holding Tensors, numbers, strings, bools
and None, e.g. {"model": model.state_dict(), "optimizer": opt.state_dict(), "iter_num": 5,
"config": {...}}. Each Tensor goes into the safetensors body under its dotted path
("model.fc1.weight", "optimizer.state.0.exp_avg"); a Tensor reached twice (tied weights) is
stored once and loads as one Tensor again. The structure with everything else goes into the
header's `__metadata__` as JSON. Files without that metadata (a Hugging Face checkpoint) load as a
flat {name: Tensor} dict.

Integrity: a CRC-32 covers every byte of the file (the header length, the whole header JSON with
the structure, and the tensor data), with the checksum's own 8 digits counted as zeros. CRC-32
detects every change confined to 32 consecutive bits, so any flipped byte is a CheckpointError
naming the file; so is a structure that names a tensor the file lacks or that is nested deeper
than Python can read. Files of the first format (`tensorgrad-checkpoint-1`, whose checksum covered
tensor names and bytes only) still load, with that weaker check.

Writes to a path are atomic (`atomic_write`, which every writer of user files in the project
uses): the file is written next to its destination under a temporary name, fsync'ed and renamed
over it, so a crash at any moment leaves the old checkpoint or the new one. Temporary files of a
save that was killed are removed by the next save to the same path.

The safetensors layout is read and written here directly (8-byte little-endian header length,
the header JSON padded with spaces to 8 bytes, then the tensors' bytes) so that both directions
stream tensor by tensor and the checksum is computed in the same pass; the `safetensors`
package reads the files we write.
"""
import contextlib
import io
import json
import math
import os
import secrets
import stat
import struct
import zlib

from . import backend as _backends
from .creation import from_numpy, tensor
from .tensor import Tensor

FORMAT = "tensorgrad-checkpoint-2"
_FORMAT_1 = "tensorgrad-checkpoint-1"
_MARKERS = ("__tensor__", "__tuple__", "__items__")
_DTYPES = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "I32": "int32",
           "I64": "int64", "F16": "float16", "BF16": "bfloat16", "F32": "float32",
           "F64": "float64"}
_CODES = {name: code for code, name in _DTYPES.items()}
_UNSET = b'"checksum":"00000000"'  # the checksum field as it is counted by the checksum
_MAX_HEADER = 100 * 2**20  # safetensors' own limit; a flipped length byte must not allocate GBs


class CheckpointError(ValueError):
    """A checkpoint that cannot be read: truncated, corrupt, not safetensors, or a pickle."""


# --- saving --------------------------------------------------------------------------------------
def save(obj, f):
    """Write `obj` (see the module docstring) to `f`, a path (atomically) or a binary file."""
    arrays, memo = {}, {}
    try:
        structure = _encode(obj, "", arrays, memo)
    except RecursionError:
        raise ValueError("save: the object is nested too deeply to store") from None
    if hasattr(f, "write"):
        _write(f, arrays, structure)
        return
    atomic_write(f, lambda out: _write(out, arrays, structure))


def _join(prefix, key):
    return f"{prefix}.{key}" if prefix else str(key)


def _encode(value, name, arrays, memo):
    """`value` as JSON, with each Tensor's host array put into `arrays` and replaced by a
    reference to its name."""
    if isinstance(value, Tensor):
        if id(value) in memo:
            return memo[id(value)]
        key = name or "tensor"
        # Keys containing dots can collide with nested paths; the header reserves __metadata__.
        if key in arrays or key == "__metadata__":
            key = f"{key}#{len(arrays)}"
        host = value.detach().cpu().numpy()
        # Raw bytes are written, so the array must be C-contiguous and little-endian.
        dtype = host.dtype.newbyteorder("<") if host.dtype.byteorder == ">" else host.dtype
        arrays[key] = _backends.get_backend("cpu").asarray(host, dtype=dtype, order="C")
        ref = {"__tensor__": key}
        if value.device != "cpu":
            ref["device"] = value.device
        if value.requires_grad:
            ref["requires_grad"] = True
        memo[id(value)] = ref
        return ref
    if isinstance(value, dict):
        if all(isinstance(k, str) and k not in _MARKERS for k in value):
            return {k: _encode(v, _join(name, k), arrays, memo) for k, v in value.items()}
        # Non-string keys (an optimizer's parameter indices) survive as [key, value] pairs.
        for k in value:
            if not (k is None or isinstance(k, (str, int, float))):
                raise TypeError(f"save: dict key {k!r} at '{name}' is a {type(k).__name__}; "
                                "keys must be strings, numbers, bools or None")
        return {"__items__": [[k, _encode(v, _join(name, k), arrays, memo)]
                              for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        items = [_encode(v, _join(name, i), arrays, memo) for i, v in enumerate(value)]
        return {"__tuple__": items} if isinstance(value, tuple) else items
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"save: cannot store a {type(value).__name__} at '{name or '<root>'}'; "
                    "checkpoints hold Tensors, numbers, strings, bools, None and "
                    "dicts/lists/tuples of them")


def _header_bytes(header):
    """The header JSON, compact (so the checksum field has one spelling) and padded with
    spaces so that the tensor data starts at a multiple of 8 bytes, as safetensors does."""
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=True).encode()
    return text + b" " * (-(8 + len(text)) % 8)


def _write(out, arrays, structure):
    header, offset = {}, 0
    for name, array in arrays.items():
        header[name] = {"dtype": _dtype_code(name, array.dtype), "shape": list(array.shape),
                        "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    header["__metadata__"] = {"checksum": "00000000", "format": FORMAT,
                              "structure": json.dumps(structure)}
    text = _header_bytes(header)
    prefix = struct.pack("<Q", len(text))
    crc = zlib.crc32(prefix + text, _crc_of_arrays(arrays.values()))
    text = text.replace(_UNSET, b'"checksum":"%08x"' % crc, 1)
    out.write(prefix)
    out.write(text)
    for array in arrays.values():
        out.write(_bytes_of(array))


def _dtype_code(name, dtype):
    code = _CODES.get(dtype.name)
    if code is None:
        raise TypeError(f"save: tensor '{name}' is {dtype}; checkpoints hold "
                        f"{', '.join(_CODES)}")
    return code


def _bytes_of(array):
    return array.reshape(-1).view("uint8")  # a flat byte view: also right for 0-d and empty


def _crc_of_arrays(arrays, crc=0):
    for array in arrays:
        crc = zlib.crc32(_bytes_of(array), crc)
    return crc


# --- atomic write --------------------------------------------------------------------------------
def atomic_write(path, write, mode="wb", encoding="utf-8"):
    """Call write(file) on a new temporary file beside `path`, fsync it and rename it over
    `path`, so that whatever happens (an exception inside `write`, a full disk, a crash, a
    reader in another process) `path` holds its old content or the new one, never a truncated
    or half-new file. On failure the temporary file is removed and the exception propagates;
    those of a killed process are removed by the next write to the same path.

    mode: "wb" (write gets a binary file) or "w" (a text file in `encoding`). The directory must
    exist. Every writer of user files in tensorgrad, tensorgrad.nn and tensorgrad.models goes
    through here: `save`, `save_pretrained` (config and weights), tokenizers' `save`, pictures.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_write: mode must be 'wb' or 'w', got {mode!r}")
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"cannot write {path}: directory {directory} does not exist")
    base = os.path.basename(path)
    _remove_stale_temporaries(directory, base)
    # The writer's pid in the name tells the next write whether this file is still being written.
    # Made with os.open, not mkstemp (whose files are private, 0o600), so that the new file gets
    # the permissions open() would give it (0o666 less the umask), or those of the file it
    # replaces. O_BINARY: on Windows the bytes' newlines would otherwise be translated.
    tmp = os.path.join(directory, f".{base}.{os.getpid()}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    text = {} if mode == "wb" else {"encoding": encoding}
    try:
        with os.fdopen(fd, mode, **text) as f:
            with contextlib.suppress(FileNotFoundError):
                os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
            write(f)
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


def _remove_stale_temporaries(directory, base):
    """Delete `.{base}.{pid}.*.tmp` files left by writes that died (their process is gone). A
    write still running in another process keeps its file; this process's own are in flight in
    another thread, since a failing write removes its file itself."""
    prefix = f".{base}."
    for entry in os.listdir(directory):
        # Exactly .{base}.{pid}.{random}.tmp: a longer name is another file's temporary
        # (".ckpt.pt.bak.<pid>..." belongs to ckpt.pt.bak, not to ckpt.pt).
        parts = entry[len(prefix):].split(".") if entry.startswith(prefix) else []
        if len(parts) != 3 or parts[2] != "tmp" or not parts[0].isdigit():
            continue
        pid = int(parts[0])
        if pid == os.getpid() or _process_alive(pid):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, entry))


def _process_alive(pid):
    if os.name != "posix":  # os.kill(pid, 0) would terminate the process on Windows
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


# --- loading -------------------------------------------------------------------------------------
def load(f, map_location=None, *, weights_only=None):
    """Read a checkpoint written by `save` from a path or a binary file, or any safetensors
    file as a flat {name: Tensor} dict.

    map_location: None puts each tensor back on the device it was saved from (as PyTorch
    does); a device string puts all on that device; a dict {"cuda:0": "cpu"} remaps devices.
    weights_only: accepted for PyTorch compatibility; loading is always "weights only" (tensors
    and plain values, nothing executed), whatever it says.
    Loaded tensors are plain Tensors (requires_grad as saved). Raises CheckpointError naming the
    file when it is truncated, corrupt, or a pickle (which is never loaded).
    """
    _check_map_location(map_location)
    if hasattr(f, "read"):
        name = getattr(f, "name", type(f).__name__)
        return _load(f, str(name), map_location)
    path = os.fspath(f)
    if not os.path.exists(path):
        raise FileNotFoundError(f"load: no checkpoint at {path}")
    with open(path, "rb") as file:
        return _load(file, path, map_location)


def _load(f, name, map_location):
    if not f.seekable():
        f = io.BytesIO(f.read())
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(0)
    prefix = f.read(8)
    _refuse_pickle(prefix + f.read(1), name)
    f.seek(8)
    try:
        header, text = _read_header(f, prefix, size, name)
        metadata = header.pop("__metadata__", None) or {}
        if not isinstance(metadata, dict):
            raise ValueError("its __metadata__ is not a JSON object")
        arrays, crc = _read_arrays(f, header, size - 8 - len(text), name)
    except CheckpointError:
        raise
    except (ValueError, TypeError, KeyError, RecursionError, OverflowError, EOFError) as exc:
        raise CheckpointError(f"load: {name} is not a readable safetensors file; it may be "
                              f"truncated or corrupt ({type(exc).__name__}: {exc})") from None
    kind = _kind(metadata)
    if kind == "plain":
        return {key: _place(array, None, map_location) for key, array in arrays.items()}
    if kind == _FORMAT_1:
        if str(_crc_of_v1(arrays)) != metadata["crc32"]:
            raise CheckpointError(f"load: {name} is corrupt: its tensor data does not match the "
                                  "checksum written with it")
    else:
        _verify(text, prefix, crc, metadata, name)
    try:
        return _decode(json.loads(metadata["structure"]), arrays, map_location)
    except RecursionError:
        raise CheckpointError(f"load: {name} has a structure nested too deeply to read") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"load: {name} has a damaged structure ({exc})") from None


def _refuse_pickle(start, name):
    # torch.save writes a zip archive holding a pickle; older torch and pickle.dump start with
    # the pickle opcode PROTO (0x80) and a protocol number. A safetensors header length can
    # start with those bytes too; its header JSON then starts with "{" at byte 8.
    if start[8:9] == b"{":
        return
    if start.startswith(b"PK\x03\x04") or (start[:1] == b"\x80" and start[1:2] in b"\2\3\4\5"):
        what = "a zip archive (torch.save's format, a pickle inside)" if start[:1] == b"P" \
            else "a pickle"
        raise CheckpointError(
            f"load: {name} is {what}, not a safetensors checkpoint. tensorgrad never unpickles: "
            "unpickling runs whatever code the file contains. Convert it where it was made, e.g. "
            "safetensors.torch.save_file(torch.load(path), 'model.safetensors'), and load that.")


def _read_header(f, prefix, size, name):
    if len(prefix) < 8:
        raise CheckpointError(f"load: {name} is truncated or corrupt: {size} bytes, shorter "
                              "than a safetensors header")
    (length,) = struct.unpack("<Q", prefix)
    if length > min(size - 8, _MAX_HEADER):
        raise CheckpointError(f"load: {name} is truncated or corrupt: its header claims "
                              f"{length} bytes, the file has {size}")
    text = f.read(length)
    header = json.loads(text)
    if not isinstance(header, dict):
        raise ValueError("the header is not a JSON object")
    return header, text


def _read_arrays(f, header, data_size, name):
    """Each tensor of the header, read into a fresh host array in file order, and the CRC-32 of
    their bytes. The tensors must tile the data exactly, as safetensors requires."""
    numpy = _backends.get_backend("cpu")
    entries = sorted(header.items(), key=lambda item: tuple(item[1]["data_offsets"]))
    arrays, crc, end = {}, 0, 0
    for key, entry in entries:
        code, shape, (begin, stop) = entry["dtype"], entry["shape"], entry["data_offsets"]
        if code not in _DTYPES:
            raise CheckpointError(f"load: tensor {key!r} in {name} is {code}, which NumPy "
                                  f"cannot hold; supported: {', '.join(_DTYPES)}")
        dtype = _backends.as_dtype(_DTYPES[code])
        # Sizes are checked before allocating: a damaged shape must not ask for terabytes.
        nbytes = math.prod(int(s) for s in shape) * dtype.itemsize
        if begin != end or stop - begin != nbytes or stop > data_size:
            raise ValueError(f"tensor {key!r} has data_offsets [{begin}, {stop}], expected "
                             f"[{end}, {end + nbytes}] for {code} of shape {shape} in "
                             f"{data_size} bytes of data")
        array = numpy.empty([int(s) for s in shape], dtype=dtype)
        if f.readinto(_bytes_of(array)) != array.nbytes:
            raise EOFError(f"the data of tensor {key!r} is cut short")
        crc = zlib.crc32(_bytes_of(array), crc)
        arrays[key], end = array, stop
    if end != data_size:
        raise ValueError(f"the tensors cover {end} bytes of data, the file holds {data_size}")
    return {key: arrays[key] for key in header}, crc


def _kind(metadata):
    """'plain' for a foreign safetensors file, else which of our formats. A single damaged key
    cannot make one of our files look foreign: it would need to lose all of these."""
    ours = {"structure", "checksum", "crc32"} & set(metadata) or \
        str(metadata.get("format", "")).startswith("tensorgrad")
    if not ours:
        return "plain"
    if metadata.get("format") == _FORMAT_1 and "crc32" in metadata and "checksum" not in metadata:
        return _FORMAT_1
    return FORMAT


def _verify(text, prefix, data_crc, metadata, name):
    written = metadata.get("checksum")
    field = b'"checksum":"%s"' % str(written).encode()
    if (metadata.get("format") != FORMAT or "structure" not in metadata
            or not isinstance(written, str) or len(written) != 8 or text.count(field) != 1):
        raise CheckpointError(f"load: {name} is corrupt: its header's format, structure or "
                              "checksum entry is damaged")
    crc = zlib.crc32(prefix + text.replace(field, _UNSET), data_crc)
    if "%08x" % crc != written:
        raise CheckpointError(f"load: {name} is corrupt: its bytes do not match the checksum "
                              "written with them (header or tensor data changed)")


def _crc_of_v1(arrays):
    crc = 0
    for key in sorted(arrays):
        crc = zlib.crc32(_bytes_of(arrays[key]), zlib.crc32(key.encode(), crc))
    return crc


# --- structure -> objects ------------------------------------------------------------------------
def _decode(value, arrays, map_location, placed=None):
    placed = {} if placed is None else placed  # a tensor referenced twice loads as one
    if isinstance(value, list):
        return [_decode(v, arrays, map_location, placed) for v in value]
    if not isinstance(value, dict):
        return value
    if "__tensor__" in value:
        key = value["__tensor__"]
        if key not in placed:
            if key not in arrays:
                raise KeyError(f"it names tensor {key!r}, which the file does not hold")
            t = _place(arrays[key], value.get("device"), map_location)
            placed[key] = t.requires_grad_(True) if value.get("requires_grad") else t
        return placed[key]
    if "__tuple__" in value:
        return tuple(_decode(v, arrays, map_location, placed) for v in value["__tuple__"])
    if "__items__" in value:
        return {k: _decode(v, arrays, map_location, placed) for k, v in value["__items__"]}
    return {k: _decode(v, arrays, map_location, placed) for k, v in value.items()}


def _check_map_location(map_location):
    devices = map_location.values() if isinstance(map_location, dict) else [map_location]
    for device in devices:
        if device is not None and not isinstance(device, str):
            raise TypeError(f"load: map_location must be None, a device string or a dict of "
                            f"device strings, got {map_location!r}")
        _backends.normalize_device(device)  # an unknown device is an error now, not later


def _place(array, saved_device, map_location):
    device = saved_device or "cpu"
    if isinstance(map_location, dict):
        device = map_location.get(device, device)
    elif map_location is not None:
        device = map_location
    if _backends.normalize_device(device) == "cpu":
        return from_numpy(array)  # the array is fresh: no copy needed
    return tensor(array, device=device)
