"""Run a script with the CuPy stand-in installed, for ranks started by mpiexec:
`python standin_run.py SCRIPT ARGS...` (tests/cupy_standin.py; TENSORGRAD_CUDA_STANDIN=1)."""
import os
import runpy
import sys

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
import cupy_standin  # noqa: E402

reason = cupy_standin.install()
if reason:
    raise SystemExit(reason)
script = os.path.abspath(sys.argv[1])
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(script)  # as when the script is run directly
runpy.run_path(script, run_name="__main__")
