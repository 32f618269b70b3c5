"""Shared fixtures: every test that takes `device` runs on each available device.

The run's header says which optional packages drive it (the compiled kernels, MKL, PyTorch) and
its summary counts the parity tests against PyTorch, transformers and peft: they skip, with the
reason, when those are not installed (`make test` does not install them; `make test-parity`
does).

With TENSORGRAD_CUDA_STANDIN=1 the cuda cases run on a test-only CuPy stand-in
(tests/cupy_standin.py): the CPU computing behind CuPy's interface, not a GPU."""
import importlib.util
import inspect
import os
import re

import pytest

# Kernels compile in the test's own thread (not in the background while the array code runs),
# so that which code path a test exercises never depends on how fast a compilation finished.
os.environ.setdefault("TENSORGRAD_NUMBA", "wait")

STANDIN = os.environ.get("TENSORGRAD_CUDA_STANDIN") == "1"
STANDIN_SKIP = None
if STANDIN:
    import cupy_standin
    STANDIN_SKIP = cupy_standin.install()

import tensorgrad as tg  # noqa: E402 - after the stand-in, so that `cupy` is the stand-in

DEVICES = ["cpu", "cuda"]
PARITY_PACKAGES = ("torch", "transformers", "peft")
# A test is a parity test when its function, or its module's top level, skips without one of
# these packages (pytest.importorskip: the suite's one way to need them).
_PARITY_SKIP = re.compile(r"""importorskip\(\s*["'](torch|transformers|peft)\b""")
_MODULE_LEVEL = re.compile(r"^(\w+\s*=\s*)?pytest\." + _PARITY_SKIP.pattern, re.M)


def _installed(name):
    return importlib.util.find_spec(name) is not None


def pytest_report_header(config):
    from tensorgrad.backend import mkl_blas
    kernels = ("off (TENSORGRAD_NUMBA=0)" if os.environ.get("TENSORGRAD_NUMBA") == "0"
               else "Numba" if _installed("numba") else "none (Numba not installed)")
    parity = [name for name in PARITY_PACKAGES if _installed(name)]
    lines = [f"tensorgrad: CPU kernels {kernels}; products on {mkl_blas.name()}",
             "parity packages: " + (", ".join(parity) if parity else
                                    "none (torch, transformers, peft: their tests skip)")]
    if STANDIN and STANDIN_SKIP:
        lines.append(f"cuda cases: stand-in requested but skipped: {STANDIN_SKIP}")
    elif STANDIN:
        counts = ", ".join(f"{name} {implemented}/{exposed}"
                           for name, (exposed, implemented) in cupy_standin.count_names().items())
        lines.append("cuda cases on the CuPy STAND-IN (not a GPU): NumPy behind the real cupy's "
                     f"names (implemented/exposed: {counts})")
    return lines


@pytest.fixture(params=DEVICES)
def device(request):
    if request.param == "cuda":
        if STANDIN_SKIP:
            pytest.skip(STANDIN_SKIP)
        if not tg.cuda_is_available():
            pytest.skip("cuda: CuPy with a visible NVIDIA GPU is needed for the cuda backend")
    return request.param


@pytest.fixture(autouse=True)
def _seed():
    tg.manual_seed(0)
    yield


_module_sources = {}


def _source(obj):
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return ""


def _uses_parity(item):
    """Whether the test, its module's top level or one of its fixtures skips without a parity
    package."""
    module = getattr(item, "module", None)
    function = getattr(item, "function", None)
    if module is None or function is None:
        return False
    if module.__name__ not in _module_sources:
        _module_sources[module.__name__] = _source(module)
    if _MODULE_LEVEL.search(_module_sources[module.__name__]):
        return True
    fixtures = getattr(item, "_fixtureinfo", None)
    functions = [function] + [defs[-1].func for defs in
                              (fixtures.name2fixturedefs.values() if fixtures else ()) if defs]
    return any(_PARITY_SKIP.search(_source(f)) for f in functions)


def pytest_configure(config):
    config.addinivalue_line("markers", "parity: compares against PyTorch, transformers or peft "
                                       "(marked automatically from the test's imports)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _uses_parity(item):
            item.add_marker("parity")


def pytest_terminal_summary(terminalreporter):
    def parity(outcome):
        return sum(1 for report in terminalreporter.stats.get(outcome, [])
                   if "parity" in getattr(report, "keywords", {})
                   and (outcome == "skipped" or report.when == "call"))
    counts = {outcome: parity(outcome) for outcome in ("passed", "failed", "skipped")}
    ran = counts["passed"] + counts["failed"]
    missing = [name for name in PARITY_PACKAGES if not _installed(name)]
    line = f"parity tests against PyTorch/transformers/peft: {ran} ran, {counts['skipped']} skipped"
    if missing:
        line += f" ({', '.join(missing)} not installed; `make test-parity` installs them)"
    terminalreporter.write_sep("-", line)
