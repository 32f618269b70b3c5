"""Every example explains itself alike: `--help` runs nothing and writes nothing, prints the
whole docstring, and gives every option its help and its default. demo.py and train_digits.py,
which have no test of their own, also learn in their `--quick` runs."""
import pathlib
import re
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
SCRIPTS = sorted(p for p in EXAMPLES.glob("*.py") if p.name != "common.py")  # common: a module


def run(script, *args, cwd, timeout=120):
    done = subprocess.run([sys.executable, str(script), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"{script.name} {args}:\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help_is_whole_and_runs_nothing(script, tmp_path):
    pytest.importorskip("sklearn")
    text = run(script, "--help", cwd=tmp_path)
    assert list(tmp_path.iterdir()) == [], f"{script.name} --help wrote files"
    doc = script.read_text().split('"""')[1]
    last_line = [line.strip() for line in doc.splitlines() if line.strip()][-1]
    assert last_line in text, f"{script.name} --help cuts the docstring short"
    options = text[text.index("options:"):]
    entries = re.split(r"\n  (?=-)", options)[1:]  # one entry per option, help included
    assert any("--quick" in e for e in entries), f"{script.name} has no --quick"
    for entry in entries:
        if entry.startswith("-h, --help"):
            continue
        assert "(default:" in entry, f"{script.name}: option without help or default: {entry}"


def test_demo_quick_learns(tmp_path):
    out = run(EXAMPLES / "demo.py", "--quick", cwd=tmp_path)
    assert float(re.search(r"test accuracy: ([\d.]+)", out).group(1)) > 0.85  # after reloading
    assert (tmp_path / "out" / "demo" / "demo.safetensors").exists()
    assert (tmp_path / "out" / "demo" / "curves.png").exists() or "matplotlib is not" in out


def test_train_digits_quick_learns_and_saves_under_out(tmp_path):
    pytest.importorskip("sklearn")
    out = run(EXAMPLES / "train_digits.py", "--quick", cwd=tmp_path)
    assert float(re.search(r"reloaded test acc ([\d.]+)", out).group(1)) > 0.9
    assert (tmp_path / "out" / "digits" / "digits.safetensors").exists()
    assert (tmp_path / "out" / "digits" / "curves.png").exists() or "matplotlib is not" in out

