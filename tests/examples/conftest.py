"""What the examples' tests share."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def run_main():
    """run_main(module, args): an example's main(args) in its own process with BLAS on one
    thread, set before NumPy loads (these matrices are small, and on a busy machine BLAS threads
    made such a run ten times slower). Returns (what main returned, read back from JSON, and
    everything the run printed); with `item`, main's result[item] (where main returns a model
    beside what JSON can hold)."""
    def run(module, args, item=None):
        result = f"{module}.main({list(args)!r})" + ("" if item is None else f"[{item!r}]")
        code = (f"import json, sys; sys.path.insert(0, {str(EXAMPLES)!r}); import {module}; "
                f"print(json.dumps({result}))")
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1]), done.stdout
    return run
