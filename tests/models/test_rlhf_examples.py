"""examples/in_context_learning.py and examples/rlhf.py in their --quick form (slow: minutes on
two cores): the curves go the way the examples promise."""
import importlib.util
import pathlib
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _load(name):
    sys.path.insert(0, str(EXAMPLES))  # the examples import common
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
def test_rlhf_pipeline_sft_then_ppo_and_dpo_learn_the_preference(request, tmp_path):
    _skip_unless_selected(request)
    result = _load("rlhf").main(["--quick", "--out", str(tmp_path)])
    history, rows = result["history"], result["rows"]
    sft, ppo, dpo = rows["SFT"][0], rows["PPO"][0], rows["DPO"][0]
    # SFT learns the tasks and the demonstrators' sign-off with them.
    assert sft["answer_right"] > result["before"]["answer_right"] + 0.5
    assert sft["sign_off"] > 0.5
    assert result["rm_accuracy"] > 0.65  # held-out preferences, chance is 0.5
    # PPO: the reward and the judge's score of the samples rise, greedy exact accuracy rises,
    # and the KL penalty keeps the policy near SFT.
    first, last = history[0], history[-3:]
    assert sum(h["score"] for h in last) / 3 > first["score"] + 0.3
    assert sum(h["judge"] for h in last) / 3 > first["judge"] + 0.03
    assert ppo["exact"] > sft["exact"] + 0.4 and ppo["sign_off"] < 0.2
    assert max(h["kl"] for h in history) < 3.0
    # DPO learns the same preference from the pairs alone.
    assert dpo["exact"] > sft["exact"] + 0.4
    assert 0 < rows["DPO"][1] < 3.0
