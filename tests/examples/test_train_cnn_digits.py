"""examples/train_cnn_digits.py: its --quick run learns and writes (default suite); the full run
reaches the 97% test accuracy it promises (slow)."""
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("sklearn")
SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_cnn_digits.py"


def _run(*args, timeout, cwd=None):
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_quick_run_learns_and_writes_its_checkpoint_and_curves(tmp_path):
    out = _run("--quick", timeout=120, cwd=tmp_path)
    assert "data: 1347 train / 450 test images of shape (1, 8, 8)" in out
    assert float(re.search(r"reloaded test acc ([\d.]+)", out).group(1)) > 0.85  # chance: 0.1
    written = tmp_path / "out" / "cnn_digits"
    assert (written / "cnn.safetensors").exists()
    assert (written / "curves.png").exists() or "matplotlib is not installed" in out


@pytest.mark.slow
def test_full_run_reaches_97_percent(request):
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("the full training run (about 30 s): select it with -m slow")
    out = _run(timeout=300)
    accuracy = float(re.search(r"test acc ([\d.]+)\s*$", out).group(1))
    assert accuracy >= 0.97, out
