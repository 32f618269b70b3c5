"""The PyTorch surface of Tensor and the creation functions, against PyTorch itself: format
specs, randint's two forms, integer linspace, type(), new_*, devices, to()'s keywords,
as_subclass and set_; dtype and layout attributes, inference mode, print options, tg.Size."""
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
    x = tg.randn(3, requires_grad=True)
    y = w * x  # saves w (for x's gradient)
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


def both(fn):
    """Run `fn(lib)` with tensorgrad and with torch; return both results."""
    return fn(tg), fn(torch)


def same(a, b):
    np.testing.assert_allclose(np.asarray(a.detach()), b.detach().numpy(), rtol=1e-6)


# --- dtype and layout attributes -----------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "uint8",
                                   "bool"])
def test_dtype_attributes_match_torch(dtype):
    def run(lib):
        x = lib.zeros(2, 3, dtype=getattr(lib, dtype))
        return (x.is_floating_point(), x.is_complex(), x.element_size(), x.itemsize, x.nbytes,
                lib.is_floating_point(x), lib.is_complex(x), lib.numel(x), lib.is_tensor(x))
    ours, theirs = both(run)
    assert ours == theirs


def test_strides_offsets_and_contiguity_match_torch():
    def run(lib):
        x = lib.arange(24.0).reshape(4, 6)
        views = [x, x.t(), x[:, 1:], x[1::2, ::3], x[2], x.unsqueeze(1), x[:1].expand(3, 6),
                 x.permute(1, 0)[1:]]
        return [(v.stride(), v.stride(0), v.stride(-1), v.is_contiguous(), v.storage_offset())
                for v in views]
    ours, theirs = both(run)
    assert ours == theirs


def test_contiguous_makes_a_row_major_copy_only_when_needed():
    x = tg.arange(6.0, requires_grad=True)
    y = x.reshape(2, 3)
    assert y.contiguous() is y
    t = y.t().contiguous()
    assert t.is_contiguous() and t.stride() == (2, 1)
    assert t.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    (t * tg.arange(6.0).reshape(3, 2)).sum().backward()  # the copy stays in the graph
    assert x.grad.tolist() == [0.0, 2.0, 4.0, 1.0, 3.0, 5.0]


@pytest.mark.parametrize("size", [(1, 3), (3,), (2, 1), (1, 1), (2, 3), ()])
def test_sum_to_size_matches_torch(size):
    def run(lib):
        x = lib.arange(6.0).reshape(2, 3).requires_grad_()
        out = x.sum_to_size(*size) if size else x.sum_to_size(size)
        (out * 2).sum().backward()
        return out, x.grad
    for a, b in zip(*both(run)):
        same(a, b)
    assert tg.ones(2, 3).sum_to_size(list(size)).shape == size  # a sequence works too


def test_sum_to_size_rejects_a_size_that_does_not_broadcast():
    with pytest.raises(RuntimeError, match=r"sum_to_size: size \[3, 3\] is not expandable to "
                                           r"size \[2, 3\]"):
        tg.ones(2, 3).sum_to_size(3, 3)


def test_conjugate_transposes_of_real_tensors():
    def run(lib):
        m = lib.arange(6.0).reshape(2, 3)
        b = lib.arange(24.0).reshape(2, 3, 4)
        return m.H, b.mH
    for a, b in zip(*both(run)):
        same(a, b)
    with pytest.raises(RuntimeError, match="tensor.H is only supported"):
        _ = tg.ones(2, 3, 4).H
    with pytest.raises(RuntimeError, match="tensor.mH is only supported"):
        _ = tg.ones(3).mH


# --- inference mode, print options ---------------------------------------------------------
def test_inference_mode_switches_as_torch_does():
    def run(lib):
        seen = []

        def state():
            seen.append((lib.is_inference_mode_enabled(), lib.is_grad_enabled()))

        @lib.inference_mode
        def bare():
            state()

        @lib.inference_mode()
        def called(n):  # recursion: each call has its own switch
            return called(n - 1) if n else state()

        state()
        bare()
        called(2)
        with lib.inference_mode():
            state()
            with lib.inference_mode(False):
                state()
            state()
        with lib.no_grad(), lib.inference_mode(False):
            state()
        state()
        return seen
    ours, theirs = both(run)
    assert ours == theirs


