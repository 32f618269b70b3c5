"""tensorgrad's dtypes against torch's: attributes, repr, equality and hashing, NumPy accepting
them, the default dtype; bfloat16 (through ml_dtypes) in casts, arithmetic, matmul, modules and
checkpoints, against torch's results to bfloat16's tolerance."""
import copy
import pickle

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn

torch = pytest.importorskip("torch")

NAMES = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128", "int8", "int16",
         "int32", "int64", "uint8", "bool"]
ALIASES = ["float", "double", "half", "long", "int", "short", "cfloat", "cdouble"]


@pytest.mark.parametrize("name", NAMES)
def test_attributes_match_torch(name):
    ours, theirs = getattr(tg, name), getattr(torch, name)
    for field in ("is_floating_point", "is_complex", "is_signed", "itemsize"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert repr(ours) == repr(theirs).replace("torch", "tensorgrad") and str(ours) == name
    assert isinstance(ours, tg.dtype)


@pytest.mark.parametrize("name", ALIASES)
def test_aliases_are_the_same_objects(name):
    assert getattr(tg, name) is getattr(tg, repr(getattr(torch, name))[6:])


def test_one_object_per_dtype_equal_to_numpys():
    x = tg.ones(2)
    assert x.dtype is tg.float32 and x.double().dtype is tg.float64
    assert x.dtype == tg.float32 and x.dtype != tg.float64 and tg.float32 != "float32"
    assert tg.float32 == np.dtype("float32") and np.dtype("float32") == tg.float32
    assert {tg.float32: 1}[np.dtype("float32")] == 1 and {np.dtype("int64"): 2}[tg.int64] == 2
    assert len({tg.float32, tg.float32, tg.float64}) == 2
    assert copy.deepcopy(tg.bfloat16) is tg.bfloat16
    assert pickle.loads(pickle.dumps(tg.int8)) is tg.int8
    # NumPy's scalar types too, as a NumPy dtype compares: backend code asks
    # `dtype in (numpy.float32, numpy.float64)`, and False there drew other random numbers
    assert tg.float32 == np.float32 and tg.float32 in (np.float32, np.float64)
    assert tg.float16 != np.float32 and tg.int64 == np.int64


def test_the_random_draws_are_numpys_for_each_dtype():
    cpu = tg.backend.get_backend("cpu")
    for ours, theirs in ((tg.float32, np.float32), (tg.float64, np.float64)):
        for draw in ("random_uniform", "random_normal"):
            a = getattr(cpu, draw)((5,), ours, np.random.default_rng(3))
            b = getattr(cpu, draw)((5,), np.dtype(theirs), np.random.default_rng(3))
            assert a.dtype == theirs and np.array_equal(a, b), draw
    exact = np.random.default_rng(3).random(5, dtype=np.float32)
    assert np.array_equal(cpu.random_uniform((5,), tg.float32, np.random.default_rng(3)), exact)


def test_numpy_takes_them_wherever_it_takes_a_dtype():
    assert np.zeros(2, dtype=tg.float16).dtype == np.float16
    assert np.arange(3).astype(tg.bfloat16).dtype.name == "bfloat16"
    assert np.dtype(tg.uint8) == np.uint8
    assert tg.tensor([1, 2], dtype=np.float64).dtype is tg.float64  # and NumPy's are accepted


def test_default_dtype():
    assert tg.get_default_dtype() is tg.float32
    try:
        tg.set_default_dtype(tg.float64)
        assert tg.get_default_dtype() is tg.float64 and tg.tensor([1.0]).dtype is tg.float64
    finally:
        tg.set_default_dtype(tg.float32)
    with pytest.raises(TypeError, match="only floating point dtypes"):
        tg.set_default_dtype(tg.int64)


def test_tensor_predicates_follow_the_dtype():
    assert tg.ones(2, dtype=tg.bfloat16).is_floating_point() and tg.is_floating_point(tg.ones(1))
    assert not tg.ones(2, dtype=tg.int64).is_floating_point()
    assert tg.ones(2, dtype=tg.bfloat16).element_size() == 2


# --- bfloat16 ------------------------------------------------------------------------------------
def _pair(*shape, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return tg.tensor(values).bfloat16(), torch.tensor(values).bfloat16()


def _same(ours, theirs, rtol=1e-2, atol=1e-2):
    assert ours.dtype is getattr(tg, repr(theirs.dtype)[6:])
    np.testing.assert_allclose(ours.float().detach().numpy(), theirs.float().detach().numpy(),
                               rtol=rtol, atol=atol)


def test_casts_to_and_from_bfloat16_round_as_torch():
    values = np.linspace(-3, 3, 101, dtype=np.float32) * np.float32(1.00390625)  # between bf16s
    ours, theirs = tg.tensor(values).to(tg.bfloat16), torch.tensor(values).to(torch.bfloat16)
    _same(ours, theirs, rtol=0, atol=0)  # round to nearest even in both
    assert tg.tensor(values).to("bfloat16").dtype is tg.bfloat16
    assert tg.tensor(values).type(tg.bfloat16).dtype is tg.bfloat16
    _same(ours.float(), theirs.float(), rtol=0, atol=0)


@pytest.mark.parametrize("expr", [
    lambda t, a, b: a + b, lambda t, a, b: a * b - a / (b.abs() + 1), lambda t, a, b: a * 2.5,
    lambda t, a, b: 1 - a, lambda t, a, b: a @ b.T, lambda t, a, b: (a.exp() + b.tanh()).sum(1),
    lambda t, a, b: a.relu().mean(), lambda t, a, b: t.softmax(a, 1),
    lambda t, a, b: a.max(1).values, lambda t, a, b: a + b.float(),
    lambda t, a, b: a + t.ones(3, 4, dtype=t.float16), lambda t, a, b: a.clamp(-0.5, 0.5),
])
def test_arithmetic_and_matmul_give_torchs_results(expr):
    (a, ta), (b, tb) = _pair(3, 4), _pair(3, 4, seed=1)
    _same(expr(tg, a, b), expr(torch, ta, tb))


def test_repr_and_what_bfloat16_does_not_do():
    values = [0.5, -1.25, 3.0]
    assert repr(tg.tensor(values).bfloat16()) == \
        repr(torch.tensor(values).bfloat16()).replace("torch.", "")
    a = tg.ones(2, 2).bfloat16()
    with pytest.raises(TypeError, match=r"einsum: .*bfloat16"):  # NumPy's einsum has no loop
        tg.einsum("ij,jk->ik", a, a)


def test_gradients_in_bfloat16():
    (a, ta), (b, tb) = _pair(3, 4), _pair(4, 2, seed=1)
    for x in (a, b, ta, tb):
        x.requires_grad_()
    ((a @ b).tanh() * 3).sum().backward()
    ((ta @ tb).tanh() * 3).sum().backward()
    _same(a.grad, ta.grad, rtol=3e-2, atol=3e-2)
    _same(b.grad, tb.grad, rtol=3e-2, atol=3e-2)


def test_module_bfloat16_and_back():
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.LayerNorm(8))
    ours = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8))
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    ours.bfloat16(), theirs.bfloat16()
    assert all(p.dtype is tg.bfloat16 for p in ours.parameters())
    x, tx = _pair(2, 4)
    _same(ours(x), theirs(tx), rtol=5e-2, atol=5e-2)
    assert all(p.dtype is tg.float32 for p in ours.float().parameters())
    assert all(p.dtype is tg.float16 for p in ours.half().parameters())
    assert all(p.dtype is tg.float64 for p in ours.double().parameters())


