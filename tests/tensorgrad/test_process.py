"""backend/process.py: `import tensorgrad` (and a first training step) leaves the allocator and
every thread count as they were; `tune_process()` changes them, only when called."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Run in a fresh interpreter: thread counts of the BLAS libraries NumPy and torch loaded, the
# OpenMP runtime's, torch's, and whether a 16 MiB array is served by mmap (glibc's default for
# a block that size; with tune_malloc's thresholds it comes from the heap).
PROBE = textwrap.dedent("""
    import ctypes, json, sys
    import numpy
    from threadpoolctl import threadpool_info

    libc = ctypes.CDLL("libc.so.6")
    if not hasattr(libc, "mallinfo2"):
        print(json.dumps("no mallinfo2")); sys.exit()

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks",
                    "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

    libc.mallinfo2.restype = MallInfo2

    def mmapped():
        before = libc.mallinfo2().hblkhd
        block = numpy.ones(16 << 20, numpy.uint8)
        return libc.mallinfo2().hblkhd - before >= block.nbytes

    try:
        import torch
    except ImportError:
        torch = None

    def counts():
        found = {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()}
        if torch is not None:
            found["torch"] = torch.get_num_threads()
        return found

    before = counts()
    import tensorgrad as tg
    x = tg.randn(128, 128, requires_grad=True)
    (x @ x).relu().sum().backward()  # the backend, MKL and the compiled kernels, where installed
    after = counts()
    result = {"before": before, "after": after, "mmapped": mmapped()}
    result["tuned"] = tg.backend.tune_process()
    result["tuned_counts"], result["tuned_mmapped"] = counts(), mmapped()
    print(json.dumps(result))
""")


@pytest.fixture(scope="module")
def probe():
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's allocator: Linux only")
    pytest.importorskip("threadpoolctl")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=dict(env, PYTHONPATH=ROOT))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result == "no mallinfo2":
        pytest.skip("glibc before 2.33 has no mallinfo2 to read the allocator's state")
    return result


def test_import_and_a_first_step_change_no_thread_count(probe):
    before, after = probe["before"], probe["after"]
    assert {lib: after[lib] for lib in before} == before


def test_import_leaves_the_allocator_alone(probe):
    assert probe["mmapped"]


def test_tune_process_raises_the_malloc_thresholds(probe):
    assert probe["tuned"]["malloc"] and not probe["tuned_mmapped"]


def test_tune_process_keeps_openblas_on_one_thread_beside_mkl(probe):
    if not probe["tuned"]["openblas_single"]:
        pytest.skip("MKL is not installed (pip install tensorgrad[mkl]): OpenBLAS keeps its count")
    openblas = [lib for lib in probe["before"] if "openblas" in lib.lower()]
    assert openblas and all(probe["tuned_counts"][lib] == 1 for lib in openblas)


def test_malloc_tuning_leaves_the_users_own_setting(monkeypatch):
    from tensorgrad.backend.process import tune_malloc

    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "131072")
    assert tune_malloc() is False
