"""About 500 everyday PyTorch calls (torch_checklist_tensors.py, torch_checklist_nn.py), each
run with torch and with tensorgrad in its place, the results compared: values, shapes and
dtypes."""
import numpy as np
import pytest

import tensorgrad as tg
import torch_checklist_nn as nn_calls
import torch_checklist_tensors as tensor_calls

torch = pytest.importorskip("torch")

def plain(x):
    """A result reduced to what the two libraries can be compared on."""
    if isinstance(x, (torch.Tensor, tg.Tensor)):
        return ("tensor", tuple(x.shape), _dtype_name(x.dtype), x.detach().cpu().numpy())
    if isinstance(x, np.ndarray):
        return ("tensor", x.shape, str(x.dtype), x)
    if isinstance(x, (torch.dtype, tg.dtype, np.dtype)):
        return ("dtype", _dtype_name(x))
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):  # torch.Size, named tuples (max, topk) and lists alike
        return [plain(v) for v in x]
    if isinstance(x, (bool, int, float, str, type(None), np.generic)):
        return x
    raise TypeError(f"the checklist cannot compare a {type(x).__name__}")


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "").replace("tensorgrad.", "")


def same(ours, theirs, where="result"):
    if isinstance(theirs, tuple) and theirs and theirs[0] in ("tensor", "dtype"):
        assert isinstance(ours, tuple) and ours[:-1] == theirs[:-1] if theirs[0] == "tensor" \
            else ours == theirs, f"{where}: {ours[:3] if isinstance(ours, tuple) else ours} " \
                                 f"!= {theirs[:3]}"
        if theirs[0] == "tensor":
            np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-4, atol=1e-5,
                                       err_msg=where)
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs), where
        for key in theirs:
            same(ours[key], theirs[key], f"{where}[{key!r}]")
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), f"{where}: {ours} != {theirs}"
        for i, (o, t) in enumerate(zip(ours, theirs)):
            same(o, t, f"{where}[{i}]")
    elif isinstance(theirs, float):
        assert ours == pytest.approx(theirs, rel=1e-5, abs=1e-7), where
    else:
        assert ours == theirs and type(ours) is type(theirs), f"{where}: {ours!r} != {theirs!r}"


GROUPS = {"creation": tensor_calls.CREATION, "tensor": tensor_calls.TENSOR,
          "more": tensor_calls.MORE, "nn": nn_calls.NN, "functional": nn_calls.FUNCTIONAL,
          "optim": nn_calls.OPTIM, "data": nn_calls.DATA, "autograd": nn_calls.AUTOGRAD,
          "serialization": nn_calls.SERIALIZATION}
ENTRIES = [(f"{group}: {name}", fn) for group, entries in GROUPS.items()
           for name, fn in entries]


@pytest.mark.parametrize("name, fn", ENTRIES)
def test_everyday_call_works_like_torch(name, fn):
    torch.manual_seed(0)
    tg.manual_seed(0)
    theirs = plain(fn(torch))
    ours = plain(fn(tg))
    same(ours, theirs)
