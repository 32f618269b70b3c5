"""examples/finetune_lora.py --quick: a tiny base model is trained, then the full and LoRA runs
each report their counts, losses and timings, and keep only what they trained."""
import importlib.util
import json
import pathlib
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _load():
    sys.path.insert(0, str(EXAMPLES))  # the examples import common
    spec = importlib.util.spec_from_file_location("finetune_lora", EXAMPLES / "finetune_lora.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_quick_run_compares_full_and_lora_finetuning(tmp_path, capsys):
    results = _load().main(["--quick", "--ranks", "2", "--out", str(tmp_path)])
    assert [r["name"] for r in results] == ["full", "attention r=2", "all-linear r=2"]
    full, attention, every = results
    assert full["trainable"] == full["total"]
    # 1 block of width 32: r (in + out) for qkv (32 -> 96) and out (32 -> 32), then up/down
    assert attention["trainable"] == 2 * (32 + 96) + 2 * (32 + 32)
    assert every["trainable"] == attention["trainable"] + 2 * (2 * (32 + 128))
    assert full["curve"]["new"][-1] < full["curve"]["new"][0]  # it learns the new text
    for r in results:
        assert r["ms_per_step"] > 0 and r["peak_rss_mb"] > 0
        assert len(r["curve"]["step"]) == len(r["curve"]["new"]) == len(r["curve"]["old"])
    adapter = tmp_path / "adapters" / "attention_r2"
    with open(adapter / "adapter_config.json") as f:
        assert json.load(f)["target_modules"] == ["c_attn", "attn.c_proj"]
    assert every["checkpoint_kb"] < full["checkpoint_kb"] / 3  # only the adapter is kept
    out = capsys.readouterr().out
    assert "ms/step" in out and "val old" in out  # the table
    assert (tmp_path / "lora_losses.png").exists() or "matplotlib is not installed" in out
