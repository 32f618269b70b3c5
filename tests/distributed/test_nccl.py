"""The NCCL path (tensorgrad/backend/nccl.py): worker_checks.py's collectives and DDP checks on
two GPUs, one per rank. Runs only where CuPy sees two GPUs."""
import pathlib

import pytest

import tensorgrad as tg
from ranks import reports, run_ranks

WORKER = pathlib.Path(__file__).with_name("worker_checks.py")


def _gpus():
    if not tg.cuda_is_available():
        return 0
    import cupy
    return cupy.cuda.runtime.getDeviceCount()


@pytest.mark.skipif(_gpus() < 2, reason="NCCL needs CuPy and two visible NVIDIA GPUs")
def test_every_check_on_two_gpus(tmp_path):
    done = run_ranks(WORKER, tmp_path, "cuda", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    for rank, report in enumerate(reports(tmp_path)):
        failed = {name: trace for name, trace in report.items() if trace}
        assert report and not failed, f"rank {rank}:\n" + "\n".join(failed.values())
