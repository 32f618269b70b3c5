"""nn.save / nn.load (tensorgrad.save underneath): round trips, exact resumption, atomic writes
under crashes, damaged files. tests/reliability/ attacks the format harder."""
import json
import math
import os

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import optim
from tensorgrad.nn.optim import lr_scheduler


def _mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3))


# --- round trips ---------------------------------------------------------------------------------
def test_nested_structures_round_trip(tmp_path):
    obj = {
        "weights": {"a": tg.randn(2, 3), "b": tg.arange(4), "mask": tg.tensor([True, False])},
        "scalar": tg.tensor(2.5, dtype=tg.float64),
        "half": tg.ones(3, dtype=tg.float16),
        "by_index": {0: {"step": 3, "m": tg.zeros(2)}, 7: "seven"},
        "betas": (0.9, 0.999),
        "history": [1, 2.5, None, True, "text", [float("inf")]],
        "weird": {"__tensor__": "not a tensor", "a.b": tg.ones(1)},
        "empty": {},
    }
    path = tmp_path / "ckpt.safetensors"
    nn.save(obj, path)
    back = nn.load(path)
    assert back["by_index"][0]["step"] == 3 and back["by_index"][7] == "seven"
    assert back["betas"] == (0.9, 0.999) and back["history"] == obj["history"]
    assert back["weird"]["__tensor__"] == "not a tensor" and back["empty"] == {}
    for key in ("a", "b", "mask"):
        assert back["weights"][key].dtype == obj["weights"][key].dtype
        np.testing.assert_array_equal(back["weights"][key].numpy(), obj["weights"][key].numpy())
    assert back["scalar"].shape == () and back["scalar"].dtype == tg.float64
    assert back["half"].dtype == tg.float16
    assert back["weird"]["a.b"].tolist() == [1.0]


def test_non_contiguous_and_grad_tensors_are_saved_by_value(tmp_path):
    x = tg.randn(3, 4, requires_grad=True)
    nn.save({"t": x.detach().T, "p": nn.Parameter(tg.ones(2))}, tmp_path / "c.safetensors")
    back = nn.load(tmp_path / "c.safetensors")
    np.testing.assert_array_equal(back["t"].numpy(), x.detach().numpy().T)
    assert back["p"].requires_grad and back["p"].is_leaf  # as torch.load restores it


def test_metadata_is_plain_json_in_the_safetensors_header(tmp_path):
    safetensors = pytest.importorskip("safetensors")
    path = tmp_path / "c.safetensors"
    nn.save({"step": 10, "config": {"lr": 1e-3}, "w": tg.ones(2)}, path)
    with safetensors.safe_open(str(path), framework="numpy") as f:
        structure = json.loads(f.metadata()["structure"])
        assert list(f.keys()) == ["w"]
    assert structure == {"step": 10, "config": {"lr": 1e-3}, "w": {"__tensor__": "w"}}


