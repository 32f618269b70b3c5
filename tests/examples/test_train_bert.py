"""examples/train_bert.py and examples/finetune_bert.py in their --quick form: pre-training
writes a Hugging Face folder that `transformers` loads and that gives the same predictions, and
fine-tuning reads it and reports both accuracies."""
import importlib.util
import json
import pathlib
import sys

import numpy as np
import pytest

import tensorgrad as tg

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _load(name, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))  # the examples import train_gpt / train_bert
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, name, module)
    return module


@pytest.mark.slow
def test_pretrain_then_finetune_quick(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    train = _load("train_bert", monkeypatch)
    model, tokenizer, history = train.main(["--quick", "--out", str(tmp_path)])
    assert len(history["train"]) == 8 and np.isfinite(history["train"]).all()
    scores = history["val"][-1][1]
    assert 0 <= scores["mlm"] <= 1 and 0 <= scores["nsp"] <= 1
    folder = tmp_path / "model"
    hf = transformers.BertForPreTraining.from_pretrained(folder).eval()
    ids, types = tokenizer.encode_with_token_types("Return the value.", "Raise an error.")
    with torch.no_grad():
        expected = hf(torch.tensor([ids]), token_type_ids=torch.tensor([types]))
    with tg.no_grad():
        out = model.eval()(tg.tensor([ids]), token_type_ids=tg.tensor([types]))
    np.testing.assert_allclose(out.prediction_logits.numpy(), expected.prediction_logits.numpy(),
                               atol=1e-4, rtol=1e-4)

    finetune = _load("finetune_bert", monkeypatch)
    results = finetune.main(["--quick", "--out", str(tmp_path)])
    assert set(results) == {"majority_class", "pre-trained", "random init"}
    assert json.loads((tmp_path / "finetune.json").read_text()) == results
    assert (tmp_path / "attention.png").exists() and (tmp_path / "loss.png").exists()
