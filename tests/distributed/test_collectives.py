"""Collectives and DistributedDataParallel on two ranks: one `mpiexec -n 2` run of
worker_checks.py, whose checks each become a test here (both ranks must pass)."""
import pathlib

import pytest

from ranks import reports, run_ranks

WORKER = pathlib.Path(__file__).with_name("worker_checks.py")
CHECKS = [
    "all_reduce_ops", "all_reduce_in_place_of_a_view", "async_work", "broadcast_from_each_rank",
    "all_gather_both_forms", "barrier_and_ranks",
    "ddp_gradients_equal_one_process_on_the_global_batch",
    "ddp_no_sync_accumulates_then_averages_everything",
    "ddp_a_no_grad_forward_in_between_leaves_the_reduction_pending",
    "ddp_training_keeps_replicas_identical",
    "ddp_broadcasts_buffers_at_each_forward",
    "ddp_unused_parameter_is_an_error_at_the_next_forward",
]


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("ranks")
    # Numba's kernels are off: compiling them would triple the run's time, and what is
    # checked here (communication, hooks) does not depend on them.
    done = run_ranks(WORKER, out, env={"TENSORGRAD_NUMBA": "0"})
    assert done.returncode == 0, done.stdout + done.stderr
    return reports(out)


def test_every_check_reported():
    import worker_checks  # the list above is the worker's, so a new check cannot be missed

    assert [fn.__name__ for fn in worker_checks.CHECKS] == CHECKS


@pytest.mark.parametrize("name", CHECKS)
def test_on_two_ranks(two_ranks, name):
    for rank, report in enumerate(two_ranks):
        assert name in report, f"rank {rank} did not report {name}"
        assert not report[name], f"rank {rank}:\n{report[name]}"
