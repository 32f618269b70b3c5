"""Arrays whose memory starts on a 64-byte boundary, for the outputs of large matrix products.

PyTorch's allocator starts every tensor on 64 bytes. NumPy's arrays start wherever malloc puts
them, often 16 or 48 bytes past a boundary, and the same offset for the same size step after
step; MKL's GEMM writes such an output slower than one on 32 bytes (mlp_step, gpt_step; the
figures are in benchmarks/README.md, from benchmarks/output_alignment.py). An aligned array is
the one view of a buffer nothing else views, so the backend counts it as owning its memory
(NumpyBackend.owner): a gradient made of it is taken without a copy, and its storage_offset is
0, as for any fresh array.
"""
import ctypes
import math

import numpy

# From this many multiply-adds a product's output is aligned: what aligning costs over NumPy's
# empty array is then a small part of the product's time (mlp_step, gpt_step).
ALIGNED_WORK = 2**24


class AlignedBuffer(numpy.ndarray):
    """The memory under one array made by `empty_aligned`."""


def empty_aligned(shape, dtype):
    """An uninitialised C-contiguous array of `shape` and `dtype` on a 64-byte boundary."""
    nbytes = math.prod(shape) * dtype.itemsize
    memory = numpy.ndarray.__new__(AlignedBuffer, (nbytes + 64,), numpy.uint8)
    start = -ctypes.addressof(ctypes.c_char.from_buffer(memory)) % 64  # the quickest address
    return numpy.ndarray(shape, dtype, memory, start)


def product_out(m, n, k, dtype):
    """The (m, n) output of an m x k by k x n product: aligned from ALIGNED_WORK multiply-adds,
    else NumPy's empty array."""
    if m * n * k >= ALIGNED_WORK:
        return empty_aligned((m, n), dtype)
    return numpy.empty((m, n), dtype)
