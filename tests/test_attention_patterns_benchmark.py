"""benchmarks/attention_patterns.py: every implementation's step computes causal attention at a
toy length (in process, fast); the whole harness with its subprocesses, table and plot runs on
toy lengths (slow: one process per implementation and length)."""
import subprocess
import sys

import numpy as np
import pytest

from benchmarks import attention_patterns as bench
from benchmarks import run


@pytest.mark.parametrize("name", bench.IMPLEMENTATIONS)
def test_every_step_computes_causal_attention(name):
    out, v = (np.asarray(a) for a in bench.make_step(name, 40, tiny=True)())
    assert out.shape == (bench.B, bench.HEADS, 40, bench.HEAD_DIM) and np.isfinite(out).all()
    np.testing.assert_allclose(out[..., 0, :], v[..., 0, :], rtol=1e-5, atol=1e-6)  # key 0 alone


@pytest.mark.slow
def test_harness_runs_end_to_end(tmp_path):
    plot = tmp_path / "plot.png"
    done = subprocess.run([sys.executable, "benchmarks/attention_patterns.py", "--tiny",
                           "--plot", str(plot)], cwd=run.ROOT, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr
    assert "| sliding window |" in done.stdout and "| MiB |" in done.stdout
    assert plot.stat().st_size > 1000