def test_plain_safetensors_files_load_as_a_flat_dict(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    path = tmp_path / "hf.safetensors"
    st.save_file({"h.0.attn.weight": np.ones((2, 2), "float32")}, str(path))
    back = nn.load(path)
    assert list(back) == ["h.0.attn.weight"] and back["h.0.attn.weight"].tolist() == [[1, 1]] * 2


def test_dtypes_numpy_cannot_hold_are_named(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file
    path = tmp_path / "f8.safetensors"
    save_file({"w": torch.ones(2, dtype=torch.float8_e4m3fn)}, str(path))
    with pytest.raises(nn.CheckpointError, match="tensor 'w' in .*f8.safetensors is F8_E4M3"):
        nn.load(path)
    save_file({"w": torch.ones(2, dtype=torch.bfloat16)}, str(path))  # bfloat16 loads
    assert nn.load(path)["w"].dtype is tg.bfloat16


def test_load_onto_a_device(tmp_path, device):
    nn.save({"w": tg.ones(2)}, tmp_path / "c.safetensors")
    w = nn.load(tmp_path / "c.safetensors", device=device)["w"]
    assert w.device == tg.backend.normalize_device(device)


def test_unsupported_values_are_named(tmp_path):
    with pytest.raises(TypeError, match="cannot store a set at 'config.tags'"):
        nn.save({"config": {"tags": {"a"}}}, tmp_path / "c.safetensors")
    with pytest.raises(TypeError, match="dict key"):
        nn.save({(1, 2): 3}, tmp_path / "c.safetensors")
    assert not os.listdir(tmp_path)


# --- exact resumption ----------------------------------------------------------------------------
def _training_run(model, opt, scheduler, steps, data):
    x, y = data
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        scheduler.step()


def _setup(seed):
    tg.manual_seed(seed)
    model = _mlp()
    decay = [p for n, p in model.named_parameters() if n.endswith("weight") and p.ndim == 2]
    rest = [p for n, p in model.named_parameters() if not (n.endswith("weight") and p.ndim == 2)]
    opt = optim.AdamW([{"params": decay}, {"params": rest, "weight_decay": 0.0}], lr=3e-3)
    return model, opt, lr_scheduler.WarmupCosineLR(opt, warmup_steps=3, total_steps=12)


def test_save_load_continue_is_bit_identical_to_an_uninterrupted_run(tmp_path):
    data = (tg.randn(32, 6), tg.randint(0, 3, (32,)))
    model, opt, scheduler = _setup(seed=1)
    _training_run(model, opt, scheduler, 12, data)

    model2, opt2, scheduler2 = _setup(seed=1)
    _training_run(model2, opt2, scheduler2, 5, data)
    path = tmp_path / "run.safetensors"
    nn.save({"model": model2.state_dict(), "optim": opt2.state_dict(),
             "sched": scheduler2.state_dict(), "step": 5, "config": {"hidden": 16}}, path)
    del model2, opt2, scheduler2

    model3, opt3, scheduler3 = _setup(seed=99)  # different init: everything must come from disk
    ckpt = nn.load(path)
    model3.load_state_dict(ckpt["model"])
    opt3.load_state_dict(ckpt["optim"])
    scheduler3.load_state_dict(ckpt["sched"])
    assert ckpt["step"] == 5 and ckpt["config"] == {"hidden": 16}
    assert opt3.param_groups[0]["betas"] == (0.9, 0.999)
    _training_run(model3, opt3, scheduler3, 12 - ckpt["step"], data)
    for (name, a), b in zip(model.named_parameters(), model3.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy(), err_msg=name)
        assert b.dtype == tg.float32 and opt3.state[b]["exp_avg"].dtype == tg.float32


def test_tensorgrad_save_round_trips_an_optimizer_state_dict(tmp_path):
    model, opt, scheduler = _setup(seed=3)
    _training_run(model, opt, scheduler, 2, (tg.randn(8, 6), tg.randint(0, 3, (8,))))
    path = tmp_path / "ckpt.pt"
    tg.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "iter_num": 2,
             "config": {"lr": 3e-3, "betas": (0.9, 0.999)}}, path)
    back = tg.load(path)
    saved, loaded = opt.state_dict(), back["optimizer"]
    assert loaded["param_groups"] == saved["param_groups"]
    assert sorted(loaded["state"]) == sorted(saved["state"]) == list(range(6))
    for index, state in saved["state"].items():
        assert loaded["state"][index]["step"] == state["step"] == 2
        for key in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_array_equal(loaded["state"][index][key].numpy(),
                                          state[key].numpy())
    assert back["iter_num"] == 2 and back["config"]["betas"] == (0.9, 0.999)
    _, opt2, _ = _setup(seed=4)
    opt2.load_state_dict(loaded)
    assert opt2.state_dict()["param_groups"] == saved["param_groups"]


