"""Tensor: creation functions, attributes and conversions, dtype rules, devices, error messages,
and the float32 contract of a whole training step."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.autograd import untracked_view
from tensorgrad.backend.numpy_backend import NumpyBackend
from tensorgrad.tensor import from_array


def arr(t):
    return np.asarray(t.detach())


# --- creation -------------------------------------------------------------------------------------
@pytest.mark.parametrize("data, dtype", [
    (1.5, tg.float32), ([1.0, 2], tg.float32), ([[1, 2], [3, 4]], tg.int64), (3, tg.int64),
    ([True, False], tg.bool), ([], tg.float32), (np.zeros(2), tg.float64),
    (np.arange(3, dtype=np.int32), tg.int32), ([np.zeros(2), np.ones(2)], tg.float64),
])
def test_tensor_infers_dtype_like_torch(data, dtype, device):
    t = tg.tensor(data, device=device)
    assert t.dtype == dtype
    np.testing.assert_array_equal(arr(t), np.asarray(data))


def test_tensor_from_tensors_and_copies(device):
    parts = [tg.tensor(1.0, device=device), tg.tensor(2.0, device=device)]
    assert tg.tensor(parts).dtype == tg.float32
    source = np.array([1.0, 2.0])
    t = tg.tensor(source, device=device)
    source[0] = 9.0
    assert arr(t)[0] == 1.0  # tensor() copies
    u = tg.tensor(t, dtype=tg.float16)
    assert u.dtype == tg.float16 and u is not t
    assert tg.as_tensor(t) is t
    assert tg.Tensor([1, 2]).dtype == tg.int64


def test_tensor_rejects_bad_data():
    with pytest.raises(ValueError, match="tensor\\(\\): cannot make a tensor from this list"):
        tg.tensor([[1, 2], [3]])
    with pytest.raises(TypeError, match="tensor\\(\\): cannot make a tensor from str"):
        tg.tensor("abc")
    with pytest.raises(RuntimeError, match="only floating point tensors can require gradients"):
        tg.tensor([1, 2], requires_grad=True)


def test_from_numpy_shares_memory():
    a = np.arange(4.0)
    t = tg.from_numpy(a)
    a[0] = 7.0
    assert t.dtype == tg.float64 and t[0].item() == 7.0


def test_filled_creation_functions(device):
    assert tg.zeros(2, 3, device=device).shape == (2, 3)
    assert tg.zeros((2, 3), device=device).shape == (2, 3)
    np.testing.assert_array_equal(arr(tg.ones(2, dtype=tg.int64, device=device)), [1, 1])
    assert tg.ones(2, dtype=tg.int64).dtype == tg.int64
    assert tg.empty(3, device=device).shape == (3,)
    assert tg.full((2,), 7).dtype == tg.int64 and tg.full((2,), 1.5).dtype == tg.float32
    assert tg.full((2,), True).dtype == tg.bool
    np.testing.assert_array_equal(arr(tg.eye(2, 3, device=device)), np.eye(2, 3))
    assert tg.eye(3).dtype == tg.float32
    with pytest.raises(ValueError, match="sizes must be non-negative integers"):
        tg.zeros(2, -1)


def test_ranges(device):
    assert tg.arange(4, device=device).tolist() == [0, 1, 2, 3]
    assert tg.arange(4).dtype == tg.int64
    np.testing.assert_allclose(arr(tg.arange(0, 1, 0.25, device=device)), [0, 0.25, 0.5, 0.75])
    assert tg.arange(0, 1, 0.25).dtype == tg.float32
    np.testing.assert_allclose(arr(tg.linspace(0, 1, 5, device=device)), np.linspace(0, 1, 5))
    assert sorted(tg.randperm(6, device=device).tolist()) == list(range(6))


def test_random_creation(device):
    x = tg.randn(200, 50, device=device)
    assert x.dtype == tg.float32 and abs(arr(x).mean()) < 0.05 and abs(arr(x).std() - 1) < 0.05
    u = tg.rand(1000, device=device, dtype=tg.float64)
    assert u.dtype == tg.float64 and 0 <= arr(u).min() and arr(u).max() < 1
    r = tg.randint(2, 5, (1000,), device=device)
    assert r.dtype == tg.int64 and set(r.tolist()) == {2, 3, 4}
    assert set(tg.randint(3, size=(100,), device=device).tolist()) == {0, 1, 2}
    assert tg.randn(2, requires_grad=True).requires_grad


def test_like_functions(device):
    x = tg.randn(2, 3, dtype=tg.float64, device=device)
    for fn in (tg.zeros_like, tg.ones_like, tg.empty_like, tg.randn_like, tg.rand_like):
        y = fn(x)
        assert (y.shape, y.dtype, y.device) == (x.shape, x.dtype, x.device)
    assert tg.zeros_like(x, dtype=tg.int64).dtype == tg.int64
    np.testing.assert_array_equal(arr(tg.full_like(x, 2.5)), 2.5)
    assert tg.ones_like(x, requires_grad=True).requires_grad


def test_manual_seed_reproducibility(device):
    def draw():
        return (arr(tg.randn(5, device=device)), arr(tg.rand(5, device=device)),
                arr(tg.randint(0, 100, (5,), device=device)), arr(tg.randperm(5, device=device)),
                arr(tg.dropout(tg.ones(20, device=device), 0.5)))

    tg.manual_seed(123)
    first = draw()
    tg.manual_seed(123)
    second = draw()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], draw()[0])


# --- attributes and conversions -------------------------------------------------------------------
def test_attributes(device):
    x = tg.ones(2, 3, 4, device=device)
    assert x.shape == (2, 3, 4) and x.ndim == 3 and x.dim() == 3 and x.numel() == 24
    assert x.size() == (2, 3, 4) and x.size(-1) == 4 and len(x) == 2
    assert x.dtype == tg.float32 and x.device == tg.backend.normalize_device(device)
    assert x.is_leaf and not x.requires_grad and x.grad_fn is None
    assert x.T.shape == (4, 3, 2) and x.mT.shape == (2, 4, 3)


def test_python_conversions(device):
    t = tg.tensor([[1.5, 2.0]], device=device)
    assert t[0, 0].item() == 1.5 and isinstance(tg.tensor(3, device=device).item(), int)
    assert t.tolist() == [[1.5, 2.0]]
    assert float(t[0, 1]) == 2.0 and int(tg.tensor(3.7)) == 3
    assert [10, 20, 30][tg.tensor(1)] == 20
    assert bool(tg.tensor(1.0)) and not bool(tg.tensor(0))
    with pytest.raises(ValueError, match="only a one-element tensor"):
        t.item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(t)
    with pytest.raises(TypeError, match="only integer tensors can be used as an index"):
        [1, 2][tg.tensor(1.0)]


def test_numpy_and_array_protocol():
    t = tg.tensor([1.0, 2.0])
    assert isinstance(t.numpy(), np.ndarray) and t.numpy().dtype == np.float32
    assert isinstance(t.sum().numpy(), np.ndarray)  # reductions give 0-d arrays, not scalars
    np.testing.assert_array_equal(np.asarray(t, dtype=np.float64), [1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"requires grad; call .detach\(\).numpy\(\)"):
        tg.ones(1, requires_grad=True).numpy()


def test_detach_and_clone(device):
    x = tg.ones(3, device=device, requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None
    with tg.no_grad():
        x.add_(1)
    assert arr(d)[0] == 2.0  # shares memory
    c = x.clone()
    assert c.grad_fn.name == "clone" and c.data is not x.data


def test_in_place_updates_on_zero_dim_results(device):
    total = tg.ones(3, device=device).sum()
    total += 1
    total.fill_(5)
    assert total.item() == 5.0


def test_to_dtype_is_differentiable(device):
    x = tg.randn(3, device=device, requires_grad=True)
    y = x.to(tg.float64)
    assert y.dtype == tg.float64 and y.grad_fn.name == "cast"
    assert x.to("float32") is x and x.float() is x
    assert x.to(dtype=tg.float16).dtype == tg.float16
    assert x.to(tg.zeros(1, dtype=tg.int64)).dtype == tg.int64
    assert x.detach().long().dtype == tg.int64 and x.detach().bool().dtype == tg.bool
    (y * y).sum().backward()
    assert x.grad.dtype == tg.float32
    np.testing.assert_allclose(arr(x.grad), 2 * arr(x), rtol=1e-6)


def test_to_device(device):
    x = tg.randn(2, device=device)
    assert x.to(device) is x
    y = x.to("cpu")
    assert y.device == "cpu"
    np.testing.assert_array_equal(arr(y), arr(x))


def test_repr():
    assert repr(tg.tensor([1.0, 2.0], requires_grad=True)) == \
        "tensor([1., 2.], requires_grad=True)"
    assert repr(tg.arange(3)) == "tensor([0, 1, 2])"
    assert repr(tg.zeros(2, dtype=tg.float64)) == "tensor([0., 0.], dtype=float64)"
    with tg.scope("mlp"):
        y = tg.ones(1, requires_grad=True) * 2
    assert repr(y) == "tensor([2.], grad_fn=<mul in mlp>)"
    assert "..." in repr(tg.zeros(1001))  # PyTorch summarises above 1000 elements


# --- dtype rules ----------------------------------------------------------------------------------
F32, F64, F16 = tg.float32, tg.float64, tg.float16
I64, I32 = tg.int64, tg.int32


@pytest.mark.parametrize("make, expected", [
    (lambda: tg.ones(2) * 2.5, F32),  # a Python scalar never upcasts
    (lambda: 1e-3 + tg.ones(2), F32),
    (lambda: tg.ones(2) ** 2, F32),
    (lambda: tg.ones(2) + tg.arange(2), F32),  # float32 op int64 -> float32, as in torch
    (lambda: tg.arange(2) * 2.5, F32),  # int op Python float -> default float
    (lambda: tg.arange(2) / tg.arange(1, 3), F32),  # true division of ints
    (lambda: tg.arange(2) + 1, I64),
    (lambda: tg.tensor([1], dtype=I32) + 1, I32),
    (lambda: tg.tensor([1], dtype=I32) + tg.arange(1), I64),
    (lambda: tg.tensor([True]) + 1, I64),
    (lambda: tg.ones(2) + tg.ones(2, dtype=F64), F64),
    (lambda: tg.ones(2, dtype=F16) * 3.0 + 1, F16),
    (lambda: tg.ones(2) * np.float64(2.0), F32),
    (lambda: tg.tensor([1, 2], dtype=I32).sum(), I64),
    (lambda: (tg.ones(3) > 0).sum(), I64),
    (lambda: tg.ones(3).mean(), F32),
    (lambda: tg.where(tg.ones(2) > 0, 1.0, 0.0), F32),
    (lambda: tg.ones(2).masked_fill(tg.ones(2) > 0, -1e9), F32),
])
def test_dtype_rules(make, expected):
    assert make().dtype == expected


@pytest.mark.parametrize("op", [
    lambda x: x + 1.0, lambda x: x * x, lambda x: x / 2, lambda x: x.exp(), lambda x: x.tanh(),
    lambda x: x.sigmoid(), lambda x: tg.gelu(x), lambda x: x.relu(), lambda x: x.sqrt(),
    lambda x: tg.silu(x), lambda x: x.clamp(0.2, 0.8), lambda x: tg.maximum(x, 0.5),
])
def test_float16_elementwise(op, device):
    x = tg.rand(4, dtype=F16, device=device, requires_grad=True)
    y = op(x)
    assert y.dtype == F16
    y.sum().backward()
    assert x.grad.dtype == F16


def test_integer_only_ops_refuse_floats_and_vice_versa():
    with pytest.raises(TypeError, match="exp: expected a floating point tensor, got int64"):
        tg.arange(3).exp()
    with pytest.raises(TypeError, match="mean: expected a floating point tensor"):
        tg.arange(3).mean()


# --- devices --------------------------------------------------------------------------------------
@pytest.fixture
def fresh_default_device():
    tg.set_default_device(None)
    yield
    tg.set_default_device(None)


def test_set_default_device(fresh_default_device):
    assert tg.default_device() == "cpu"
    tg.set_default_device("cpu")
    assert tg.zeros(1).device == "cpu"
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        tg.set_default_device("gpu")


def test_default_device_from_environment(fresh_default_device, monkeypatch):
    monkeypatch.setenv("TENSORGRAD_DEVICE", "cuda")
    assert tg.default_device() == "cuda:0"
    monkeypatch.setenv("TENSORGRAD_DEVICE", "cpu")
    assert tg.default_device() == "cpu" and tg.ones(1).device == "cpu"
    tg.set_default_device("cpu")  # an explicit choice beats the environment
    monkeypatch.setenv("TENSORGRAD_DEVICE", "cuda:1")
    assert tg.default_device() == "cpu"


class _OtherDevice(NumpyBackend):
    """A second backend object standing in for a GPU, so the mixed-device checks run anywhere."""

    device = "cuda:7"


def test_mixing_devices_is_a_clear_error():
    other = _OtherDevice()
    here = tg.ones(2)
    there = from_array(other.ones(2, dtype=F32), other)
    with pytest.raises(RuntimeError, match="add: expected all tensors on one device, got cpu, "
                                           "cuda:7"):
        here + there
    with pytest.raises(RuntimeError, match="matmul: expected all tensors on one device"):
        there @ here
    with pytest.raises(RuntimeError, match="in-place update of a cpu tensor with a cuda:7"):
        here.add_(there)
    with pytest.raises(RuntimeError, match="indexing: a cpu tensor indexed with a cuda:7 tensor"):
        here[from_array(other.zeros(1, dtype=I64), other)]


def test_untracked_view_shares_memory_and_version_and_refuses_grad():
    """autograd.untracked_view: a view taken on the array, as the view ops give it when they
    record nothing (the decoding path's slices)."""
    base = tg.zeros(2, 3)
    view = untracked_view(base, base.data[:, 1:])
    assert view.shape == (2, 2) and not view.requires_grad and view.is_leaf
    base.add_(1)  # one version counter: an in-place write to either shows in both
    assert view._version is base._version and arr(view).sum() == 4
    view.mul_(3)
    assert arr(base).tolist() == [[1, 3, 3], [1, 3, 3]]
    with pytest.raises(RuntimeError, match="untracked_view: the base tensor requires grad"):
        untracked_view(tg.zeros(2, requires_grad=True), np.zeros(1))


@pytest.mark.parametrize("requires_grad", [False, True])
def test_split_pieces_are_views_of_the_input_with_and_without_a_graph(requires_grad):
    """split takes its pieces as untracked views when there is no gradient to record, and as
    getitem ops when there is: either way views of one version counter, as torch's pieces."""
    leaf = tg.arange(6.0).reshape(2, 3).requires_grad_(requires_grad)
    x = leaf * 1.0
    a, b = x.split([1, 2], dim=1)
    assert a.shape == (2, 1) and b.shape == (2, 2)
    assert a.requires_grad == b.requires_grad == requires_grad
    assert a._version is x._version and b._version is x._version
    if requires_grad:
        (a.sum() * 2 + (b * b).sum()).backward()
        assert arr(leaf.grad).tolist() == [[2.0, 2.0, 4.0], [2.0, 8.0, 10.0]]
    else:
        b.mul_(10.0)  # through a piece: the input sees it, and the one counter moves
        assert arr(x).tolist() == [[0.0, 10.0, 20.0], [3.0, 40.0, 50.0]]
        assert x._version[0] == 1 and arr(a).tolist() == [[0.0], [3.0]]


@pytest.mark.parametrize("requires_grad", [False, True])
def test_view_and_transpose_are_views_with_and_without_a_graph(requires_grad):
    """view, reshape and transpose of a tensor with no gradient to record skip the primitive
    call and stay views of the input's one version counter; with a graph they record it."""
    leaf = tg.arange(6.0).requires_grad_(requires_grad)
    x = leaf * 1.0
    v = x.view(2, 3)
    t = v.transpose(0, 1)
    assert t.shape == (3, 2) and v.requires_grad == t.requires_grad == requires_grad
    assert v._version is x._version and t._version is x._version
    assert (v._node is not None) == (t._node is not None) == requires_grad
    if requires_grad:
        (t * tg.arange(6.0).reshape(3, 2)).sum().backward()
        assert arr(leaf.grad).tolist() == [0.0, 2.0, 4.0, 1.0, 3.0, 5.0]
    else:
        t.mul_(10.0)
        assert arr(x).tolist() == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0] and x._version[0] == 1


