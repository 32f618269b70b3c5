"""tg.compile accepts torch.compile's arguments and returns what it was given (eager)."""
import pytest

import tensorgrad as tg
from tensorgrad import nn


def test_compile_returns_the_module_or_function_unchanged():
    model = nn.Linear(2, 3)
    assert tg.compile(model) is model
    assert tg.compile(model, mode="max-autotune", fullgraph=True, dynamic=False) is model

    def f(x):
        return x * 2

    assert tg.compile(f, backend="eager") is f
    decorated = tg.compile(options={"triton.cudagraphs": False})(f)
    assert decorated is f


@pytest.mark.parametrize("kwargs, message", [
    (dict(mode="fastest"), "unrecognized mode"),
    (dict(mode="default", options={}), "both can't be specified"),
    (dict(backend=3), "backend must be"),
])
def test_compile_checks_its_arguments_as_torch(kwargs, message):
    with pytest.raises(RuntimeError, match=message):
        tg.compile(lambda x: x, **kwargs)
    with pytest.raises(TypeError):
        tg.compile(lambda x: x, fast=True)


def test_torch_accepts_the_same_arguments():
    torch = pytest.importorskip("torch")
    for kwargs in (dict(mode="max-autotune", fullgraph=True, dynamic=False),
                   dict(backend="eager"), dict(options={"triton.cudagraphs": False})):
        torch.compile(lambda x: x, **kwargs)
    with pytest.raises(RuntimeError):
        torch.compile(lambda x: x, mode="default", options={})
