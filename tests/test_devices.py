"""What a GPU user relies on, on every device: the cuda cases run on a GPU, or on the CuPy
stand-in with TENSORGRAD_CUDA_STANDIN=1 (tests/cupy_standin.py)."""
import inspect
import json

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.models import GPT, GPTConfig
from tensorgrad.utils.data import DataLoader, TensorDataset

TEXT = inspect.getsource(json).encode()[:4000]  # stdlib bytes: nothing is downloaded


def tiny_gpt(**overrides):
    return GPTConfig.mini(n_layer=2, n_embd=32, n_head=4, d_ff=64, block_size=16, **overrides)


def batches(device, steps, batch=4, block=16, seed=0):
    """(x, y) next-byte batches of TEXT, the same on every device."""
    rng = np.random.default_rng(seed)
    data = np.frombuffer(TEXT, dtype=np.uint8).astype(np.int64)
    for _ in range(steps):
        starts = rng.integers(0, len(data) - block - 1, batch)
        x = np.stack([data[s:s + block] for s in starts])
        y = np.stack([data[s + 1:s + block + 1] for s in starts])
        yield tg.tensor(x, device=device), tg.tensor(y, device=device)


def train_gpt(device, steps=4, dtype=tg.float64):
    """A few AdamW steps of a tiny GPT made on the cpu (the same weights everywhere), then
    moved to `device`; returns the losses, the model and its optimizer."""
    tg.manual_seed(0)
    model = GPT(tiny_gpt()).to(device, dtype)
    opt = tg.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for x, y in batches(device, steps):
        _, loss = model(x, targets=y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model, opt


def test_gpt_mini_trains_to_the_cpus_losses(device):
    expected, _, _ = train_gpt("cpu")
    losses, model, opt = train_gpt(device)
    np.testing.assert_allclose(losses, expected, rtol=1e-10)
    for p in model.parameters():
        assert p.device == tg.device(device)
        assert all(v.device == p.device for v in opt.state[p].values() if isinstance(v, tg.Tensor))


def test_a_checkpoint_of_device_tensors_loads_back(device, tmp_path):
    _, model, opt = train_gpt(device, steps=1)
    tg.save({"model": model.state_dict(), "opt": opt.state_dict()}, tmp_path / "ckpt")
    back = tg.load(tmp_path / "ckpt")  # to the device each tensor was saved from, as PyTorch
    on_cpu = tg.load(tmp_path / "ckpt", map_location="cpu")
    for name, t in model.state_dict().items():
        assert back["model"][name].device == tg.device(device)
        assert on_cpu["model"][name].device == tg.device("cpu")
        np.testing.assert_array_equal(on_cpu["model"][name].numpy(), t.cpu().numpy())
    fresh = GPT(tiny_gpt()).to(device, tg.float64)
    fresh.load_state_dict(back["model"])
    x, _ = next(batches(device, 1))
    np.testing.assert_array_equal(fresh(x)[0].detach().cpu().numpy(),
                                  model(x)[0].detach().cpu().numpy())


def test_dataloader_batches_move_with_non_blocking(device):
    x, y = tg.randn(10, 3), tg.arange(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4, pin_memory=True)
    seen = []
    for xb, yb in loader:
        xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
        assert xb.device == yb.device == tg.device(device)
        seen.append(yb.cpu().numpy())
    np.testing.assert_array_equal(np.concatenate(seen), np.arange(10))


def test_mixing_devices_is_a_clear_error(device):
    if device == "cpu":
        pytest.skip("mixing needs a second device")
    a, b = tg.ones(2, 3), tg.ones(3, 2, device=device)
    with pytest.raises(RuntimeError, match=r"matmul: expected all tensors on one device, got "
                                           r"cpu, cuda:0"):
        a @ b
    layer = tg.nn.Linear(3, 2)  # still on the cpu
    with pytest.raises(RuntimeError, match="cuda:0, cpu"):
        layer(tg.ones(1, 3, device=device))
