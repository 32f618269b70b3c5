"""examples/finetune_lora.py --quick: a tiny base model is trained, then the full and LoRA runs
each report their counts, losses and timings, and keep only what they trained."""
import json


def test_quick_run_compares_full_and_lora_finetuning(tmp_path, run_main):
    results, out = run_main("finetune_lora", ["--quick", "--ranks", "2", "--out", str(tmp_path)])
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
    assert "ms/step" in out and "val_loss old" in out  # the table
    assert (tmp_path / "lora_losses.png").exists() or "matplotlib is not installed" in out
