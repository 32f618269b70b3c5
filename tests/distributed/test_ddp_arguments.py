"""DistributedDataParallel's argument checks and errors, in this process (no MPI started)."""
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn.parallel import DistributedDataParallel


def test_wrapping_before_init_says_what_to_call():
    with pytest.raises(RuntimeError, match=r"tensorgrad.distributed.init\(\)"):
        DistributedDataParallel(nn.Linear(2, 2))


@pytest.mark.parametrize("kwargs, error, match", [
    ({"find_unused_parameters": True}, NotImplementedError, "find_unused_parameters=True"),
    ({"gradient_as_bucket_view": True}, NotImplementedError, "gradient_as_bucket_view"),
    ({"bucket_cap_mb": 0}, ValueError, "bucket_cap_mb must be positive"),
    ({"process_group": object()}, NotImplementedError, "only the default group"),
])
def test_unsupported_arguments_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        DistributedDataParallel(nn.Linear(2, 2), **kwargs)


def test_module_must_be_a_module():
    with pytest.raises(TypeError, match="module must be a tensorgrad.nn.Module, got function"):
        DistributedDataParallel(lambda x: x)


def test_the_import_is_torchs():
    assert tg.nn.parallel.DistributedDataParallel is DistributedDataParallel
