"""examples/long_context.py: the quick form trains all five attention choices from the same
start and reports a finite loss for each; the mask picture is written."""
import importlib.util
import math
import pathlib
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _load():
    sys.path.insert(0, str(EXAMPLES))  # the examples import common
    spec = importlib.util.spec_from_file_location("long_context", EXAMPLES / "long_context.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mask_picture(tmp_path):
    pytest.importorskip("matplotlib")
    _load().main(["--masks-only", "--masks", str(tmp_path / "masks.png")])
    assert (tmp_path / "masks.png").stat().st_size > 1000


def test_quick_run_trains_every_pattern_and_writes_under_out(tmp_path):
    pytest.importorskip("matplotlib", reason="the example draws its curves (the examples extra)")
    results = _load().main(["--quick", "--out", str(tmp_path)])
    assert list(results) == ["dense", "sliding window", "bigbird", "strided", "linear"]
    # the same start and batches: after a few steps the losses are close, none diverged
    losses = [r["val"] for r in results.values()]
    assert all(math.isfinite(v) for v in losses) and max(losses) - min(losses) < 0.5
    assert (tmp_path / "masks.png").exists() and (tmp_path / "loss.png").exists()
    assert len(list((tmp_path / "checkpoints").glob("*.safetensors"))) == 5
