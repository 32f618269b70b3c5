"""examples/train_bert.py and examples/finetune_bert.py in their --quick form: pre-training
lowers the loss and raises the held-out masked-token accuracy, and writes a Hugging Face folder
that `transformers` loads with the same predictions; fine-tuning reads it and learns the task."""
import json

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.models import BertForPreTraining
from tensorgrad.models.tokenizer import WordPieceTokenizer


def test_pretrain_then_finetune_quick(tmp_path, run_main):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    history, printed = run_main("train_bert", ["--quick", "--out", str(tmp_path)], item=2)
    losses = history["train"]
    assert len(losses) == 200 and np.isfinite(losses).all()
    assert np.mean(losses[-20:]) < np.mean(losses[:10]) - 0.4
    masked = [scores["mlm"] for _, scores in history["val"]]
    assert masked[-1] > masked[0] + 0.02, masked
    assert "next-sentence accuracy stays near chance" in printed  # what it cannot show
    assert (tmp_path / "loss.png").exists()

    folder = tmp_path / "model"
    hf = transformers.BertForPreTraining.from_pretrained(folder).eval()
    tokenizer = WordPieceTokenizer.from_file(str(folder / "tokenizer.json"))
    ids, types = tokenizer.encode_with_token_types("Return the value.", "Raise an error.")
    with torch.no_grad():
        expected = hf(torch.tensor([ids]), token_type_ids=torch.tensor([types]))
    with tg.no_grad():
        out = BertForPreTraining.from_pretrained(str(folder)).eval()(
            tg.tensor([ids]), token_type_ids=tg.tensor([types]))
    np.testing.assert_allclose(out.prediction_logits.numpy(), expected.prediction_logits.numpy(),
                               atol=1e-4, rtol=1e-4)

    results, printed = run_main("finetune_bert", ["--quick", "--out", str(tmp_path)])
    assert set(results) == {"majority_class", "pre-trained", "random init"}
    assert json.loads((tmp_path / "finetune.json").read_text()) == results
    assert max(results["pre-trained"], results["random init"]) > results["majority_class"] + 0.05
    assert "cannot show what pre-training gives" in printed
    assert (tmp_path / "attention.png").exists() and (tmp_path / "finetune_loss.png").exists()
