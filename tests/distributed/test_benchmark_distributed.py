"""benchmarks/distributed.py runs end to end on toy sizes (the figures mean nothing there)."""
import json
import subprocess
import sys

import pytest

from ranks import ROOT, mpiexec


@pytest.mark.slow
def test_the_harness_runs_on_toy_sizes(tmp_path):
    mpiexec()  # skips without mpi4py or a launcher
    out = tmp_path / "results.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "distributed.py"), "--tiny",
                           "--json", str(out)], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, env={"TENSORGRAD_NUMBA": "0", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(out.read_text())
    assert [len(results["steps"][k]) for k in ("1", "2")] == [1, 1]
    assert results["allreduce"][0]["mb"] == 1 and results["allreduce"][0]["tensorgrad_gbps"] > 0
    assert "| processes | steps/s |" in done.stdout and "speed-up" in done.stdout
