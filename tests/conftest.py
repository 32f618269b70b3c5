"""Shared fixtures: every test that takes `device` runs on each available device.

With TENSORGRAD_CUDA_STANDIN=1 the cuda cases run on a test-only CuPy stand-in
(tests/cupy_standin.py): the CPU computing behind CuPy's interface, not a GPU."""
import os

import pytest

STANDIN = os.environ.get("TENSORGRAD_CUDA_STANDIN") == "1"
STANDIN_SKIP = None
if STANDIN:
    import cupy_standin
    STANDIN_SKIP = cupy_standin.install()

import tensorgrad as tg  # noqa: E402 - after the stand-in, so that `cupy` is the stand-in

DEVICES = ["cpu", "cuda"]


def pytest_report_header(config):
    if not STANDIN:
        return None
    if STANDIN_SKIP:
        return f"cuda cases: stand-in requested but skipped: {STANDIN_SKIP}"
    counts = ", ".join(f"{name} {implemented}/{exposed}"
                       for name, (exposed, implemented) in cupy_standin.count_names().items())
    return ("cuda cases on the CuPy STAND-IN (not a GPU): NumPy behind the real cupy's names "
            f"(implemented/exposed: {counts})")


@pytest.fixture(params=DEVICES)
def device(request):
    if request.param == "cuda":
        if STANDIN_SKIP:
            pytest.skip(STANDIN_SKIP)
        if not tg.cuda_is_available():
            pytest.skip("cuda: CuPy with a visible NVIDIA GPU is needed for the cuda backend")
    return request.param


@pytest.fixture(autouse=True)
def _seed():
    tg.manual_seed(0)
    yield
