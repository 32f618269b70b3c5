"""Process-wide settings that CPU training runs faster with, applied only when asked for.

`import tensorgrad` changes nothing global: not the allocator, not a thread count. The examples
and the benchmarks call `tune_process()` first; a user may too. It changes two things for the
whole process, NumPy's arrays and every other library's included:

- glibc's malloc keeps freed memory for reuse (`tune_malloc`);
- once MKL takes the float matrix products (mkl_blas.py), NumPy's OpenBLAS stays on one thread:
  it keeps only the small products, which a second thread does not speed up, and its worker
  spins between calls on the core that MKL's OpenMP threads and the threaded kernels need
  (gpt_step at two threads).
"""
import ctypes
import ctypes.util
import os
import sys

from . import mkl_blas, threads


def tune_process():
    """Apply both settings above; {"malloc": applied?, "openblas_single": applied now?} (the
    second also applies later, when MKL loads)."""
    threads.openblas_follows_mkl = True
    single = mkl_blas.library() is not None
    if single:
        threads.openblas_on_one_thread()
    return {"malloc": tune_malloc(), "openblas_single": single}


def tune_malloc():
    """Let glibc keep freed array memory for reuse instead of handing it back to the kernel.

    A training step allocates and frees the same few-MB arrays every time. By default glibc
    serves each from a fresh mmap and unmaps it on free, so every step pays page faults to zero
    new memory (mlp_step, gpt_step). PyTorch's CPU
    allocator avoids the same cost by caching. Raising the mmap and trim thresholds keeps those
    arrays in the heap. Linux with glibc only; skipped when the user set glibc's own
    MALLOC_MMAP_THRESHOLD_. Returns whether it applied.
    """
    if not sys.platform.startswith("linux") or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, say): leave the allocator alone
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    return bool(mallopt(m_mmap_threshold, 32 * 2**20) and mallopt(m_trim_threshold, 256 * 2**20))
