"""models/hub.py: Hugging Face folders are written atomically file by file, weights before the
config, byte for byte what safetensors' save_file writes; a failed save changes nothing.
(That transformers loads the folders: test_gpt.py, test_bert.py, test_t5.py, test_vit.py.)"""
import errno
import io
import json

import pytest

import tensorgrad as tg
from tensorgrad import serialization
from tensorgrad.models import GPT, GPTConfig, hub


def _files(folder):
    """{relative path: bytes} of everything under `folder`, temporary files included."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _disk_full_halfway(path, write, **kwargs):
    """atomic_write on a disk that fills up after half of the file's bytes."""
    def half(f):
        buffer = io.BytesIO()
        write(buffer)
        f.write(buffer.getvalue()[:buffer.tell() // 2])
        f.flush()
        raise OSError(errno.ENOSPC, "No space left on device")
    serialization.atomic_write(path, half, **kwargs)


def _unreadable_tensor(monkeypatch, count=2):
    """Make the `count`-th Tensor.numpy() call fail (a tensor on a lost device, say), so that
    the tensors before it were converted."""
    numpy, calls = tg.Tensor.numpy, []

    def failing(self, *args, **kwargs):
        calls.append(self)
        if len(calls) == count:
            raise RuntimeError("cannot copy the tensor to the host")
        return numpy(self, *args, **kwargs)
    monkeypatch.setattr(tg.Tensor, "numpy", failing)


@pytest.mark.parametrize("failure", ["disk full", "unreadable tensor"])
def test_a_failed_save_leaves_the_previous_checkpoint_byte_identical(tmp_path, monkeypatch,
                                                                     failure):
    GPT(GPTConfig.tiny()).save_pretrained(tmp_path)
    (tmp_path / "README.md").write_text("the user's own file")
    before = _files(tmp_path)
    bigger = GPT(GPTConfig.tiny(n_layer=3))  # a different config: its bytes differ too
    if failure == "disk full":
        monkeypatch.setattr(hub, "atomic_write", _disk_full_halfway)
        with pytest.raises(OSError, match="No space left"):
            bigger.save_pretrained(tmp_path)
    else:
        _unreadable_tensor(monkeypatch)
        with pytest.raises(RuntimeError, match="cannot copy"):
            bigger.save_pretrained(tmp_path)
    # Nothing changed and nothing was left behind; a full disk on the weights (written first)
    # also means the config was never touched.
    assert _files(tmp_path) == before
    monkeypatch.undo()
    bigger.save_pretrained(tmp_path)
    assert sorted(_files(tmp_path)) == ["README.md", "config.json", "model.safetensors"]
    assert json.loads((tmp_path / "config.json").read_text())["n_layer"] == 3


def test_weights_are_written_before_the_config(tmp_path, monkeypatch):
    written = []

    def recording(path, write, **kwargs):
        written.append(path)
        serialization.atomic_write(path, write, **kwargs)
    monkeypatch.setattr(hub, "atomic_write", recording)
    hub.write_folder(tmp_path / "new" / "folder", {"model_type": "gpt2"}, {"w": tg.ones(2)})
    assert [p.rsplit("/", 1)[1] for p in written] == ["model.safetensors", "config.json"]


def test_the_weights_are_what_save_file_writes_and_round_trip(tmp_path):
    from safetensors.numpy import save_file

    state = {"b": tg.arange(6.0).reshape(2, 3).t(), "a": tg.tensor([1, 2, 3]),  # non-contiguous
             "h": tg.ones(2, dtype=tg.float16)}
    config = {"model_type": "gpt2", "n_layer": 1, "name": "naïve"}
    hub.write_folder(tmp_path, config, state)
    save_file({k: t.contiguous().numpy() for k, t in state.items()}, tmp_path / "ref.safetensors",
              metadata={"format": "pt"})
    assert (tmp_path / "model.safetensors").read_bytes() == \
        (tmp_path / "ref.safetensors").read_bytes()
    assert (tmp_path / "config.json").read_text() == json.dumps(config, indent=2)
    back_config, back = hub.read_folder(tmp_path)
    assert back_config == config
    assert {k: (t.dtype, t.tolist()) for k, t in back.items()} == \
        {k: (t.dtype, t.tolist()) for k, t in state.items()}
