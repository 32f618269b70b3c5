"""Places where a plausible implementation silently differs from PyTorch: each is compared with
torch on the same inputs (the gradient conventions at 0, 0-d tensors with a dim, which mixed
dtypes are errors)."""
import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.nn  # noqa: F401  (tg.nn.functional below)

torch = pytest.importorskip("torch")


def _grads(lib, base, exponent):
    x = lib.tensor(base, dtype=lib.float64, requires_grad=True)
    e = lib.tensor(exponent, dtype=lib.float64, requires_grad=True)
    y = x ** e
    y.sum().backward()
    return [np.asarray(t.detach()) for t in (y, x.grad, e.grad)]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's log(0) and 0 ** -1 warnings
def test_pow_gradients_at_zero_follow_torch():
    base = [0.0, 0.0, 0.0, 0.0, 2.0, -1.0, 3.0]
    exponent = [0.0, 2.0, -1.0, 0.5, 0.0, 0.5, 1.0]
    for ours, theirs in zip(_grads(tg, base, exponent), _grads(torch, base, exponent)):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("power", [0, 0.5, 1.0, 2.0, 3])
def test_power_of_a_zero_base(power):
    """d/dx x**p at x = 0 (x**0 has gradient 0, not NaN) and d/dp 0**p."""
    results = []
    for lib in (tg, torch):
        x = lib.zeros(3, dtype=lib.float64, requires_grad=True)
        (x ** power).sum().backward()
        p = lib.tensor([power, power], dtype=lib.float64, requires_grad=True)
        (lib.tensor(0.0, dtype=lib.float64) ** p).sum().backward()
        results.append((np.asarray(x.grad), np.asarray(p.grad)))
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, -1])
def test_softmax_of_a_0d_tensor(fn, dim):
    results = []
    for lib in (tg, torch):
        x = lib.tensor(1.5, requires_grad=True)
        y = getattr(x, fn)(dim)
        (y * 3.0).backward()
        results.append((y.shape, np.asarray(y.detach()), np.asarray(x.grad)))
    assert tuple(results[0][0]) == tuple(results[1][0]) == ()
    np.testing.assert_allclose(results[0][1], results[1][1])
    np.testing.assert_allclose(results[0][2], results[1][2])


@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "round", "trunc"])
def test_rounding_backward_gives_zero_like_torch(name):
    grads = []
    for lib in (tg, torch):
        x = lib.tensor([-1.7, -0.2, 0.3, 2.6], requires_grad=True)
        (getattr(x, name)() * 2.0).sum().backward()
        grads.append(np.asarray(x.grad))
    np.testing.assert_array_equal(*grads)


def test_where_needs_a_bool_condition_as_in_torch():
    a, b = tg.ones(3), tg.zeros(3)
    with pytest.raises(RuntimeError):
        torch.where(torch.ones(3), torch.ones(3), torch.zeros(3))
    with pytest.raises(TypeError, match="where: expected a bool condition, got float32"):
        tg.where(tg.ones(3), a, b)
    assert tg.where(tg.ones(3) != 0, a, b).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("op", ["matmul", "linear"])
def test_matrix_products_do_not_promote_dtypes(op):
    """PyTorch promotes a + b across float32/float64 but raises for matrix products: a float64
    batch through a float32 layer is an error, not a silent switch of the model to float64."""
    def call(lib):
        x = lib.ones(2, 3, dtype=lib.float64)
        w = lib.ones(4, 3)
        return x @ w.T if op == "matmul" else lib.nn.functional.linear(x, w)
    with pytest.raises(RuntimeError):
        call(torch)
    with pytest.raises(RuntimeError, match=f"{op}: expected both operands to have the same "
                                           "dtype, got float64 and float32"):
        call(tg)
    assert (tg.ones(2, 3) + tg.ones(3, dtype=tg.float64)).dtype == tg.float64  # as torch


IDX = [1, 0, 1]
MIXED_INDICES = [
    (0, slice(None), IDX), (IDX, slice(None), 0), (slice(None), 0, IDX), (0, IDX), (IDX, 0),
    (0, slice(None), IDX, 1), (IDX, 0, IDX), (None, 0, Ellipsis, IDX),
    (0, [[1, 0], [2, 1]], slice(1, 3)), (Ellipsis, 0, IDX), (IDX, slice(None), IDX, 0),
    (1, slice(None), slice(None), [True, False, True, False, True]), (slice(None), IDX, 0, IDX),
]


