"""examples/visualize_graphs.py: --help describes the script and its options and writes nothing."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_help_runs_nothing():
    out = ROOT / "out" / "visualize_graphs"
    before = sorted((p.name, p.stat().st_mtime_ns) for p in out.iterdir()) if out.exists() else None
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "visualize_graphs.py"),
                             "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())  # argparse wraps to the terminal's width
    assert "a scalar expression, an MLP, a transformer block, a GPT." in text
    assert "--explore" in text and "(default: False)" in text
    after = sorted((p.name, p.stat().st_mtime_ns) for p in out.iterdir()) if out.exists() else None
    assert after == before
