"""examples/results.py: each row runs once per seed in its --quick form and reports the lowest
and highest value with the command that reproduces it, smaller configurations (--extra) too."""
import pathlib
import re
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
import results  # noqa: E402  (examples/ is not a package)


def run(*args, cwd):
    done = subprocess.run([sys.executable, str(EXAMPLES / "results.py"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return [line for line in done.stdout.splitlines()
            if line.startswith("| ") and "---" not in line]


def test_results_gives_a_range_over_seeds(tmp_path):
    pytest.importorskip("sklearn")
    rows = run("--quick", "--only", "train_digits", "--seeds", "0", "1", "2", cwd=tmp_path)
    row = [line for line in rows if line.startswith("| train_digits")][0]
    low, high = (float(x) for x in re.search(r"([\d.]+)% - ([\d.]+)%", row).groups())
    assert 80 < low <= high <= 100, row


def test_a_smaller_configuration_is_in_the_command(tmp_path):
    pytest.importorskip("matplotlib", reason="long_context draws its masks and curves")
    rows = run("--quick", "--only", "long_context", "--seeds", "0", "1", "2", "--extra",
               "--steps 3", cwd=tmp_path)[1:]
    assert len(rows) == 5  # one per attention pattern
    for row in rows:
        low, high = (float(x) for x in re.search(r"([\d.]+) nats/char - ([\d.]+) nats/char",
                                                 row).groups())
        assert 0 < low <= high < 10, row
        assert "`python examples/long_context.py --steps 3 --seed N --quick`" in row


def test_every_row_names_scripts_that_exist():
    for name in results.ROWS:
        for line in results.commands(name, ""):
            assert (EXAMPLES / line[0]).exists(), (name, line)
