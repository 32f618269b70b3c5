"""examples/rlhf.py --quick: SFT learns the tasks' format and the demonstrators' sign-off, the
reward model ranks above chance, and PPO and DPO each unlearn the sign-off; it writes its
curves and checkpoints. The default run's figures are examples/results.py's."""
import importlib.util


def test_quick_run_sft_then_ppo_and_dpo_learn_the_preference(tmp_path, run_main):
    result, printed = run_main("rlhf", ["--quick", "--out", str(tmp_path)])
    history, rows = result["history"], result["rows"]
    sft, ppo, dpo = rows["SFT"][0], rows["PPO"][0], rows["DPO"][0]
    assert sft["answer_right"] > result["before"]["answer_right"] + 0.15
    assert sft["sign_off"] > 0.3  # the habit, learned with the tasks
    assert result["rm_accuracy"] > 0.55  # held-out preferences, chance is 0.5
    for stats in (ppo, dpo):
        assert stats["sign_off"] < 0.2 and stats["exact"] > sft["exact"] + 0.1, (sft, stats)
    assert len(history) == 3 and max(h["kl"] for h in history) < 3.0
    assert 0 < rows["DPO"][1] < 3.0
    assert "--quick:" in printed
    for name in ("sft", "reward_model", "ppo", "dpo"):
        assert (tmp_path / f"{name}.safetensors").exists()
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "ppo.png").exists() and (tmp_path / "loss.png").exists()
