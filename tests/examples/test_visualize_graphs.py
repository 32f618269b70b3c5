"""examples/visualize_graphs.py --quick draws every picture into out/visualize_graphs/ (under
the folder it runs in); its --help is checked with every example's (test_help.py)."""
import pathlib
import shutil
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "examples" / "visualize_graphs.py"
PICTURES = ["block", "block_backward", "gpt", "gpt_block1", "mlp", "scalar"]


def test_quick_run_draws_every_picture(tmp_path):
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    written = sorted(p.name for p in (tmp_path / "out" / "visualize_graphs").iterdir())
    assert written == sorted(f"{name}.{suffix}" for name in PICTURES for suffix in ("png", "svg"))
