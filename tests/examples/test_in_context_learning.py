"""examples/in_context_learning.py --quick: accuracy rises with the examples in the prompt, the
untrained model's 0% is explained, and the checkpoint and curves are written."""
import importlib.util


def test_quick_run_reads_the_function_off_its_context(tmp_path, run_main):
    result, printed = run_main("in_context_learning", ["--quick", "--out", str(tmp_path)])
    acc = dict(zip(result["shots"], result["accuracy"]))
    assert acc[8] > acc[0] + 0.15, acc
    assert acc[8] >= acc[2] >= acc[0], acc
    assert "is `x>` itself" in printed and "never answers with a pair" in printed
    assert (tmp_path / "model.safetensors").exists()
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "icl.png").exists() and (tmp_path / "loss.png").exists()