@pytest.mark.parametrize("requires_grad", [False, True])
def test_view_refuses_strides_that_need_a_copy_as_torch_does(requires_grad):
    """x.view(shape) is always a view: where the strides allow none, torch raises and names
    reshape, which copies; a slice that keeps the rows' own strides still views."""
    x = tg.randn(3, 4, requires_grad=requires_grad)
    with pytest.raises(RuntimeError, match=r"view: shape \(12,\) is not compatible .* use "
                                           r"\.reshape\(\.\.\.\) instead"):
        x.t().view(12)
    assert x.t().reshape(12).shape == (12,)
    assert x[:, 1:3].view(3, 2, 1).shape == (3, 2, 1)
    assert tg.randn(4, 0).t().view(0).shape == (0,)

def test_mixing_real_devices(device):
    if device == "cpu":
        pytest.skip("needs a cuda device to mix with cpu")
    with pytest.raises(RuntimeError, match="expected all tensors on one device, got cuda:0, cpu"):
        tg.ones(2, device=device) + tg.ones(2, device="cpu")


def test_cuda_request_without_cuda_is_a_clear_error():
    if tg.cuda_is_available():
        pytest.skip("a GPU is available here")
    with pytest.raises(RuntimeError, match="device 'cuda:0' needs CuPy and an NVIDIA GPU"):
        tg.zeros(2, device="cuda")