def test_inference_mode_records_nothing_and_makes_plain_tensors():
    w = tg.ones(3, requires_grad=True)
    with tg.inference_mode():
        y = w * 2
    assert not y.requires_grad and y.grad_fn is None
    # The documented difference: y is an ordinary tensor, usable in autograd and in place.
    y.add_(1)
    (y * w).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0, 3.0]


@pytest.fixture
def print_options():
    yield
    tg.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


@pytest.mark.parametrize("options", [
    {}, {"precision": 2}, {"sci_mode": False}, {"precision": 6}, {"profile": "short"},
    {"profile": "full"},
])
def test_set_printoptions_changes_repr_as_in_torch(print_options, options):
    """Small tensors print as PyTorch prints them; the layout of summaries and of lines broken
    at linewidth is NumPy's (checked below by what it shows, not character by character)."""
    values = [[1.123456789, 2e-5, 3.0], [1.5, 2.25, -0.125], [1.0, 2.0, 30.0], [0.5]]

    def run(lib):
        lib.set_printoptions(**options)
        return [repr(lib.tensor(v)) for v in values] + [repr(lib.arange(5))]
    ours, theirs = both(run)
    assert ours == theirs


def test_print_options_summarise_wrap_and_choose_notation(print_options):
    tg.set_printoptions(threshold=5, edgeitems=2)
    assert repr(tg.arange(10)) == "tensor([0, 1, ..., 8, 9])"
    assert "..." not in repr(tg.arange(5))
    tg.set_printoptions(profile="default", linewidth=30)
    lines = repr(tg.arange(20.0)).splitlines()
    assert len(lines) > 1 and max(len(line) for line in lines) <= 30
    tg.set_printoptions(profile="default", sci_mode=True, precision=3)
    assert repr(tg.tensor([1.5, 250.0])) == "tensor([1.500e+00, 2.500e+02])"
    tg.set_printoptions(profile="full")
    assert "..." not in repr(tg.zeros(5000))
    tg.set_printoptions(profile="default")
    assert "..." in repr(tg.zeros(1001)) and "..." not in repr(tg.zeros(1000))


def test_sci_mode_is_reset_by_a_call_that_does_not_name_it(print_options):
    tg.set_printoptions(sci_mode=False)
    tg.set_printoptions(precision=4)  # PyTorch resets sci_mode to automatic here too
    assert repr(tg.tensor([1.0, 2e-5])) == "tensor([1.0000e+00, 2.0000e-05])"
    with pytest.raises(ValueError, match="unknown profile 'long'"):
        tg.set_printoptions(profile="long")


# --- tg.Size -----------------------------------------------------------------------------
def test_size_behaves_as_torch_size():
    def run(lib):
        s = lib.zeros(2, 3, 4).size()
        e = lib.Size([])
        return [type(s).__name__, repr(s), str(s), s.numel(), e.numel(), repr(e), s == (2, 3, 4),
                hash(s) == hash((2, 3, 4)), type(s[1:]).__name__, list(s[1:]), s[-1],
                type(s + (5,)).__name__, type((5,) + s).__name__, type(s * 2).__name__,
                list((5,) + s), s.count(3), s.index(4), list(lib.Size([lib.tensor(3)]))]
    ours, theirs = both(run)
    ours[1:3] = [r.replace("tensorgrad.", "torch.") for r in ours[1:3]]
    ours[5] = ours[5].replace("tensorgrad.", "torch.")
    assert ours == theirs


def test_size_rejects_what_is_not_an_int():
    with pytest.raises(TypeError, match=r"Size\(\) takes an iterable of 'int' \(item 1 is "
                                        r"'float'\)"):
        tg.Size([2, 2.5])


def test_shape_stays_a_tuple_and_size_of_a_dim_is_an_int():
    x = tg.zeros(2, 3)
    assert type(x.shape) is tuple  # the documented difference (read by every op)
    assert x.size() == x.shape and x.size(1) == 3 and x.size(-2) == 2
    assert x.sum_to_size(tg.Size([1, 3])).shape == (1, 3)
