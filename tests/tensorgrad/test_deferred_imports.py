"""backend/deferred_imports.py: a deferred module's code runs at the first attribute asked of it,
once, however many threads ask; it is the module the import would have made; a module not
installed still fails to import; and a kernel load leaves PyYAML and importlib.metadata unrun
while a `.numba_config.yaml` is still read. Each check is a fresh interpreter."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(code, cwd=ROOT, **env):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": ROOT, **env})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture
def modules(tmp_path):
    """A folder with `slow` (its code takes 0.2 s and counts its runs in a file), `broken` (its
    code raises) and a package `pack` with a submodule."""
    (tmp_path / "slow.py").write_text(textwrap.dedent("""
        import time
        with open(__file__ + ".runs", "a") as out:
            out.write("ran\\n")
        time.sleep(0.2)
        ANSWER = 42
        def double(x):
            return 2 * x
    """))
    (tmp_path / "broken.py").write_text("raise RuntimeError('broken at import')\n")
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "__init__.py").write_text("from . import part\nNAME = part.NAME\n")
    (tmp_path / "pack" / "part.py").write_text("NAME = 'part'\n")
    return tmp_path


def test_the_code_runs_once_at_the_first_attribute_and_threads_wait_for_it(modules):
    seen = _run(f"""
        import json, sys, threading, types
        sys.path.insert(0, {str(modules)!r})
        from tensorgrad.backend import deferred_imports
        deferred_imports.defer(["slow", "pack"])
        import slow, pack
        def runs():
            try:
                return open({str(modules / "slow.py.runs")!r}).read().count("ran")
            except FileNotFoundError:
                return 0
        seen = {{"runs before": runs(), "class before": type(slow).__name__}}
        answers = []
        threads = [threading.Thread(target=lambda: answers.append(slow.ANSWER)) for _ in "1234"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seen.update({{"answers": answers, "runs after": runs(), "double": slow.double(4),
                     "class after": type(slow).__name__, "same module": sys.modules["slow"] is slow,
                     "package": pack.NAME, "submodule": sys.modules["pack.part"] is pack.part}})
        try:
            slow.no_such_name
        except AttributeError as exc:
            seen["missing"] = str(exc)
        print(json.dumps(seen))
    """)
    assert seen == {"runs before": 0, "class before": "_NotRunYet", "answers": [42] * 4,
                    "runs after": 1, "double": 8, "class after": "module", "same module": True,
                    "package": "part", "submodule": True,
                    "missing": "module 'slow' has no attribute 'no_such_name'"}


def test_a_module_failing_fails_at_its_first_use_and_leaves_sys_modules(modules):
    seen = _run(f"""
        import json, sys
        sys.path.insert(0, {str(modules)!r})
        from tensorgrad.backend import deferred_imports
        deferred_imports.defer(["broken"])
        import broken
        try:
            broken.anything
        except RuntimeError as exc:
            seen = {{"error": str(exc), "left": "broken" not in sys.modules}}
        print(json.dumps(seen))
    """)
    assert seen == {"error": "broken at import", "left": True}


def test_what_is_imported_missing_or_compiled_is_left_as_it_is():
    seen = _run("""
        import json, sys, types
        import email
        from tensorgrad.backend import deferred_imports
        deferred_imports.defer(["email", "no_such_module_at_all", "_decimal"])
        seen = {"imported": type(sys.modules["email"]).__name__,
                "compiled": type(sys.modules.get("_decimal")).__name__ == "_NotRunYet"}
        try:
            import no_such_module_at_all
        except ModuleNotFoundError as exc:
            seen["missing"] = exc.name
        print(json.dumps(seen))
    """)
    assert seen == {"imported": "module", "compiled": False, "missing": "no_such_module_at_all"}


def test_loading_kernels_leaves_yaml_and_metadata_unrun_and_numbas_config_file_is_read(tmp_path):
    pytest.importorskip("numba", reason="numba is not installed: nothing imports it")
    (tmp_path / ".numba_config.yaml").write_text("disable_performance_warnings: 1\n")
    code = """
        import json, sys
        import numpy as np
        import tensorgrad
        from tensorgrad.nn import functional as F
        F.gelu(tensorgrad.tensor(np.ones((300, 300), np.float32))).numpy()
        import numba
        seen = {name: type(sys.modules[name]).__name__
                for name in ("yaml", "importlib.metadata") if name in sys.modules}
        seen["setting"] = numba.config.DISABLE_PERFORMANCE_WARNINGS
        seen["metadata works"] = bool(__import__("importlib.metadata").metadata.version("numpy"))
        print(json.dumps(seen))
    """
    _run(code, TENSORGRAD_NUMBA="wait")  # compiles GELU's kernels if the cache has none
    plain = _run(code, TENSORGRAD_NUMBA="wait")
    installed = {name: "_NotRunYet" for name in ("yaml", "importlib.metadata")
                 if importlib.util.find_spec(name) is not None}
    assert plain == {**installed, "setting": 0, "metadata works": True}
    # Numba reads the file as it starts, through PyYAML, which then runs
    configured = _run(code, cwd=tmp_path, TENSORGRAD_NUMBA="wait")
    if "yaml" in installed:
        assert configured["setting"] == 1 and configured["yaml"] == "module"
