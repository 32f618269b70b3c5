"""tg.linalg.norm, vector_norm and matrix_norm against torch.linalg: values, shapes, gradients
and the errors."""
import math

import numpy as np
import pytest

import tensorgrad as tg

CASES = [
    ("vector_norm", (3, 4, 5), dict()),
    ("vector_norm", (3, 4, 5), dict(ord=1, dim=1)),
    ("vector_norm", (3, 4, 5), dict(ord=math.inf, dim=(0, 2))),
    ("vector_norm", (3, 4, 5), dict(ord=-math.inf, dim=2, keepdim=True)),
    ("vector_norm", (3, 4, 5), dict(ord=0, dim=-1)),
    ("vector_norm", (3, 4, 5), dict(ord=3.5, dim=0)),
    ("matrix_norm", (3, 4, 5), dict()),
    ("matrix_norm", (3, 4, 5), dict(ord=1)),
    ("matrix_norm", (3, 4, 5), dict(ord=-1, dim=(2, 0))),
    ("matrix_norm", (3, 4, 5), dict(ord=math.inf, keepdim=True)),
    ("matrix_norm", (4, 5), dict(ord=-math.inf)),
    ("norm", (3, 4, 5), dict()),
    ("norm", (4, 5), dict(ord=1)),
    ("norm", (4, 5), dict(ord="fro", dim=(1, 0))),
    ("norm", (6,), dict(ord=math.inf)),
    ("norm", (3, 4, 5), dict(dim=1, keepdim=True)),
    ("norm", (3, 4, 5), dict(dim=(0, 1), dtype="float64")),
]


@pytest.mark.parametrize("name, shape, kwargs", CASES)
def test_norms_equal_torch(name, shape, kwargs):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    torch_kwargs = dict(kwargs)
    if "dtype" in kwargs:
        torch_kwargs["dtype"] = getattr(torch, kwargs["dtype"])
    ours_x, their_x = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours = getattr(tg.linalg, name)(ours_x, **kwargs)
    theirs = getattr(torch.linalg, name)(their_x, **torch_kwargs)
    assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype)[6:]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5)
    if kwargs.get("ord") != 0:
        (ours * ours).sum().backward()
        (theirs * theirs).sum().backward()
        np.testing.assert_allclose(ours_x.grad.numpy(), their_x.grad.numpy(), rtol=1e-4,
                                   atol=1e-6)


def test_norms_differentiate_twice():
    x = tg.randn(3, 4, dtype=tg.float64, requires_grad=True)
    assert tg.gradgradcheck(lambda a: tg.linalg.vector_norm(a, 3, dim=1), (x,))
    assert tg.gradgradcheck(lambda a: tg.linalg.matrix_norm(a), (x,))


def test_norm_errors():
    with pytest.raises(NotImplementedError, match="singular values"):
        tg.linalg.matrix_norm(tg.ones(2, 2), ord="nuc")
    with pytest.raises(RuntimeError, match="1-D or 2-D"):
        tg.linalg.norm(tg.ones(2, 2, 2), ord=1)
    with pytest.raises(RuntimeError, match="floating point"):
        tg.linalg.vector_norm(tg.ones(2, dtype=tg.int64))
