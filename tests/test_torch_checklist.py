"""About 500 everyday PyTorch calls (tests/torch_checklist.py), each run with torch and with
tensorgrad in its place, the results compared: values, shapes and dtypes. A call that does not
work like torch yet is listed in KNOWN_GAPS with the reason; such an entry must keep failing
(strict xfail), so fixing one means removing it from the list."""
import numpy as np
import pytest

import tensorgrad as tg
from torch_checklist import ENTRIES

torch = pytest.importorskip("torch")

KNOWN_GAPS = {
}


def plain(x):
    """A result reduced to what the two libraries can be compared on."""
    if isinstance(x, (torch.Tensor, tg.Tensor)):
        return ("tensor", tuple(x.shape), _dtype_name(x.dtype), x.detach().cpu().numpy())
    if isinstance(x, np.ndarray):
        return ("tensor", x.shape, str(x.dtype), x)
    if isinstance(x, (torch.dtype, np.dtype)):
        return ("dtype", _dtype_name(x))
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):  # torch.Size, named tuples (max, topk) and lists alike
        return [plain(v) for v in x]
    if isinstance(x, (bool, int, float, str, type(None), np.generic)):
        return x
    raise TypeError(f"the checklist cannot compare a {type(x).__name__}")


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


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


@pytest.mark.parametrize("name, fn", [
    pytest.param(name, fn, marks=pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[name]))
    if name in KNOWN_GAPS else (name, fn) for name, fn in ENTRIES])
def test_everyday_call_works_like_torch(name, fn):
    torch.manual_seed(0)
    tg.manual_seed(0)
    theirs = plain(fn(torch))
    ours = plain(fn(tg))
    same(ours, theirs)


def test_known_gaps_name_entries():
    assert set(KNOWN_GAPS) <= {name for name, _ in ENTRIES}
