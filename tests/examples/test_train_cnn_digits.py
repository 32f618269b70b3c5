"""examples/train_cnn_digits.py: a few steps run end to end (default suite); the full run
reaches the 97% test accuracy it promises (slow)."""
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("sklearn")
SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_cnn_digits.py"


def _run(*args, timeout):
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_few_steps_run_and_report():
    out = _run("--max-steps", "4", timeout=120)
    assert "data: 1347 train / 450 test images of shape (1, 8, 8)" in out
    assert re.search(r"trained 4 steps in [\d.]+ s; train acc [\d.]+, test acc [\d.]+", out)


@pytest.mark.slow
def test_full_run_reaches_97_percent(request):
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("the full training run (about 30 s): select it with -m slow")
    out = _run(timeout=300)
    accuracy = float(re.search(r"test acc ([\d.]+)\s*$", out).group(1))
    assert accuracy >= 0.97, out
