"""backend/numba_blas_check.py: the kernels start Numba without importing all of scipy.linalg,
and scipy.linalg imported afterwards is what it would have been (its cython_blas attribute, its
__all__, its loader), as is a user's own Numba np.dot. Each check is a fresh interpreter: this
one has imported scipy.linalg long ago."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("numba", reason="numba is not installed: there are no kernels "
                                    "(pip install tensorgrad[fast])")
pytest.importorskip("scipy", reason="scipy is not installed: Numba has no BLAS to check")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

AFTER_THE_KERNELS = """
import json, sys
import numpy as np
from tensorgrad.backend import kernel_loading
kernel_loading.load()
from numba.core.registry import cpu_target
cpu_target.target_context.refresh()  # what Numba does at its first compilation
seen = {"linalg before": "scipy.linalg" in sys.modules,
        "early extension": "scipy.linalg.cython_blas" in sys.modules}
import numba
@numba.njit
def dot(a, b):
    return np.dot(a, b)
a = np.arange(6.0).reshape(2, 3)
seen["numba dot"] = dot(a, a.T).tolist()
import scipy.linalg
early = sys.modules["scipy.linalg.cython_blas"]
seen["attribute is the module"] = scipy.linalg.cython_blas is early
seen["in __all__"] = "cython_blas" in scipy.linalg.__all__
seen["loader"] = type(scipy.linalg.__loader__).__name__
seen["spec loader"] = type(scipy.linalg.__spec__.loader).__name__
seen["finder spent"] = all(f.module is None for f in sys.meta_path
                          if type(f).__name__ == "_GiveToParent")
seen["solve"] = scipy.linalg.solve(np.eye(2) * 2.0, np.ones(2)).tolist()
print(json.dumps(seen))
"""


def _run(code):
    env = {**os.environ, "TENSORGRAD_NUMBA": "1"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_numba_starts_without_scipy_linalg_and_scipy_linalg_is_whole_afterwards():
    seen = _run(AFTER_THE_KERNELS)
    assert seen == {"linalg before": False, "early extension": True,
                    "numba dot": [[5.0, 14.0], [14.0, 50.0]],
                    "attribute is the module": True, "in __all__": True,
                    "loader": "SourceFileLoader", "spec loader": "SourceFileLoader",
                    "finder spent": True, "solve": [0.5, 0.5]}


def test_scipy_linalg_imported_first_is_left_as_it_is():
    seen = _run("import scipy.linalg\n" + AFTER_THE_KERNELS)
    assert seen["linalg before"] is True and seen["attribute is the module"] is True
    assert seen["finder spent"] is True and seen["numba dot"] == [[5.0, 14.0], [14.0, 50.0]]


def test_without_scipy_numba_is_left_to_say_so_itself():
    # sys.modules[name] = None is how Python marks a package as not importable
    seen = _run("""
import json, sys
sys.modules["scipy"] = None
from tensorgrad.backend import numba_blas_check
numba_blas_check.load()
print(json.dumps({"early extension": "scipy.linalg.cython_blas" in sys.modules,
                  "finders": [type(f).__name__ for f in sys.meta_path]}))
""")
    assert seen["early extension"] is False and "_GiveToParent" not in seen["finders"]
