"""sort, argsort, msort, topk, kthvalue, median, nanmedian, mode against PyTorch: values, gradients
(scattered to the chosen indices), indices wherever PyTorch's are defined (a stable sort, or no
ties), NaN, integer dtypes, 0-d and empty tensors."""
import numpy as np
import pytest

import tensorgrad as tg

torch = pytest.importorskip("torch")

SHAPES = [(7,), (3, 5), (2, 3, 4)]


def _distinct(shape, seed=0):
    return np.random.default_rng(seed).permutation(int(np.prod(shape))).reshape(shape) * 0.5 - 3


def _ties(shape, seed=0):
    return np.random.default_rng(seed).integers(0, 3, shape).astype("float64")


def _run(ours_fn, torch_fn, array, probe_seed=1):
    """Both outputs (values, and indices when there are any) and both input gradients of
    <probe, values>."""
    x = tg.tensor(array, requires_grad=array.dtype.kind == "f")
    t = torch.tensor(array, requires_grad=array.dtype.kind == "f")
    ours, theirs = ours_fn(x), torch_fn(t)
    ours = tuple(ours) if isinstance(ours, tuple) else (ours,)
    theirs = tuple(theirs) if isinstance(theirs, tuple) else (theirs,)
    assert [o.shape for o in ours] == [tuple(o.shape) for o in theirs]
    grads = None
    if ours[0].requires_grad:
        probe = np.random.default_rng(probe_seed).standard_normal(ours[0].shape)
        (ours[0] * tg.tensor(probe)).sum().backward()
        (theirs[0] * torch.tensor(probe)).sum().backward()
        grads = x.grad.numpy(), t.grad.numpy()
    return ([o.detach().numpy() for o in ours], [o.detach().numpy() for o in theirs], grads)


def _call(array, method, *args, torch_args=None, **kwargs):
    """_run of the same Tensor method with the same arguments on both sides (PyTorch's
    arguments may be given apart, for its keyword-only `stable` overloads)."""
    t_args, t_kwargs = torch_args if torch_args is not None else (args, kwargs)
    return _run(lambda x: getattr(x, method)(*args, **kwargs),
                lambda t: getattr(t, method)(*t_args, **t_kwargs), array)


