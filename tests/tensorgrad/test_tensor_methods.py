"""Tensor methods are declared on the ops (`@tensor_method`): every op PyTorch also has as a
torch.Tensor method must be one here too, and be the op itself."""
import inspect

import pytest

import tensorgrad as tg
import tensorgrad.ops as ops

# Ops that torch.Tensor has as methods but tensorgrad deliberately offers as functions only.
FUNCTION_ONLY = {
    "to_device": "a tensorgrad primitive behind Tensor.to; torch.Tensor has no such method",
}


def _public_ops():
    for name, fn in vars(ops).items():
        if not name.startswith("_") and inspect.isfunction(fn):
            yield name, fn


def test_every_op_torch_has_as_a_method_is_a_method():
    torch = pytest.importorskip("torch")
    missing = [name for name, _ in _public_ops()
               if hasattr(torch.Tensor, name) and name not in FUNCTION_ONLY
               and not hasattr(tg.Tensor, name)]
    assert not missing, f"ops without their Tensor method (add @tensor_method): {missing}"


def test_methods_are_the_ops_themselves():
    for name, fn in _public_ops():
        method = vars(tg.Tensor).get(name)
        if inspect.isfunction(method) and method.__module__.startswith("tensorgrad.ops") \
                and name != "where":  # torch.Tensor.where(condition, other): self is the input
            assert method is fn, name


def test_help_shows_the_ops_docstring():
    assert tg.Tensor.softmax.__doc__ == tg.softmax.__doc__
    assert "along dim" in tg.Tensor.softmax.__doc__
    x = tg.tensor([1.0, 2.0])
    assert bool((x.softmax(0) == tg.softmax(x, 0)).all())


def test_methods_declared_from_private_functions_show_their_method_name():
    """help(Tensor) and tracebacks name Tensor.backward, not the function behind it."""
    import types
    named = {name: fn.__name__ for name, fn in vars(tg.Tensor).items()
             if isinstance(fn, types.FunctionType)}
    assert not {name: own for name, own in named.items()
                if not name.startswith("_") and own.startswith("_")}
    assert tg.Tensor.__init__.__name__ == "__init__"
    assert tg.Tensor.backward.__qualname__ == "Tensor.backward"