@pytest.mark.parametrize("index", MIXED_INDICES, ids=str)
def test_integers_mixed_with_index_tensors_give_torchs_shape(index):
    """PyTorch applies integers first (basic indexing) and the index tensors to the rest, so
    x[0, :, idx] on (2, 3, 4, 5) is (3, len(idx), 5), where NumPy's rule gives (3, 3, 5) with the
    indexed dims first."""
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    results = []
    for lib in (tg, torch):
        t = lib.tensor(x, requires_grad=True)
        out = t[tuple(lib.tensor(i) if isinstance(i, list) else i for i in index)]
        probe = np.arange(out.numel(), dtype=np.float64).reshape(tuple(out.shape))
        out.backward(lib.tensor(probe))
        results.append((tuple(out.shape), np.asarray(out.detach()), np.asarray(t.grad)))
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])
    np.testing.assert_array_equal(results[0][2], results[1][2])


ZERO_D_REDUCTIONS = {
    "sum": lambda x, d: x.sum(d), "mean": lambda x, d: x.mean(dim=d),
    "amax": lambda x, d: x.amax(d), "amin": lambda x, d: x.amin(d),
    "max": lambda x, d: x.max(dim=d).values, "min": lambda x, d: x.min(dim=d).values,
    "logsumexp": lambda x, d: x.logsumexp(d), "cumsum": lambda x, d: x.cumsum(d),
    "squeeze": lambda x, d: x.squeeze(d), "norm": lambda x, d: x.norm(dim=d),
}


@pytest.mark.parametrize("name", sorted(ZERO_D_REDUCTIONS))
@pytest.mark.parametrize("dim", [0, -1])
def test_0d_tensors_take_dim_0_and_minus_1(name, dim):
    results = []
    for lib in (tg, torch):
        x = lib.tensor(1.5, requires_grad=True)
        out = ZERO_D_REDUCTIONS[name](x, dim)
        (out * 2.0).backward()
        results.append((tuple(out.shape), float(out), float(x.grad)))
    assert results[0][0] == results[1][0]
    assert results[0][1:] == pytest.approx(results[1][1:])


def test_0d_argmax_and_max_indices():
    x = tg.tensor(3.0)
    assert x.argmax(0).shape == () and int(x.argmax(-1)) == 0
    assert int(x.max(dim=0).indices) == 0


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "var", "std", "norm"])
def test_an_empty_dim_tuple_reduces_everything_as_in_torch(name):
    x = np.arange(6.0).reshape(2, 3)
    ours = getattr(tg.tensor(x), name)(dim=())
    theirs = getattr(torch.tensor(x), name)(dim=())
    assert ours.shape == () and float(ours) == pytest.approx(float(theirs))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_with_a_dim_routes_the_gradient_to_the_returned_index(name):
    """On ties max(dim)/min(dim) give the whole gradient to the index they return, as PyTorch;
    amax/amin (and max() without a dim) share it evenly, as PyTorch does too."""
    values = [[1.0, 3.0, 3.0, 2.0], [0.0, 0.0, 5.0, 0.0]]
    for reduce in (lambda x: getattr(x, name)(dim=1).values, lambda x: getattr(x, name)(),
                   lambda x: x.amax(1) if name == "max" else x.amin(1)):
        grads = []
        for lib in (tg, torch):
            x = lib.tensor(values, requires_grad=True)
            reduce(x).sum().backward()
            grads.append(np.asarray(x.grad))
        np.testing.assert_array_equal(*grads)


@pytest.mark.parametrize("dtype", ["bool", "int32", "float64"])
def test_tril_and_triu_keep_the_dtype(dtype):
    for name, diagonal in (("tril", 0), ("triu", 1), ("tril", -1)):
        ours = getattr(tg.ones(3, 4, dtype=getattr(tg, dtype)), name)(diagonal)
        theirs = getattr(torch.ones(3, 4, dtype=getattr(torch, dtype)), name)(diagonal)
        assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
        np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())


def test_scatter_add_reads_the_leading_block_of_a_larger_src():
    """Found by the fuzzer: PyTorch takes an index smaller than src (index.size(d) <=
    src.size(d)) and reads src's leading block; torch's backward refuses it, ours does not."""
    for index, src_shape, dim in (([0, 2], (4,), 0), ([[0], [2]], (2, 3), 1)):
        x = np.zeros((3,) if dim == 0 else (2, 3))
        src = np.arange(np.prod(src_shape), dtype=np.float64).reshape(src_shape) + 1
        ours = tg.tensor(x).scatter_add(dim, tg.tensor(index), tg.tensor(src))
        theirs = torch.tensor(x).scatter_add(dim, torch.tensor(index), torch.tensor(src))
        np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())


@pytest.mark.parametrize("index", [(slice(None, None, -1),), (0, slice(None, None, -2)),
                                   ([0, 1], slice(None, None, -1)), (slice(None, None, 0),)])
def test_a_slice_step_below_one_is_an_error_as_in_torch(index):
    for lib in (tg, torch):
        x = lib.zeros(2, 3)
        with pytest.raises(ValueError, match="step"):
            x[index]
        with pytest.raises(ValueError, match="step"):
            x[index] = 1.0
    np.testing.assert_array_equal(tg.arange(4).flip(0).numpy(), [3, 2, 1, 0])  # the way to reverse
