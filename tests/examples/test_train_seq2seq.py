"""examples/train_t5.py and examples/train_translation.py run end to end in their --quick form
(the loss falls; each writes its checkpoint and curve); BLEU and the
number-to-words data are checked on known cases."""
import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _load(name, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))  # the examples import common
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, name, module)
    return module


def test_translation_data_and_bleu(monkeypatch):
    tr = _load("train_translation", monkeypatch)
    assert tr.in_words(4721) == "four thousand seven hundred twenty one".split()
    assert tr.in_words(0) == ["zero"] and tr.in_words(1010) == ["one", "thousand", "ten"]
    assert tr.in_words(300) == ["three", "hundred"]
    ref = "the cat sat on the mat today".split()
    assert tr.corpus_bleu([ref], [ref]) == pytest.approx(1.0)
    assert tr.corpus_bleu([["a", "b"]], [ref]) == 0.0
    short = ref[:5]  # every n-gram right, but short: the brevity penalty alone
    assert tr.corpus_bleu([short], [ref]) == pytest.approx(2.718281828 ** (1 - 7 / 5))


def test_train_t5_quick_learns_and_writes(tmp_path):
    # its own process: the script keeps BLAS on one thread, set before NumPy loads
    done = subprocess.run([sys.executable, str(EXAMPLES / "train_t5.py"), "--quick"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "<extra_id_0>" in out and "held-out exact match" in out and "--quick:" in out
    first, last = re.search(r"tasks: 300 steps .* loss ([\d.]+) -> ([\d.]+)", out).groups()
    assert float(last) < float(first) / 2, out
    written = tmp_path / "out" / "t5"
    assert (written / "model" / "config.json").exists()
    assert (written / "loss.png").exists() or "matplotlib is not installed" in out


def test_train_translation_quick_learns_and_writes(tmp_path):
    # its own process, as T5's: the one-thread BLAS setting must come before NumPy loads
    done = subprocess.run([sys.executable, str(EXAMPLES / "train_translation.py"), "--quick",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    bleu = float(re.search(r"BLEU ([\d.]+)", out).group(1))
    assert 0.0 < bleu <= 100.0, out
    first, last = re.search(r"trained 200 steps .* loss ([\d.]+) -> ([\d.]+)", out).groups()
    assert float(last) < float(first) / 2, out
    assert "cross-attention" in out and "--quick:" in out
    assert (tmp_path / "model.safetensors").exists()
    if "matplotlib is not installed" not in out:
        assert (tmp_path / "cross_attention.png").exists() and (tmp_path / "loss.png").exists()
