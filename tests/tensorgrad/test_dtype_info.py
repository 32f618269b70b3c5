"""tensorgrad.finfo / tensorgrad.iinfo against torch.finfo / torch.iinfo, field by field."""
import pytest

import tensorgrad as tg

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_torch(name):
    ours, theirs = tg.finfo(getattr(tg, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert tg.finfo(name).max == ours.max  # names work as dtypes too


def test_finfo_defaults_to_float32():
    assert tg.finfo().dtype == "float32" == torch.finfo().dtype


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name):
    ours, theirs = tg.iinfo(getattr(tg, name)), torch.iinfo(getattr(torch, name))
    for field in ("bits", "max", "min", "dtype"):
        assert getattr(ours, field) == getattr(theirs, field), field


def test_the_wrong_kind_of_dtype_is_named():
    with pytest.raises(TypeError, match="finfo: expected a floating point dtype, got int64"):
        tg.finfo(tg.int64)
    with pytest.raises(TypeError, match="iinfo: expected an integer dtype, got float32"):
        tg.iinfo(tg.float32)
    with pytest.raises(TypeError, match="iinfo: expected an integer dtype, got bool"):
        tg.iinfo(tg.bool)
