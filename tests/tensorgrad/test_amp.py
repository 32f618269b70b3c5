"""tensorgrad.amp: autocast's op lists and GradScaler's dynamic loss scaling, against PyTorch."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.amp import GradScaler, autocast

F16, F32, F64 = tg.float16, tg.float32, tg.float64


def _randn(*shape, device, dtype=F32, requires_grad=False):
    return tg.randn(*shape, device=device, dtype=dtype, requires_grad=requires_grad)


def _outputs(lib, x, w, b, image, kernel, target, **device):
    """One op of each kind, as `lib` (tensorgrad or torch) spells it: name -> output dtype."""
    F = lib.nn.functional
    h = x @ w
    return {
        "matmul": h.dtype, "linear": F.linear(x, w.T, b).dtype,
        "conv2d": F.conv2d(image, kernel).dtype,
        "sdpa": F.scaled_dot_product_attention(x[None], x[None], x[None]).dtype,
        "softmax": h.softmax(-1).dtype, "log_softmax": h.log_softmax(-1).dtype,
        "layer_norm": F.layer_norm(h, h.shape[-1:]).dtype, "exp": h.exp().dtype,
        "log": h.abs().log().dtype, "pow": (h ** 2).dtype, "sum": h.sum().dtype,
        "cross_entropy": F.cross_entropy(h, target).dtype, "mse_loss": F.mse_loss(h, h).dtype,
        "add_mixed": (h + x[:, :w.shape[1]]).dtype, "relu": h.relu().dtype,
    }


# Where PyTorch's cpu lists differ from its cuda ones (they keep these in 16 bits), tensorgrad
# follows the cuda lists on both device types.
CUDA_ONLY_FLOAT32 = {"softmax", "log_softmax", "layer_norm", "exp", "log", "pow", "sum"}


def test_op_lists_give_pytorchs_dtypes():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype("float32") for s in
              [(4, 6), (6, 5), (5,), (1, 2, 6, 6), (3, 2, 3, 3)]]
    target = rng.integers(0, 5, 4)
    with autocast("cpu", dtype=F16):
        ours = _outputs(tg, *[tg.tensor(a) for a in arrays], tg.tensor(target))
    with torch.autocast("cpu", dtype=torch.float16):
        theirs = _outputs(torch, *[torch.tensor(a) for a in arrays], torch.tensor(target))
    names = {torch.float16: F16, torch.float32: F32}
    expected = {k: F32 if k in CUDA_ONLY_FLOAT32 else names[v] for k, v in theirs.items()}
    assert ours == expected
    assert {k for k, v in expected.items() if v == F16} == {"matmul", "linear", "conv2d", "sdpa",
                                                           "relu"}


def test_autocast_on_each_device(device):
    x, w = _randn(4, 6, device=device), _randn(6, 5, device=device)
    with autocast(device.split(":")[0], dtype=F16):
        assert (x @ w).dtype == F16 and (x @ w).softmax(-1).dtype == F32
        x64 = x.double()
        assert (x64 @ w.double()).dtype == F64  # float64 is never cast, as in PyTorch
        with autocast(device.split(":")[0], enabled=False):
            assert (x @ w).dtype == F32
    assert (x @ w).dtype == F32


@pytest.mark.parametrize("with_bias", [False, True])
def test_mixed_dtypes_in_products_are_refused_unless_the_casts_make_them_one(with_bias):
    """Inside autocast, float32 with float16 is cast to one dtype and runs, but float64 is never
    cast, so float64 with float32 stays an error, in linear (with or without a bias) and matmul,
    as in PyTorch."""
    x64, w, b = tg.randn(2, 4, dtype=F64), tg.randn(3, 4), tg.randn(3) if with_bias else None
    with autocast("cpu", dtype=F16):
        with pytest.raises(RuntimeError, match="linear: expected both operands to have the same"):
            tg.nn.functional.linear(x64, w, b)
        with pytest.raises(RuntimeError, match="matmul: expected both operands to have the same"):
            x64 @ w.T
        assert tg.nn.functional.linear(tg.randn(2, 4), w.to(F16), b).dtype == F16
    try:
        import torch
    except ImportError:
        return
    tw, tb = torch.randn(3, 4), torch.randn(3) if with_bias else None
    with torch.autocast("cpu", dtype=torch.float16):
        with pytest.raises(RuntimeError):
            torch.nn.functional.linear(torch.randn(2, 4, dtype=torch.float64), tw, tb)
        assert torch.nn.functional.linear(torch.randn(2, 4), tw.half(), tb).dtype == \
            torch.float16


def test_autocast_leaves_other_device_types_alone():
    x = tg.randn(3, 3)
    with autocast("cuda"):
        assert (x @ x).dtype == F32


def test_backward_gives_each_parameter_its_own_dtype_and_pytorchs_gradient():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((8, 16)).astype("float32"), rng.standard_normal((16, 4)) \
        .astype("float32")
    ours_w = tg.tensor(w, requires_grad=True)
    theirs_w = torch.tensor(w, requires_grad=True)
    with autocast("cpu", dtype=F16):
        loss = (tg.tensor(x) @ ours_w).log_softmax(-1).sum()
        loss.backward()  # inside the region: the backward still runs in the forward's dtypes
    with torch.autocast("cpu", dtype=torch.float16):
        (torch.tensor(x) @ theirs_w).log_softmax(-1).sum().backward()
    assert ours_w.grad.dtype == F32
    np.testing.assert_allclose(ours_w.grad.numpy(), theirs_w.grad.numpy(), rtol=2e-3, atol=2e-3)


def test_a_weight_used_twice_is_cast_once():
    w = tg.randn(4, 4, requires_grad=True)
    with autocast("cpu", dtype=F16):
        a, b = tg.matmul(w, w), tg.matmul(w, w)
        first, second = a._node.parents, b._node.parents
    assert first[0] is second[0] is second[1]  # the same float16 copy of w
    with autocast("cpu", dtype=F16, cache_enabled=False):
        c = tg.matmul(w, w)
    assert c._node.parents[0] is not c._node.parents[1]


def test_autocast_as_a_decorator_and_its_errors():
    @autocast("cpu", dtype=F16)
    def product(a, b):
        return a @ b

    assert product(tg.randn(2, 2), tg.randn(2, 2)).dtype == F16
    assert not tg.amp.is_autocast_enabled("cpu")
    with pytest.raises(RuntimeError, match="device_type"):
        autocast("tpu")
    with pytest.warns(UserWarning, match="Disabling autocast"):
        region = autocast("cpu", dtype=F64)
    with region:
        assert (tg.randn(2, 2) @ tg.randn(2, 2)).dtype == F32


# --- GradScaler ----------------------------------------------------------------------------------
def _one_step(scaler, opt, param, grad):
    param.grad = grad
    scaler.step(opt)
    scaler.update()


def test_grad_scaler_follows_pytorchs_scale_schedule():
    torch = pytest.importorskip("torch")
    pattern = [0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0]  # 1: this step's gradient overflows
    ours = GradScaler("cpu", init_scale=1024.0, growth_interval=3)
    theirs = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=3)
    p, q = tg.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
    opt, opt_t = tg.optim.SGD([p], lr=1.0), torch.optim.SGD([q], lr=1.0)
    for overflow in pattern:
        value = [float("inf") if overflow else 2048.0, 1024.0]
        _one_step(ours, opt, p, tg.tensor(value))
        theirs.scale(torch.tensor(1.0))  # PyTorch makes its scale tensor at the first scale()
        q.grad = torch.tensor(value)
        theirs.step(opt_t)
        theirs.update()
        assert ours.get_scale() == theirs.get_scale()
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert ours.state_dict() == theirs.state_dict()


def test_unscale_before_clipping_and_the_misuse_errors(device):
    p = tg.zeros(3, device=device, requires_grad=True)
    opt = tg.optim.SGD([p], lr=1.0)
    scaler = GradScaler(device, init_scale=8.0)
    loss = scaler.scale((p + 1.0).pow(2).sum())
    loss.backward()
    np.testing.assert_allclose(p.grad.cpu().numpy(), 16.0)
    scaler.unscale_(opt)
    np.testing.assert_allclose(p.grad.cpu().numpy(), 2.0)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    tg.nn.utils.clip_grad_norm_([p], 1.0)
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(p.detach().cpu().numpy(), -1 / np.sqrt(3), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Closure"):
        scaler.step(opt, closure=lambda: 0.0)
    p.grad = tg.zeros(3, dtype=F16, device=device)
    half = GradScaler(device)
    with pytest.raises(ValueError, match="FP16 gradients"):
        half.unscale_(tg.optim.SGD([p], lr=1.0))


def test_a_disabled_scaler_passes_through():
    scaler = GradScaler(enabled=False)
    loss = tg.tensor(3.0)
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    p = tg.ones(1, requires_grad=True)
    p.grad = tg.ones(1)
    _one_step(scaler, tg.optim.SGD([p], lr=0.5), p, p.grad)
    assert p.item() == 0.5


# --- a float16 training curve against float32's -------------------------------------------------
def training_curve(device, half, steps=40):
    """Losses of a tiny GPT trained with AdamW, in float32 or under float16 autocast with a
    GradScaler (the same data and initial weights either way)."""
    from test_devices import batches, tiny_gpt

    tg.manual_seed(0)
    model = tg.models.GPT(tiny_gpt()).to(device)
    opt = tg.optim.AdamW(model.parameters(), lr=3e-3)
    scaler = GradScaler(device.split(":")[0], init_scale=2.0**12, enabled=half)
    losses = []
    for x, y in batches(device, steps):
        with autocast(device.split(":")[0], dtype=F16, enabled=half):
            _, loss = model(x, targets=y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        tg.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    return np.array(losses)


def test_float16_training_follows_float32s_curve(device):
    full, half = training_curve(device, False), training_curve(device, True)
    assert half[-5:].mean() < 0.8 * half[:5].mean()  # it learns
    np.testing.assert_allclose(half, full, rtol=5e-3)


def test_torch_autocast_is_amp_autocast():
    """torch.autocast(device_type, ...) is torch.amp.autocast, as user code writes it."""
    assert tg.autocast is autocast
    a, b = tg.randn(4, 8), tg.randn(8, 3)
    with tg.autocast("cpu", dtype=tg.float16):
        assert (a @ b).dtype == tg.float16
    assert (a @ b).dtype == tg.float32

