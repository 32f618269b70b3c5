"""examples/pytorch/: three ordinary PyTorch scripts run unchanged under
`python -m tensorgrad.as_torch`. The fast tests run each briefly and check that it learns; the
slow ones run each in full on tensorgrad and, when PyTorch is installed, on PyTorch, and hold
tensorgrad to the quality PyTorch reaches."""
import pathlib
import re
import subprocess
import sys

import pytest

FOLDER = pathlib.Path(__file__).resolve().parents[2] / "examples" / "pytorch"


def run(script, *args, on="tensorgrad"):
    """The script's stdout, run on tensorgrad (through the runner) or on PyTorch."""
    pytest.importorskip("sklearn")
    runner = ["-m", "tensorgrad.as_torch"] if on == "tensorgrad" else []
    done = subprocess.run([sys.executable, "-W", "ignore", *runner, str(FOLDER / script),
                           *args], capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def last(pattern, text):
    return float(re.findall(pattern, text)[-1])


def test_cnn_digits_learns_and_round_trips_its_checkpoint():
    out = run("cnn_digits.py", "--epochs", "1")
    best, saved = re.search(r"best test accuracy ([\d.]+) \(saved ([\d.]+)\)", out).groups()
    assert best == saved and float(best) > 0.5, out  # chance is 0.1


def test_char_rnn_learns_and_samples():
    out = run("char_rnn.py", "--steps", "8", "--cell", "gru", "--hidden", "32")
    uniform = last(r"uniform guess ([\d.]+)", out)
    assert last(r"validation loss ([\d.]+)", out) < uniform - 0.4, out
    assert len(out.strip().splitlines()[-1]) > 0  # the sample


def test_transformer_classifier_learns():
    out = run("transformer_classifier.py", "--epochs", "1", "--examples", "400")
    assert last(r"test accuracy ([\d.]+)", out) > 0.6, out  # the majority class is ~0.4-0.5


FULL = {  # script -> (the figure it ends with, higher is better, tensorgrad's allowed shortfall)
    "cnn_digits.py": (r"best test accuracy ([\d.]+)", True, 0.02),
    "char_rnn.py": (r"validation loss ([\d.]+)", False, 0.1),
    "transformer_classifier.py": (r"test accuracy ([\d.]+)", True, 0.03),
}


@pytest.mark.slow
@pytest.mark.parametrize("script", FULL)
def test_full_run_reaches_what_pytorch_reaches(script):
    pattern, higher, slack = FULL[script]
    ours = last(pattern, run(script))
    pytest.importorskip("torch")
    theirs = last(pattern, run(script, on="torch"))
    if higher:
        assert ours >= theirs - slack, (ours, theirs)
    else:
        assert ours <= theirs + slack, (ours, theirs)