def test_saving_and_loading_bfloat16(tmp_path):
    a, _ = _pair(3, 5)
    tg.save({"w": a}, tmp_path / "ours.pt")
    back = tg.load(tmp_path / "ours.pt")["w"]
    assert back.dtype is tg.bfloat16 and (back == a).all()
    safetensors_torch = pytest.importorskip("safetensors.torch")
    assert safetensors_torch.load_file(tmp_path / "ours.pt")["w"].dtype == torch.bfloat16


def test_loading_a_torch_bfloat16_state_dict(tmp_path):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    torch.manual_seed(1)
    theirs = torch.nn.Linear(4, 3).bfloat16()
    safetensors_torch.save_file(theirs.state_dict(), tmp_path / "model.safetensors")
    ours = nn.Linear(4, 3).bfloat16()
    ours.load_state_dict(tg.load(tmp_path / "model.safetensors"))
    assert ours.weight.dtype is tg.bfloat16
    x, tx = _pair(2, 4)
    _same(ours(x), theirs(tx))
    np.testing.assert_array_equal(ours.weight.float().detach().numpy(),
                                  theirs.weight.float().detach().numpy())


def test_bfloat16_and_its_package_load_at_first_use():
    """ml_dtypes takes about half a second to import, more than the rest of tensorgrad."""
    import subprocess
    import sys
    code = ("import sys, tensorgrad as tg\n"
            "before = 'ml_dtypes' in sys.modules\n"
            "x = tg.ones(2, dtype='bfloat16')\n"
            "same = x.dtype is tg.bfloat16 is tg.backend.bfloat16\n"
            "print(before, same, 'ml_dtypes' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "True"]