# --- error messages -------------------------------------------------------------------------------
@pytest.mark.parametrize("make, error, message", [
    (lambda: tg.ones(2, 3) + tg.ones(4), ValueError,
     r"add: the shapes cannot be broadcast together; got inputs \(2, 3\) float32, \(4,\) float32"),
    (lambda: tg.ones(2, 3) * tg.ones(3, 2), ValueError, r"mul: .*\(2, 3\) float32, \(3, 2\)"),
    (lambda: tg.ones(2, 3) @ tg.ones(2, 3), RuntimeError,
     r"matmul: inner dimensions differ: \(2, 3\) @ \(2, 3\) \(3 != 2\)"),
    (lambda: tg.ones(2, 3).reshape(4, 2), RuntimeError,
     r"reshape: cannot view a tensor of shape \(2, 3\) \(6 elements\) as shape \(4, 2\)"),
    (lambda: tg.cat([tg.ones(2, 3), tg.ones(2, 2)]), RuntimeError,
     r"cat: tensors must match in every dimension but dim 0; got shapes \(2, 3\), \(2, 2\)"),
    (lambda: tg.ones(2, 3).gather(1, tg.tensor([[0, 3], [1, 1]])), IndexError,
     r"gather: index values must lie in \[0, 3\) along dim 1 of shape \(2, 3\)"),
    (lambda: tg.cross_entropy(tg.ones(2, 3), tg.tensor([0, 3])), IndexError,
     r"cross_entropy: target values must lie in \[0, 3\)"),
    (lambda: tg.cross_entropy(tg.ones(2, 3), tg.tensor([0, 1, 2])), ValueError,
     r"cross_entropy: logits of shape \(2, 3\) need a target of shape \(2,\), got \(3,\)"),
    (lambda: tg.ones(2, 3).sum(2), IndexError,
     r"sum: dim 2 is out of range for a tensor with 2 dimension\(s\) \(expected -2 <= dim < 2\)"),
    (lambda: tg.ones(2, 3).softmax(-3), IndexError, r"softmax: dim -3 is out of range"),
    (lambda: tg.ones(2, 3)[5], IndexError, r"getitem: index 5 is out of bounds .*shape \(2, 3\)"),
    (lambda: tg.embedding(tg.tensor([5]), tg.ones(3, 2)), IndexError,
     r"embedding: indices must lie in \[0, 3\) for a table of shape \(3, 2\)"),
    (lambda: tg.embedding(tg.tensor([1, -1], dtype=tg.int32), tg.ones(3, 2)), IndexError,
     r"embedding: indices must lie in \[0, 3\) .*got values in \[-1, 1\]"),  # one max, as unsigned
    (lambda: tg.embedding(tg.tensor([[2], [3]], dtype=tg.uint8), tg.ones(3, 2)), IndexError,
     r"embedding: indices must lie in \[0, 3\) .*got values in \[2, 3\]"),
    (lambda: tg.layer_norm(tg.ones(2, 3), 4), ValueError,
     r"layer_norm: normalized_shape \(4,\) must equal the last dimensions"),
    (lambda: tg.layer_norm(tg.ones(2, 3), 3, tg.ones(3), tg.ones(2)), ValueError,
     r"layer_norm: bias must have shape \(3,\), got \(2,\)"),
    (lambda: tg.rms_norm(tg.ones(2, 3), 3, tg.ones(1, 3)), ValueError,
     r"rms_norm: weight must have shape \(3,\), got \(1, 3\)"),
    (lambda: tg.ones(2, 3).expand(4, 3), RuntimeError, r"expand: cannot expand shape \(2, 3\)"),
])
def test_error_messages(make, error, message):
    with pytest.raises(error, match=message):
        make()


