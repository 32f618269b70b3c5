"""examples/train_vit_digits.py: the quick form runs end to end and draws its pictures (ViT in
the default suite, Swin with -m slow); the full ViT run reaches 94% (slow)."""
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("sklearn")
SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_vit_digits.py"


def _run(*args, timeout):
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("model", ["vit", pytest.param("swin", marks=pytest.mark.slow)])
def test_quick_run_reports_and_draws(request, tmp_path, model):
    if model == "swin" and "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("a second example start (about 12 s of CPU): select it with -m slow")
    out = _run("--quick", "--model", model, "--out", str(tmp_path), timeout=300)
    assert "data: 1347 train / 450 test images of shape (1, 16, 16)" in out
    assert re.search(r"trained 4 steps in [\d.]+ s; train acc [\d.]+, test acc [\d.]+", out)
    written = {p.name for p in tmp_path.iterdir()}
    assert (tmp_path / "model" / "config.json").exists()
    if "matplotlib is not installed" not in out:
        pictures = {"curves.png"} | ({"attention.png", "filters.png"} if model == "vit" else set())
        assert written == pictures | {"model"}


@pytest.mark.slow
def test_full_vit_run_reaches_94_percent(request, tmp_path):
    """The recipe's result moves with rounding by up to 13 of the 450 test images (94.67-97.56%
    in six runs: two BLAS libraries, two summation orders of the bias gradients, two of the
    softmax kernel's row sums; README.md), so the bar sits under that spread."""
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("the full training run (a few minutes): select it with -m slow")
    out = _run("--out", str(tmp_path), timeout=1800)
    # the summary line, not an epoch's (re.search alone would find epoch 1's)
    accuracy = float(re.search(r"trained \d+ steps .*, test acc ([\d.]+)\n", out).group(1))
    assert accuracy >= 0.94, out
