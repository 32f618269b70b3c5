"""backend/kernels/disk_cache.py start_runtime: Numba's runtime compiled once and its machine code
kept beside the kernels', loaded by later processes; a damaged, truncated or unwritable file
costs a compilation, never a wrong answer or a crash."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("numba", reason="numba is not installed: there are no kernels")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

START = """
import json, os, sys
import numpy as np
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import cpu_target
from numba.core.runtime import rtsys
from tensorgrad.backend.kernels import disk_cache
with global_compiler_lock:  # as a kernel's load holds it
    disk_cache.start_runtime(cpu_target.target_context, sys.argv[1])
    disk_cache.start_runtime(cpu_target.target_context, sys.argv[1])  # once started: nothing
import numba
@numba.njit
def made(n):  # allocates and frees through the runtime; its compilation links the runtime in
    a = np.arange(n)
    return (a * a).sum()
import tensorgrad
from tensorgrad.nn import functional as F
x = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
t = tensorgrad.tensor(x, requires_grad=True)
F.layer_norm(t, (64,)).sum().backward()  # kernels (loaded or compiled) run on this runtime
print(json.dumps({"library": type(rtsys._library).__name__, "made": int(made(10)),
                  "grad": bool(np.isfinite(t.grad.numpy()).all())}))
"""


def _start(directory):
    run = subprocess.run([sys.executable, "-c", START, str(directory)], cwd=ROOT,
                         env={**os.environ, "TENSORGRAD_NUMBA": "wait"},
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    seen = json.loads(run.stdout.splitlines()[-1])
    assert seen["made"] == 285 and seen["grad"]
    return seen["library"]


def _runtime_file(directory):
    (name,) = [name for name in os.listdir(directory) if name.startswith("numba-runtime-")]
    return directory / name


def test_the_runtime_is_compiled_once_then_loaded(tmp_path):
    assert _start(tmp_path) == "JITCodeLibrary"  # compiled, and its machine code written
    written = _runtime_file(tmp_path).read_bytes()
    assert _start(tmp_path) == "CachedLibrary"
    assert _start(tmp_path) == "CachedLibrary"
    assert _runtime_file(tmp_path).read_bytes() == written  # read, not rewritten
    assert os.listdir(tmp_path) == [_runtime_file(tmp_path).name]  # no temporary file left


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "empty"])
def test_a_damaged_runtime_file_is_compiled_again_and_rewritten(tmp_path, damage):
    _start(tmp_path)
    path = _runtime_file(tmp_path)
    data = bytearray(path.read_bytes())
    if damage == "flipped byte":
        data[len(data) // 2] ^= 0xFF
    path.write_bytes(data[:len(data) // 2] if damage == "truncated"
                     else b"" if damage == "empty" else bytes(data))
    assert _start(tmp_path) == "JITCodeLibrary"
    assert _start(tmp_path) == "CachedLibrary"  # the rewritten file is whole


def test_an_unwritable_cache_compiles_the_runtime_each_time(tmp_path):
    (tmp_path / "a file").write_text("not a directory")
    below_a_file = tmp_path / "a file" / "cache"  # cannot be made, even by root
    assert _start(below_a_file) == "JITCodeLibrary"
    assert _start(below_a_file) == "JITCodeLibrary"
