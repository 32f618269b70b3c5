"""The PyTorch surface of Tensor and the creation functions, against PyTorch itself: format
specs, randint's two forms, integer linspace, type(), new_*, devices, to()'s keywords,
as_subclass and set_."""
import pickle

import numpy as np
import pytest

import tensorgrad as tg

torch = pytest.importorskip("torch")


def test_format_spec_on_0d_tensors_like_torch():
    for value in (1.23456, -0.5, 3):
        for spec in (".4f", ".2e", "", "8.3f"):
            if isinstance(value, int) and spec in (".4f", ".2e", "8.3f"):
                continue
            assert f"{tg.tensor(value):{spec}}" == f"{torch.tensor(value):{spec}}"
    assert f"{tg.tensor(7):d}" == f"{torch.tensor(7):d}" == "7"
    loss = (tg.tensor([1.0, 2.0], requires_grad=True) ** 2).mean()
    assert f"loss {loss:.4f}" == "loss 2.5000"  # a tensor that requires grad formats too
    assert format(tg.tensor([1.5, 2.0])) == str(tg.tensor([1.5, 2.0]))
    for lib in (tg, torch):
        with pytest.raises(TypeError, match="unsupported format string"):
            format(lib.tensor([1.5, 2.0]), ".2f")


def test_randint_forms():
    tg.manual_seed(1)
    for call in (lambda lib: lib.randint(10, (3,)), lambda lib: lib.randint(2, 5, (4, 2)),
                 lambda lib: lib.randint(3, size=(5,)), lambda lib: lib.randint(-4, 0, size=(6,))):
        ours, theirs = call(tg), call(torch)
        assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == "int64"
    values = tg.randint(10, (2000,)).numpy()
    assert values.min() == 0 and values.max() == 9
    values = tg.randint(-4, 0, size=(2000,)).numpy()
    assert values.min() == -4 and values.max() == -1
    assert tg.randint(5, (3,), dtype=tg.int32).dtype == tg.int32


@pytest.mark.parametrize("start, end, steps", [
    (-2.5, 2.5, 5), (-3, 3, 4), (0, 10, 7), (-7.7, 3.3, 9), (5, -5, 6), (0, 100, 13),
    (-1000, 7, 33), (3, 3, 1), (0, 5, 0),
])
def test_integer_linspace_truncates_like_torch(start, end, steps):
    for ours_dtype, torch_dtype in ((tg.int64, torch.int64), (tg.int32, torch.int32)):
        ours = tg.linspace(start, end, steps, dtype=ours_dtype)
        assert ours.dtype == ours_dtype
        assert ours.tolist() == torch.linspace(start, end, steps, dtype=torch_dtype).tolist()
    np.testing.assert_allclose(tg.linspace(start, end, steps, dtype=tg.float64).numpy(),
                               torch.linspace(start, end, steps, dtype=torch.float64).numpy())


def test_type_names_and_casts():
    pairs = [(tg.float32, torch.float32), (tg.float64, torch.float64), (tg.float16, torch.float16),
             (tg.int64, torch.int64), (tg.int32, torch.int32), (tg.int16, torch.int16),
             (tg.int8, torch.int8), (tg.uint8, torch.uint8), (tg.bool, torch.bool)]
    for ours, theirs in pairs:
        # PyTorch's names, spelled with tensorgrad for torch
        assert tg.zeros(2, dtype=ours).type() == \
            torch.zeros(2, dtype=theirs).type().replace("torch.", "tensorgrad.")
    x = tg.arange(3)
    assert x.type(tg.float64).dtype == tg.float64
    assert x.type("torch.DoubleTensor").dtype == tg.float64
    assert x.type("tensorgrad.FloatTensor").dtype == tg.float32
    with pytest.raises(ValueError, match="type\\(\\): unknown tensor type 'torch.FooTensor'"):
        x.type("torch.FooTensor")


