"""tensorgrad.save / tensorgrad.load: round trips, file objects, devices, shared tensors, the
first format, pickles refused, temporary files of killed saves cleaned up, `atomic_write`."""
import io
import json
import os
import pickle
import subprocess
import sys
import zlib

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.serialization import atomic_write


def test_a_training_checkpoint_round_trips(tmp_path):
    obj = {"model": {"wte.weight": tg.randn(5, 3), "ln.bias": tg.zeros(3, dtype=tg.float64)},
           "iter_num": 5, "best_val_loss": 1.25, "config": {"n_layer": 2, "bias": False,
                                                           "dataset": "shakespeare_char"},
           "history": [(1, 2.0), None], "ids": tg.tensor([[1, 2]], dtype=tg.int32),
           "scalar": tg.tensor(3.5), "empty": tg.zeros(0, 4)}
    tg.save(obj, tmp_path / "ckpt.pt")
    back = tg.load(tmp_path / "ckpt.pt")
    assert back["iter_num"] == 5 and back["best_val_loss"] == 1.25
    assert back["config"] == obj["config"] and back["history"] == [(1, 2.0), None]
    for key in ("ids", "scalar", "empty"):
        assert back[key].dtype == obj[key].dtype and back[key].shape == obj[key].shape
        np.testing.assert_array_equal(back[key].numpy(), obj[key].numpy())
    for key, value in obj["model"].items():
        assert back["model"][key].dtype == value.dtype
        np.testing.assert_array_equal(back["model"][key].numpy(), value.numpy())


def test_keys_that_collide_in_the_header_still_round_trip():
    obj = {"__metadata__": tg.ones(2), "a.b": tg.zeros(1), "a": {"b": tg.full((1,), 3.0)},
           "naïve": tg.arange(2)}
    buffer = io.BytesIO()
    tg.save(obj, buffer)
    buffer.seek(0)
    back = tg.load(buffer)
    assert back["__metadata__"].tolist() == [1.0, 1.0] and back["naïve"].tolist() == [0, 1]
    assert back["a.b"].tolist() == [0.0] and back["a"]["b"].tolist() == [3.0]


def test_loaded_tensors_are_fresh_and_writable(tmp_path):
    tg.save({"w": tg.ones(3)}, tmp_path / "c.safetensors")
    w = tg.load(tmp_path / "c.safetensors")["w"]
    w.add_(1.0)
    assert w.tolist() == [2.0, 2.0, 2.0]


def test_weights_only_is_accepted_and_loading_is_always_weights_only(tmp_path):
    tg.save({"w": tg.ones(1)}, tmp_path / "c.pt")
    for weights_only in (None, True, False):
        assert tg.load(tmp_path / "c.pt", weights_only=weights_only)["w"].tolist() == [1.0]


def test_file_objects_work_like_paths():
    buffer = io.BytesIO()
    tg.save({"w": tg.arange(4), "step": 2}, buffer)
    buffer.seek(0)
    back = tg.load(buffer)
    assert back["step"] == 2 and back["w"].tolist() == [0, 1, 2, 3]


def test_a_tensor_reached_twice_is_stored_once_and_loads_as_one(tmp_path):
    tied = tg.randn(50, 8)
    tg.save({"wte.weight": tied, "lm_head.weight": tied}, tmp_path / "tied.safetensors")
    back = tg.load(tmp_path / "tied.safetensors")
    assert back["wte.weight"] is back["lm_head.weight"]
    single = tmp_path / "single.safetensors"
    tg.save({"wte.weight": tied}, single)
    assert os.path.getsize(tmp_path / "tied.safetensors") < os.path.getsize(single) + 200


def test_map_location(tmp_path, device):
    tg.save({"w": tg.ones(2, device=device)}, tmp_path / "c.safetensors")
    assert tg.load(tmp_path / "c.safetensors")["w"].device == tg.backend.normalize_device(device)
    assert tg.load(tmp_path / "c.safetensors", map_location="cpu")["w"].device == "cpu"
    remap = {tg.backend.normalize_device(device): "cpu"}
    assert tg.load(tmp_path / "c.safetensors", map_location=remap)["w"].device == "cpu"
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        tg.load(tmp_path / "c.safetensors", map_location="tpu")
    with pytest.raises(TypeError, match="map_location must be None, a device string or a dict"):
        tg.load(tmp_path / "c.safetensors", map_location=lambda storage, loc: storage)


def test_the_safetensors_package_reads_our_files(tmp_path):
    safetensors = pytest.importorskip("safetensors")
    path = tmp_path / "c.safetensors"
    tg.save({"step": 10, "w": tg.arange(6, dtype=tg.float32).reshape(2, 3)}, path)
    with safetensors.safe_open(str(path), framework="numpy") as f:
        assert list(f.keys()) == ["w"] and f.get_tensor("w").tolist() == [[0, 1, 2], [3, 4, 5]]
        assert json.loads(f.metadata()["structure"])["step"] == 10


