"""Byte flips anywhere in a checkpoint are always detected: the header length, the header's
tensor table, the metadata JSON (format, structure, checksum) and the tensor data. Every damaged
file is a CheckpointError naming it, never a wrong value or another exception."""
import io
import json
import random
import struct

import pytest

import tensorgrad as tg
from tensorgrad import serialization

CHECKPOINT = {
    "model": {"fc.weight": tg.arange(256, dtype=tg.float32).reshape(16, 16),
              "fc.bias": tg.zeros(16), "mask": tg.tensor([True, False, True])},
    "optimizer": {"state": {0: {"step": 123, "exp_avg": tg.ones(4, dtype=tg.float64)}},
                  "param_groups": [{"lr": 0.001, "betas": (0.9, 0.999), "params": [0]}]},
    "iter_num": 123, "name": "gpt-mini", "flags": [True, None, 2.5],
}


def _saved():
    buffer = io.BytesIO()
    tg.save(CHECKPOINT, buffer)
    return buffer.getvalue()


def _regions(data):
    """Byte ranges of each position class of a saved file."""
    (length,) = struct.unpack("<Q", data[:8])
    header = data[8:8 + length]
    meta = header.index(b'"__metadata__"')
    meta_end = len(header.rstrip(b" "))  # the metadata is the header's last entry
    return {"header length": range(0, 8),
            "header tensor table": range(8, 8 + meta),
            "metadata JSON": range(8 + meta, 8 + meta_end),
            "header padding": range(8 + meta_end, 8 + length),
            "tensor data": range(8 + length, len(data))}


def _expect_detected(data, where):
    with pytest.raises(tg.CheckpointError, match="<damaged>") as info:
        tg.load(_Named(data))
    assert "<damaged>" in str(info.value), where


class _Named(io.BytesIO):
    name = "<damaged>"


def test_the_regions_cover_the_whole_file():
    data = _saved()
    regions = _regions(data)
    assert sum(len(r) for r in regions.values()) == len(data)
    assert all(len(r) for name, r in regions.items() if name != "header padding")
    metadata = data[regions["metadata JSON"].start:regions["metadata JSON"].stop - 1]
    assert json.loads(metadata.decode().split(":", 1)[1])["format"] == serialization.FORMAT
    assert tg.load(_Named(data))["iter_num"] == 123  # undamaged, it loads


@pytest.mark.parametrize("region", ["header length", "header tensor table", "metadata JSON",
                                    "header padding", "tensor data"])
@pytest.mark.parametrize("mask", [0x01, 0x80, 0xFF, 0x35])
def test_every_flipped_byte_is_detected(region, mask):
    data = _saved()
    positions = _regions(data)[region]
    for pos in positions:  # every byte of the file, four ways
        damaged = bytearray(data)
        damaged[pos] ^= mask
        _expect_detected(bytes(damaged), f"{region} byte {pos} ^ {mask:#x}")


@pytest.mark.slow
def test_random_flips_in_a_large_checkpoint_are_detected():
    rng = random.Random(0)
    buffer = io.BytesIO()
    tg.save({"model": {f"h.{i}.w": tg.randn(256, 256) for i in range(4)}, "step": 7}, buffer)
    data = buffer.getvalue()
    for _ in range(2000):
        damaged = bytearray(data)
        pos = rng.randrange(len(data))
        damaged[pos] ^= rng.randrange(1, 256)
        _expect_detected(bytes(damaged), f"byte {pos}")


def test_every_truncation_and_any_appended_bytes_are_detected():
    data = _saved()
    for cut in range(len(data)):
        _expect_detected(data[:cut], f"cut at {cut}")
    for extra in (b"\0", b" " * 8, data[-16:]):
        _expect_detected(data + extra, f"{len(extra)} bytes appended")


def test_two_byte_edits_that_keep_the_json_valid_are_detected():
    """The header edits the issue reported as silent: a shape, a dtype, a stored integer,
    a string, a dropped key."""
    data = _saved()
    edits = [(b'"shape":[16,16]', b'"shape":[64,04]'), (b'"dtype":"F32"', b'"dtype":"I32"'),
             (b'\\"iter_num\\": 123', b'\\"iter_num\\": 923'),
             (b'\\"gpt-mini\\"', b'\\"gpt-maxi\\"'),
             (b'\\"name\\": \\"gpt-mini\\", ', b" " * 24)]  # the key dropped, JSON valid
    for old, new in edits:
        assert data.count(old) >= 1 and len(old) == len(new), old
        _expect_detected(data.replace(old, new, 1), f"{old} -> {new}")


def test_a_shape_claiming_terabytes_is_refused_before_allocating():
    """A foreign safetensors file (no checksum) whose header is well-formed but lies."""
    header = json.dumps({"w": {"dtype": "F32", "shape": [10**12],
                               "data_offsets": [0, 16]}}).encode()
    data = struct.pack("<Q", len(header)) + header + bytes(16)
    with pytest.raises(tg.CheckpointError, match="corrupt .*shape \\[1000000000000\\]"):
        tg.load(_Named(data))


def _with_structure(structure, arrays=None):
    """A file whose checksum is right but whose structure is the given (hand-made) one."""
    buffer = _Named()
    serialization._write(buffer, arrays or {}, structure)
    return _Named(buffer.getvalue())


def test_a_structure_naming_a_missing_tensor_is_a_checkpoint_error():
    with pytest.raises(tg.CheckpointError, match="names tensor 'ghost', which the file does not"):
        tg.load(_with_structure({"w": {"__tensor__": "ghost"}}))


@pytest.mark.parametrize("structure", [{"__tuple__": 5}, {"__items__": [[1, 2, 3]]},
                                       {"__items__": [[[1], 2]]}])
def test_malformed_structure_markers_are_checkpoint_errors(structure):
    with pytest.raises(tg.CheckpointError, match="damaged structure"):
        tg.load(_with_structure(structure))


def test_a_structure_nested_100000_deep_is_a_checkpoint_error():
    nested = json.loads("[" * 50 + "]" * 50)
    assert tg.load(_with_structure(nested)) == nested  # moderate nesting is fine
    with pytest.raises(tg.CheckpointError, match="nested too deeply"):
        tg.load(_with_raw_structure("[" * 100_000 + "]" * 100_000))


def _with_raw_structure(text):
    """Like _with_structure, for structure text that json.dumps could not produce from Python
    objects (nesting deeper than the recursion limit)."""
    original = serialization.json.dumps
    buffer = _Named()

    def dumps(obj, **kwargs):
        return text if obj == "<raw>" else original(obj, **kwargs)

    serialization.json.dumps = dumps
    try:
        serialization._write(buffer, {}, "<raw>")
    finally:
        serialization.json.dumps = original
    return _Named(buffer.getvalue())
