"""examples/in_context_learning.py --quick: accuracy rises with the examples in the prompt, the
untrained model's 0% is explained, and the checkpoint and curves are written."""
import importlib.util
import pathlib

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def test_quick_run_reads_the_function_off_its_context(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(EXAMPLES))  # the examples import common
    spec = importlib.util.spec_from_file_location("in_context_learning",
                                                  EXAMPLES / "in_context_learning.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(["--quick", "--out", str(tmp_path)])
    acc = dict(zip(result["shots"], result["accuracy"]))
    assert acc[8] > acc[0] + 0.15, acc
    assert acc[8] >= acc[2] >= acc[0], acc
    out = capsys.readouterr().out
    assert "is `x>` itself" in out and "never answers with a pair" in out
    assert (tmp_path / "model.safetensors").exists()
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "icl.png").exists() and (tmp_path / "loss.png").exists()