def test_files_of_the_first_format_still_load(tmp_path):
    """Format 1 (checksum over tensor names and bytes only) stays readable, with that check."""
    st = pytest.importorskip("safetensors.numpy")
    arrays = {"w": np.arange(3, dtype="float32")}
    crc = zlib.crc32(arrays["w"], zlib.crc32(b"w"))
    metadata = {"format": "tensorgrad-checkpoint-1", "crc32": str(crc),
                "structure": json.dumps({"w": {"__tensor__": "w"}, "step": 3})}
    path = tmp_path / "v1.safetensors"
    path.write_bytes(st.save(arrays, metadata=metadata))
    back = tg.load(path)
    assert back["step"] == 3 and back["w"].tolist() == [0.0, 1.0, 2.0]
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(tg.CheckpointError, match="tensor data does not match the checksum"):
        tg.load(path)


# --- pickles are refused -------------------------------------------------------------------------
def test_a_torch_save_file_is_refused_with_the_reason(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2), "step": 1}, path)
    with pytest.raises(tg.CheckpointError, match="model.pt is a zip archive .*torch.save") as info:
        tg.load(path)
    assert "never unpickles" in str(info.value) and "runs whatever code" in str(info.value)


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_a_pickle_file_is_refused(tmp_path, protocol):
    path = tmp_path / "state.pkl"
    path.write_bytes(pickle.dumps({"step": 1}, protocol=protocol))
    with pytest.raises(tg.CheckpointError, match="is a pickle, not a safetensors checkpoint"):
        tg.load(path)


def test_header_lengths_that_look_like_a_pickle_opcode_still_load():
    """A header of 0x280 bytes starts the file with 0x80 0x02, pickle protocol 2's opening."""
    for width in range(400, 700):
        buffer = io.BytesIO()
        tg.save({"k" * width: 1}, buffer)
        data = buffer.getvalue()
        if data[:2] == b"\x80\x02":
            assert tg.load(io.BytesIO(data)) == {"k" * width: 1}
            return
    pytest.fail("no header length of the form 0x..80 0x02 was produced")


# --- temporary files -----------------------------------------------------------------------------
def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_next_save_removes_temporaries_of_dead_saves_only(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    tg.save({"step": 1}, path)
    dead = tmp_path / f".ckpt.safetensors.{_dead_pid()}.abc123.tmp"
    dead.write_bytes(b"half a checkpoint")
    alive = tmp_path / f".ckpt.safetensors.{os.getppid()}.def456.tmp"  # another live writer
    alive.write_bytes(b"being written")
    dead_pid = dead.name.split(".")[3]
    others = [tmp_path / f".other.safetensors.{dead_pid}.x.tmp",  # other checkpoints' files
              tmp_path / f".ckpt.safetensors.bak.{dead_pid}.x.tmp"]
    for other in others:
        other.write_bytes(b"")
    assert tg.load(path) == {"step": 1}  # a leftover temporary never stands in for the file
    tg.save({"step": 2}, path)
    assert sorted(os.listdir(tmp_path)) == sorted([path.name, alive.name] + [o.name
                                                                           for o in others])
    assert tg.load(path) == {"step": 2}


def test_atomic_write_modes_and_errors(tmp_path):
    path = tmp_path / "notes.txt"
    atomic_write(path, lambda f: f.write("café\n"), mode="w")
    assert path.read_bytes() == "café\n".encode()
    with pytest.raises(ValueError, match="atomic_write: mode must be 'wb' or 'w', got 'a'"):
        atomic_write(path, lambda f: None, mode="a")
    with pytest.raises(FileNotFoundError, match=f"directory {tmp_path}/missing does not exist"):
        atomic_write(tmp_path / "missing" / "x", lambda f: None)
    with pytest.raises(KeyboardInterrupt):  # even an interrupt leaves the old file alone
        atomic_write(path, lambda f: (f.write(b"half"), _interrupt()))
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
    assert path.read_text(encoding="utf-8") == "café\n"


def _interrupt():
    raise KeyboardInterrupt


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_atomic_write_gives_the_permissions_open_would(tmp_path):
    umask = os.umask(0o027)
    try:
        atomic_write(tmp_path / "new.json", lambda f: f.write(b"{}"))
    finally:
        os.umask(umask)
    assert (tmp_path / "new.json").stat().st_mode & 0o777 == 0o640  # not mkstemp's 0o600
    (tmp_path / "new.json").chmod(0o604)
    atomic_write(tmp_path / "new.json", lambda f: f.write(b"[]"))
    assert (tmp_path / "new.json").stat().st_mode & 0o777 == 0o604  # the replaced file's