def _same(ours, theirs, grads, indices=True):
    np.testing.assert_array_equal(ours[0], theirs[0])
    if indices and len(ours) > 1:
        np.testing.assert_array_equal(ours[1], theirs[1])
        assert ours[1].dtype == np.int64
    if grads is None:
        return
    if indices:
        np.testing.assert_allclose(*grads, rtol=1e-12, atol=1e-12)
    else:  # tied values: the two may pick different copies, the gradient's total is the same
        np.testing.assert_allclose(grads[0].sum(), grads[1].sum(), rtol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("descending", [False, True])
def test_stable_sort_matches_torch_with_ties(shape, descending):
    for dim in range(-len(shape), len(shape)):
        keywords = ((), dict(dim=dim, descending=descending, stable=True))
        _same(*_call(_ties(shape), "sort", dim, descending, stable=True, torch_args=keywords))
        _same(*_call(_ties(shape), "argsort", dim, descending, stable=True,
                     torch_args=keywords))


@pytest.mark.parametrize("shape", SHAPES)
def test_default_sort_matches_torch(shape):
    """The default (unstable) sort: values always, indices where no two values tie."""
    _same(*_run(lambda x: x.sort(), lambda t: t.sort(), _distinct(shape)))
    _same(*_run(lambda x: tg.sort(x, descending=True), lambda t: torch.sort(t, descending=True),
                _distinct(shape)))
    _same(*_run(lambda x: x.sort(0), lambda t: t.sort(0), _ties(shape)), indices=False)
    _same(*_run(lambda x: x.msort(), lambda t: t.msort(), _distinct(shape)))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_torch(shape, largest):
    n = shape[-1]
    for k in sorted({0, 1, n // 2, n}):
        _same(*_call(_distinct(shape), "topk", k, largest=largest))
        _same(*_call(_ties(shape), "topk", k, -1, largest), indices=False)
    _same(*_run(lambda x: x.topk(1, dim=0, largest=largest),
                lambda t: t.topk(1, dim=0, largest=largest), _distinct(shape)))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_and_median_match_torch(shape, keepdim):
    for dim in range(len(shape)):
        for k in (1, shape[dim]):
            _same(*_call(_distinct(shape), "kthvalue", k, dim, keepdim))
        _same(*_call(_distinct(shape), "median", dim, keepdim))
        _same(*_call(_ties(shape), "median", dim, keepdim), indices=False)
        _same(*_call(_distinct(shape), "nanmedian", dim, keepdim))
    _same(*_run(lambda x: x.median(), lambda t: t.median(), _distinct(shape)))
    _same(*_run(lambda x: (x.median(),), lambda t: (t.median(),), _ties(shape)))  # shared grad
    _same(*_run(lambda x: (x.nanmedian(),), lambda t: (t.nanmedian(),), _ties(shape)))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_mode_matches_torch(shape, keepdim):
    for dim in range(len(shape)):
        array = _ties(shape, seed=dim)
        _same(*_call(array, "mode", dim, keepdim))  # the last occurrence's index, as torch
    assert tg.tensor([3, 1, 3, 1, 2]).mode().values.item() == 1  # the smallest of equals


def test_median_is_the_lower_middle_value():
    x = tg.tensor([4.0, 1.0, 3.0, 2.0])
    assert x.median().item() == 2.0 and x.median(0).indices.item() == 3


NAN = float("nan")


def test_nan_orders_as_the_largest_value_as_in_torch():
    array = np.array([[1.0, NAN, -2.0, 5.0, NAN], [0.5, 3.0, NAN, -1.0, 2.0]])
    for descending in (False, True):
        ours, theirs, _ = _call(array, "sort", -1, descending, stable=True,
                                torch_args=((), dict(dim=-1, descending=descending, stable=True)))
        np.testing.assert_array_equal(ours[0], theirs[0])  # NaN == NaN here
        np.testing.assert_array_equal(ours[1], theirs[1])
    for largest in (True, False):
        ours, theirs, _ = _call(array, "topk", 3, largest=largest)
        np.testing.assert_array_equal(ours[0], theirs[0])
    ours, theirs, _ = _run(lambda x: x.median(1), lambda t: t.median(1), array)
    np.testing.assert_array_equal(ours[0], theirs[0])  # NaN in both rows
    assert np.isnan(array[[0, 1], ours[1]]).all()  # the index of a NaN, as torch gives
    all_nan = np.array([[NAN, NAN], [1.0, NAN]])
    for a in (array, all_nan):
        ours, theirs, _ = _run(lambda x: x.nanmedian(1), lambda t: t.nanmedian(1), a)
        np.testing.assert_array_equal(ours[0], theirs[0])
        np.testing.assert_array_equal(ours[1], theirs[1])
    assert np.isnan(tg.tensor(array).median().item())


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_integer_and_bool_tensors_sort(dtype):
    array = np.random.default_rng(0).integers(0, 5, (3, 6)).astype(dtype)
    _same(*_run(lambda x: x.sort(stable=True), lambda t: t.sort(stable=True), array))
    _same(*_run(lambda x: x.sort(descending=True, stable=True),
                lambda t: t.sort(descending=True, stable=True), array))
    if dtype != "bool":
        _same(*_run(lambda x: x.topk(2), lambda t: t.topk(2), array), indices=False)
        _same(*_run(lambda x: x.median(1), lambda t: t.median(1), array), indices=False)
        _same(*_call(array, "mode", 1))


def test_zero_dim_and_empty_tensors():
    x = tg.tensor(2.5, requires_grad=True)
    for dim in (0, -1):
        values, indices = x.sort(dim)
        assert values.shape == indices.shape == () and indices.item() == 0
    assert x.topk(1).values.item() == 2.5 and x.kthvalue(1).indices.item() == 0
    assert x.median().item() == 2.5 and x.argsort().shape == ()
    x.sort().values.backward()
    assert x.grad.item() == 1.0
    empty = tg.zeros(2, 0)
    assert empty.sort(-1).values.shape == (2, 0) and empty.topk(0).indices.shape == (2, 0)
    assert np.isnan(tg.zeros(0).median().item())  # torch.tensor([]).median() is nan too


def test_float32_stays_float32():
    x = tg.randn(3, 4, requires_grad=True)
    for out in (x.sort().values, x.topk(2).values, x.kthvalue(2).values, x.median(1).values,
                x.median(), x.nanmedian()):
        assert out.dtype == tg.float32
    x.topk(2).values.sum().backward()
    assert x.grad.dtype == tg.float32


def test_bad_arguments_name_the_op():
    x = tg.zeros(2, 3)
    with pytest.raises(IndexError, match=r"topk: k=4 is out of range .* size 3"):
        x.topk(4)
    with pytest.raises(IndexError, match=r"kthvalue: k=0 is out of range"):
        x.kthvalue(0)
    with pytest.raises(IndexError, match="sort: dim 2 is out of range"):
        x.sort(2)
    with pytest.raises(IndexError, match="median: dimension 1 of shape .* is empty"):
        tg.zeros(2, 0).median(1)


def test_second_order_through_sorted_values():
    x = tg.randn(2, 5, dtype=tg.float64, requires_grad=True)
    assert tg.gradgradcheck(lambda a: (a.topk(3).values ** 3).sum(), [x])
    assert tg.gradgradcheck(lambda a: (a.sort(0, descending=True).values ** 2).sum(), [x])