def _new_tensors(lib):
    """What x.new_* gives on a float64 x: shape, dtype, requires_grad and values (new_empty's
    values are arbitrary)."""
    x = lib.ones(2, dtype=lib.float64)
    made = [x.new_zeros(2, 3), x.new_zeros((2, 3)), x.new_ones(4), x.new_full((2,), 7),
            x.new_tensor([1, 2]), x.new_zeros(2, dtype=lib.int64),
            x.new_ones(1, requires_grad=True)]
    empty = x.new_empty(3)
    return ([(tuple(t.shape), str(t.dtype).removeprefix("torch."), t.requires_grad, t.tolist())
             for t in made], tuple(empty.shape), str(empty.dtype).removeprefix("torch."))


def test_new_creation_methods_like_torch():
    assert _new_tensors(tg) == _new_tensors(torch)


def test_devices():
    cuda = tg.device("cuda")
    assert cuda == "cuda:0" and cuda.type == "cuda" and cuda.index == 0  # index 0, not None
    assert repr(cuda) == "device(type='cuda', index=0)"
    assert tg.device("cuda", 1) == "cuda:1" and tg.device("cuda:1").index == 1
    cpu = tg.device("cpu")
    assert repr(cpu) == repr(torch.device("cpu")) and cpu.index is None and cpu.type == "cpu"
    x = tg.ones(2)
    assert x.device == "cpu" and isinstance(x.device, tg.device) and x.device.type == "cpu"
    assert not x.is_cuda and x.is_cuda == torch.ones(2).is_cuda
    assert pickle.loads(pickle.dumps(cuda)) == cuda and {cuda: 1}["cuda:0"] == 1
    assert tg.zeros(2, device=cpu).device == "cpu" and x.to(cpu) is x
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        tg.device("tpu")


def test_to_accepts_non_blocking_and_copy():
    x = tg.ones(2, requires_grad=True)
    assert x.to("cpu", non_blocking=True) is x
    copied = x.to(copy=True)
    assert copied is not x and copied.grad_fn is not None
    (copied * 3.0).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    assert x.to(tg.float64, copy=True).dtype == tg.float64


class Marked(tg.Tensor):
    """A user's subclass (no __slots__: it has a __dict__)."""


def test_as_subclass_shares_memory_version_and_the_graph():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x.as_subclass(Marked)
    assert type(y) is Marked and y.requires_grad and not y.is_leaf  # an alias, as in PyTorch
    (y * 2.0).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    plain = tg.zeros(2)
    marked = plain.as_subclass(Marked)
    plain[0] = 4.0
    assert marked[0].item() == 4.0 and marked.is_leaf and not marked.requires_grad
    with pytest.raises(TypeError, match="as_subclass: expected a subclass of tensorgrad.Tensor"):
        plain.as_subclass(int)


def test_set_takes_the_sources_data_and_keeps_identity():
    w = tg.ones(3, requires_grad=True)
    w.grad = tg.ones(3)
    with pytest.raises(RuntimeError, match="set_: a leaf Variable that requires grad"):
        w.set_(tg.zeros(2))
    x = tg.randn(3)
    y = w * x  # saves w
    with tg.no_grad():
        assert w.set_(tg.zeros(2, dtype=tg.float64)) is w
    assert w.shape == (2,) and w.dtype == tg.float64 and w.requires_grad and w.is_leaf
    assert w.grad is not None  # .grad is kept, as in PyTorch
    with pytest.raises(RuntimeError, match="modified in place"):
        y.sum().backward()  # the version moved
    with pytest.raises(RuntimeError, match="set_: this tensor requires grad, so its data must "
                                           "stay floating point"):
        with tg.no_grad():
            w.set_(tg.arange(2))
    source = tg.zeros(2)
    target = tg.ones(5).set_(source)
    source[0] = 9.0
    assert target.tolist() == [9.0, 0.0]  # the same memory, as torch's set_
