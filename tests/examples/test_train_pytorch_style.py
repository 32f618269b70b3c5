"""examples/train_pytorch_style.py on two epochs: it learns (a broken loop stays near 10%
accuracy), its splits and batches have the sizes the loaders promise, and a second run with the
same seed prints the same numbers."""
import pathlib
import re
import runpy
import sys

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_pytorch_style.py"


def run(monkeypatch, capsys, *args):
    pytest.importorskip("sklearn")
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), *args])
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # as when the script is run: it imports common
    script = runpy.run_path(str(SCRIPT), run_name="__main__")
    printed = re.sub(r"in [\d.]+ s", "in _ s", capsys.readouterr().out)  # all but the timing
    return script, printed


def test_two_epochs_learn_and_repeat(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)  # it writes into out/pytorch_style/
    script, printed = run(monkeypatch, capsys, "--epochs", "2")
    assert len(script["train_set"]) + len(script["val_set"]) + len(script["test_set"]) == 1797
    assert len(script["train_loader"]) == len(script["train_set"]) // 64  # drop_last
    assert script["total_steps"] == 2 * len(script["train_loader"])
    assert script["test_acc"] > 0.8, printed
    assert printed.count("\nepoch ") == 2
    assert (tmp_path / "out" / "pytorch_style" / "best.safetensors").exists()
    _, again = run(monkeypatch, capsys, "--epochs", "2")
    assert again == printed
