"""Start a Python script on several ranks with `mpiexec -n N`, from inside pytest.

Tests that need this are skipped with the reason when mpi4py or mpiexec is missing (install
tensorgrad[distributed]). Every run has a timeout, so a collective that hangs fails the test
instead of the suite.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def mpiexec():
    """The launcher next to this interpreter (the mpich wheel's), else the one on PATH."""
    pytest.importorskip("mpi4py", reason="tensorgrad.distributed needs mpi4py: pip install "
                        "'tensorgrad[distributed]'")
    local = pathlib.Path(sys.executable).parent / "mpiexec"
    found = str(local) if local.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.skip("no mpiexec: pip install mpich (or a system MPI)")
    return found


def run_ranks(script, *args, n=2, timeout=120, env=None):
    """Run `python script args` on n ranks; returns the CompletedProcess (stdout and stderr of
    all ranks, as text). One thread per rank: the ranks share the machine's cores."""
    environment = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                       MKL_NUM_THREADS="1", PYTHONPATH=str(ROOT), **(env or {}))
    command = [mpiexec(), "-n", str(n), sys.executable, str(script), *map(str, args)]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              cwd=ROOT, env=environment)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(command)} did not finish in {timeout} s (a hang?):\n"
                    f"{exc.stdout}\n{exc.stderr}")



def reports(folder, n=2):
    """What each rank of worker_checks.py wrote: [{check name: traceback, or '' if it passed}]."""
    found = []
    for rank in range(n):
        path = pathlib.Path(folder) / f"rank{rank}.json"
        found.append(json.loads(path.read_text()) if path.exists() else {})
    return found