# --- the float32 contract -------------------------------------------------------------------------
def test_mlp_training_step_stays_float32(device):
    """Two layers from raw tensors; every array of a forward, backward and SGD step is float32."""
    x = tg.randn(8, 5, device=device)
    y = tg.randint(0, 3, (8,), device=device)
    w1 = (tg.randn(5, 16, device=device) * 0.4).requires_grad_()
    b1 = tg.zeros(16, device=device, requires_grad=True)
    gain = tg.ones(16, device=device, requires_grad=True)
    shift = tg.zeros(16, device=device, requires_grad=True)
    w2 = (tg.randn(16, 3, device=device) * 0.25).requires_grad_()
    b2 = tg.zeros(3, device=device, requires_grad=True)
    params = [w1, b1, gain, shift, w2, b2]

    def forward():
        hidden = tg.gelu(x @ w1 + b1)  # (8, 16)
        normed = tg.layer_norm(hidden, 16, gain, shift)
        logits = normed @ w2 + b2  # (8, 3)
        log_probs = logits.log_softmax(-1)
        manual = -log_probs.gather(1, y.unsqueeze(1)).mean()
        return [hidden, normed, logits, log_probs, manual], tg.cross_entropy(logits, y)

    intermediates, loss = forward()
    loss.backward()
    with tg.no_grad():
        for p in params:
            p -= 0.1 * p.grad
    after = forward()[1]
    arrays = [p.data for p in params] + [p.grad.data for p in params] + \
        [t.data for t in intermediates] + [loss.data, after.data]
    assert all(a.dtype == tg.float32 for a in arrays), [a.dtype for a in arrays]
    np.testing.assert_allclose(intermediates[-1].item(), loss.item(), rtol=1e-6)
    assert after.item() < loss.item()
