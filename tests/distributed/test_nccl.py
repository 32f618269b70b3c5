"""The NCCL path (tensorgrad/backend/nccl.py): worker_checks.py's collectives and DDP checks on
cuda tensors. On two GPUs, one per rank, where CuPy sees two; in a world of one rank on one GPU,
or on the CuPy stand-in (TENSORGRAD_CUDA_STANDIN=1), whose NCCL is that world of one."""
import os
import pathlib

import pytest

import tensorgrad as tg
from ranks import reports, run_ranks

WORKER = pathlib.Path(__file__).with_name("worker_checks.py")
STANDIN_RUN = pathlib.Path(__file__).with_name("standin_run.py")
STANDIN = os.environ.get("TENSORGRAD_CUDA_STANDIN") == "1"


def _gpus():
    if not tg.cuda_is_available():
        return 0
    import cupy
    return cupy.cuda.runtime.getDeviceCount()


def _check_every_rank(tmp_path, n):
    command = [STANDIN_RUN, WORKER] if STANDIN else [WORKER]
    done = run_ranks(*command, tmp_path, "cuda", n=n, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    for rank, report in enumerate(reports(tmp_path, n)):
        failed = {name: trace for name, trace in report.items() if trace}
        assert report and not failed, f"rank {rank}:\n" + "\n".join(failed.values())
    return report


@pytest.mark.skipif(_gpus() < 2, reason="NCCL needs CuPy and two visible NVIDIA GPUs")
def test_every_check_on_two_gpus(tmp_path):
    _check_every_rank(tmp_path, 2)


@pytest.mark.skipif(_gpus() < 1, reason="cuda: CuPy with a visible NVIDIA GPU (or the stand-in)")
def test_every_check_in_a_world_of_one_cuda_rank(tmp_path):
    """Collectives on device arrays, and DDP's buckets as device buffers."""
    try:
        from cupy.cuda.nccl import NcclCommunicator  # noqa: F401
    except (ImportError, NotImplementedError) as exc:  # no NCCL library: the stand-in says so
        pytest.skip(f"no NCCL here: {exc}")
    report = _check_every_rank(tmp_path, 1)
    assert "ddp_gradients_equal_one_process_on_the_global_batch" in report  # several buckets