def test_loading_a_mismatched_state_dict_names_each_problem(tmp_path):
    path = tmp_path / "m.safetensors"
    other = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.LayerNorm(16), nn.Linear(16, 3),
                          nn.Linear(3, 3))
    nn.save(other.state_dict(), path)
    ckpt = nn.load(path)
    del ckpt["3.bias"]
    with pytest.raises(RuntimeError) as info:
        _mlp().load_state_dict(ckpt)
    message = str(info.value)
    for piece in ("missing keys (1): '3.bias'",
                  "unexpected keys (2): '4.weight', '4.bias'",
                  "'0.weight': checkpoint has shape (8, 6), the model has (16, 6)",
                  "'0.bias': checkpoint has shape (8,), the model has (16,)"):
        assert piece in message


# --- atomic writes -------------------------------------------------------------------------------
@pytest.fixture
def old_checkpoint(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    nn.save({"step": 1, "w": tg.ones(1000)}, path)
    return path


def _assert_old_checkpoint_intact(path):
    ckpt = nn.load(path)
    assert ckpt["step"] == 1 and ckpt["w"].tolist() == [1.0] * 1000
    assert os.listdir(path.parent) == [path.name]  # no temporary file left behind


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_a_failure_before_the_rename_keeps_the_old_checkpoint(old_checkpoint, monkeypatch,
                                                              failing):
    def crash(*args):
        raise OSError(f"simulated crash in os.{failing}")

    monkeypatch.setattr(os, failing, crash)
    with pytest.raises(OSError, match="simulated crash"):
        nn.save({"step": 2, "w": tg.zeros(1000)}, old_checkpoint)
    monkeypatch.undo()
    _assert_old_checkpoint_intact(old_checkpoint)


def test_a_crash_halfway_through_the_write_keeps_the_old_checkpoint(old_checkpoint, monkeypatch):
    real_fdopen = os.fdopen

    class HalfWriter:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            self.f.write(data[: len(data) // 2])
            raise KeyboardInterrupt("simulated crash mid-write")

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: HalfWriter(real_fdopen(fd, mode)))
    with pytest.raises(KeyboardInterrupt):
        nn.save({"step": 2, "w": tg.zeros(1000)}, old_checkpoint)
    monkeypatch.undo()
    _assert_old_checkpoint_intact(old_checkpoint)


# --- damaged files -------------------------------------------------------------------------------
def _damaged(path, change):
    data = bytearray(path.read_bytes())
    data = change(data)
    bad = path.with_name("bad.safetensors")
    bad.write_bytes(bytes(data))
    return bad


@pytest.mark.parametrize("damage,message", [
    (lambda d: d[: len(d) // 2], "truncated or corrupt"),
    (lambda d: d[:5], "truncated or corrupt"),
    (lambda d: bytearray(), "truncated or corrupt"),
    (lambda d: bytearray(b"PK\x03\x04 this is a zip file, not a checkpoint" * 10),
     "is a zip archive .* never unpickles"),
    (lambda d: d[:-1] + bytearray([d[-1] ^ 0xFF]), "do not match the checksum"),
    (lambda d: d[:20] + bytearray(b"#") + d[21:], "truncated or corrupt"),
])
def test_damaged_files_give_a_clear_error_naming_the_path(old_checkpoint, damage, message):
    bad = _damaged(old_checkpoint, damage)
    with pytest.raises(nn.CheckpointError, match=message) as info:
        nn.load(bad)
    assert str(bad) in str(info.value)


def test_missing_file():
    with pytest.raises(FileNotFoundError, match="no checkpoint at /nowhere/c.safetensors"):
        nn.load("/nowhere/c.safetensors")
    with pytest.raises(FileNotFoundError, match="directory /nowhere does not exist"):
        nn.save({}, "/nowhere/c.safetensors")


def test_float_metadata_survives_exactly(tmp_path):
    values = [0.1, 1 / 3, 3e-4 * 0.7, math.pi, float("nan")]
    nn.save({"v": values}, tmp_path / "c.safetensors")
    back = nn.load(tmp_path / "c.safetensors")["v"]
    assert back[:4] == values[:4] and math.isnan(back[4])
