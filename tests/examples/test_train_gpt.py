"""examples/train_gpt.py and examples/trace_transformer.py on tiny settings: a run interrupted
right after a checkpoint and resumed ends with exactly the parameters of an uninterrupted run;
the trace records every stage and masks future positions."""
import importlib.util
import pathlib
import sys

import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
TINY = ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16",
        "--batch-size", "4", "--steps", "6", "--warmup", "2", "--eval-every", "3",
        "--eval-batches", "1", "--ckpt-every", "3", "--samples", "1", "--sample-chars", "8",
        "--prompt", "de"]
TEXT = "def square(x):\n    return x * x\n\nclass Box:\n    pass\n" * 30


def _load(name, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))  # trace_transformer imports train_gpt
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, name, module)
    return module


class Crash(Exception):
    pass


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "text.txt"
    path.write_text(TEXT)
    return ["--data", str(path)]


def test_resume_continues_exactly(tmp_path, monkeypatch, data):
    train = _load("train_gpt", monkeypatch)
    whole, whole_history = train.main(TINY + data + ["--out", str(tmp_path / "whole")])
    assert (tmp_path / "whole" / "samples.txt").exists()

    save = train.save_checkpoint

    def crash_after_saving(*args):
        save(*args)
        raise Crash

    monkeypatch.setattr(train, "save_checkpoint", crash_after_saving)
    with pytest.raises(Crash):
        train.main(TINY + data + ["--out", str(tmp_path / "split")])  # stops after step 3
    monkeypatch.setattr(train, "save_checkpoint", save)
    resumed, history = train.main(TINY + data + ["--out", str(tmp_path / "split"), "--resume"])

    assert history == whole_history
    for (name, a), b in zip(whole.state_dict().items(), resumed.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    model, tokenizer = train.load_checkpoint(tmp_path / "split")
    assert tokenizer.decode(tokenizer.encode("def")) == "def"
    assert model.config.n_layer == 1


def test_trace_records_every_stage(tmp_path, monkeypatch, data):
    train = _load("train_gpt", monkeypatch)
    train.main(TINY + data + ["--out", str(tmp_path / "model")])
    trace = _load("trace_transformer", monkeypatch)
    stream, attention, probs = trace.main(["--model", str(tmp_path / "model"), "--prompt",
                                           "def sq", "--position", "2", "--out",
                                           str(tmp_path / "trace")])
    assert [stage for stage, _ in stream] == ["embeddings", "block 0 + attention",
                                              "block 0 + feed-forward"]
    assert all(x.shape == (6, 16) for _, x in stream)
    maps = attention[0].numpy()  # (heads, T, T)
    assert maps.shape == (2, 6, 6)
    assert (np.triu(maps, k=1) == 0).all()  # no query sees a later position
    np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-5)
    assert float(probs.sum()) == pytest.approx(1.0, abs=1e-5)
