"""Shared fixtures: every test that takes `device` runs on each available device."""
import pytest

import tensorgrad as tg

DEVICES = ["cpu", "cuda"]


@pytest.fixture(params=DEVICES)
def device(request):
    if request.param == "cuda" and not tg.cuda_is_available():
        pytest.skip("cuda: CuPy with a visible NVIDIA GPU is needed for the cuda backend")
    return request.param


@pytest.fixture(autouse=True)
def _seed():
    tg.manual_seed(0)
    yield
