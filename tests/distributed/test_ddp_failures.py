"""A rank that raises, or one that stops answering, makes the whole job fail with the message,
instead of leaving the other rank waiting forever in a collective."""
import pathlib
import time

from ranks import run_ranks

WORKER = pathlib.Path(__file__).with_name("worker_failures.py")
ENV = {"TENSORGRAD_NUMBA": "0"}  # the kernels' compilation would only slow the start


def test_a_rank_that_raises_aborts_the_job_with_its_traceback():
    began = time.monotonic()
    done = run_ranks(WORKER, "raise", timeout=60, env=ENV)
    assert done.returncode != 0
    assert "ValueError: rank 1 fails on purpose" in done.stderr  # the original traceback
    assert 'worker_failures.py", line' in done.stderr
    assert "rank 1 of 2 raised ValueError; aborting the job" in done.stderr
    assert "was not stopped" not in done.stdout
    assert time.monotonic() - began < 30


def test_a_collective_that_waits_too_long_times_out():
    began = time.monotonic()
    done = run_ranks(WORKER, "timeout", timeout=60, env=ENV)
    assert done.returncode != 0
    assert "DistBackendError: all_reduce: timed out after 1 s on rank 0 of 2" in done.stderr
    assert "was not stopped" not in done.stdout
    assert time.monotonic() - began < 30  # rank 1 would sleep 60 s: the abort ended it
