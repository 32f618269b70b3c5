"""examples/in_context_learning.py --quick: accuracy rises with the examples in the prompt, the
untrained model's 0% is explained, and the checkpoint and curves are written."""
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def test_quick_run_reads_the_function_off_its_context(tmp_path):
    # its own process with BLAS on one thread (set before NumPy loads): these matrices are
    # small, and on a busy machine BLAS threads made the run ten times slower
    code = (f"import json, sys; sys.path.insert(0, {str(EXAMPLES)!r}); "
            f"import in_context_learning as icl; "
            f"print(json.dumps(icl.main(['--quick', '--out', {str(tmp_path)!r}])))")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    acc = dict(zip(result["shots"], result["accuracy"]))
    assert acc[8] > acc[0] + 0.15, acc
    assert acc[8] >= acc[2] >= acc[0], acc
    assert "is `x>` itself" in done.stdout and "never answers with a pair" in done.stdout
    assert (tmp_path / "model.safetensors").exists()
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "icl.png").exists() and (tmp_path / "loss.png").exists()
