"""examples/train_gpt.py --ddp under mpiexec -n 2 follows the single-process run with the same
global batch: the same loss curve to 1e-5 over 50 steps (tiny model, dropout off), one log, and
every rank resumes from rank 0's checkpoint."""
import importlib.util
import pathlib
import sys

import numpy as np
import pytest

from ranks import ROOT, run_ranks
from tensorgrad import nn

SCRIPT = ROOT / "examples" / "train_gpt.py"
TINY = ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16",
        "--batch-size", "4", "--steps", "50", "--warmup", "2", "--eval-every", "25",
        "--eval-batches", "1", "--ckpt-every", "25", "--samples", "0"]
TEXT = "def square(x):\n    return x * x\n\nclass Box:\n    pass\n" * 30
ENV = {"TENSORGRAD_NUMBA": "0"}  # compiling the kernels on each rank would only slow the start


@pytest.fixture
def train(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # the examples import common
    spec = importlib.util.spec_from_file_location("train_gpt", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, "train_gpt", module)
    return module


@pytest.fixture
def args(tmp_path):
    path = tmp_path / "text.txt"
    path.write_text(TEXT)
    return TINY + ["--data", str(path)]


def history(out):
    return nn.load(str(pathlib.Path(out) / "ckpt.safetensors"))["history"]


def test_ddp_loss_curve_equals_one_process(train, args, tmp_path):
    _, single = train.main(args + ["--out", str(tmp_path / "single")])
    done = run_ranks(SCRIPT, "--ddp", *args, "--out", tmp_path / "ddp", env=ENV)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("data: ") == 1  # only rank 0 logs
    ddp = history(tmp_path / "ddp")
    assert len(ddp["train"]) == len(single["train"]) == 50
    np.testing.assert_allclose(ddp["train"], single["train"], rtol=0, atol=1e-5)
    np.testing.assert_allclose([v for _, v in ddp["val"]], [v for _, v in single["val"]],
                               rtol=0, atol=1e-5)


class Crash(Exception):
    pass


@pytest.mark.slow
def test_every_rank_resumes_from_a_checkpoint(train, args, tmp_path, monkeypatch):
    _, whole = train.main(args + ["--out", str(tmp_path / "whole")])
    save = train.save_checkpoint

    def crash_after_saving(*a):
        save(*a)
        raise Crash

    monkeypatch.setattr(train, "save_checkpoint", crash_after_saving)
    with pytest.raises(Crash):
        train.main(args + ["--out", str(tmp_path / "split")])  # stops after step 25
    done = run_ranks(SCRIPT, "--ddp", "--resume", *args, "--out", tmp_path / "split", env=ENV)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resumed from" in done.stdout and "at step 25" in done.stdout
    np.testing.assert_allclose(history(tmp_path / "split")["train"], whole["train"], rtol=0,
                               atol=1e-5)
