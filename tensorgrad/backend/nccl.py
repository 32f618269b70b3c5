"""NCCL collectives on CuPy arrays, for tensorgrad.distributed's CUDA tensors.

Written against cupy.cuda.nccl; it needs CuPy and GPUs, and the test that drives it
(tests/distributed/test_nccl.py) runs only where two GPUs are visible. A collective is queued
on the current CuPy stream, like the kernels that produce and consume its array, so no
synchronisation is needed around it; `wait` (and a timeout) synchronises on an event recorded
right after it.
"""
import time

import cupy
from cupy.cuda import nccl

_DTYPES = {"float16": nccl.NCCL_FLOAT16, "float32": nccl.NCCL_FLOAT32,
           "float64": nccl.NCCL_FLOAT64, "int8": nccl.NCCL_INT8, "uint8": nccl.NCCL_UINT8,
           "int32": nccl.NCCL_INT32, "int64": nccl.NCCL_INT64,
           "bool": nccl.NCCL_UINT8}  # a bool is one byte: moved as uint8 (reduced as one too)
# AVG is a SUM followed by a division (tensorgrad/distributed/collectives.py), as over MPI.
_OPS = {"SUM": nccl.NCCL_SUM, "AVG": nccl.NCCL_SUM, "PRODUCT": nccl.NCCL_PROD,
        "MIN": nccl.NCCL_MIN, "MAX": nccl.NCCL_MAX}


def unique_id():
    """The id every rank's communicator is made from: drawn on one rank, sent to the others."""
    return nccl.get_unique_id()


def _dtype(array):
    name = array.dtype.name
    if name not in _DTYPES:
        raise TypeError(f"NCCL collectives take {sorted(_DTYPES)}, got an array of {name}")
    return _DTYPES[name]


class NcclGroup:
    """One GPU's NCCL communicator over all ranks, with the interface of the MPI group."""

    def __init__(self, size, uid, rank, device_index, timeout=None):
        self.size, self.rank, self.device_index, self.timeout = size, rank, device_index, timeout
        with cupy.cuda.Device(device_index):
            self.comm = nccl.NcclCommunicator(size, uid, rank)

    def _launch(self, call):
        """Queue one collective on the current stream; return the event that marks its end."""
        with cupy.cuda.Device(self.device_index):
            stream = cupy.cuda.get_current_stream()
            call(stream.ptr)
            event = cupy.cuda.Event(block=False, disable_timing=True)
            event.record(stream)
            return event

    # Each collective returns an event: wait() on it when the caller must see the result on
    # the host (a blocking call with a timeout, or async_op=True). A blocking call without a
    # timeout returns None: later kernels on the stream are ordered after it anyway.
    def _done(self, event, blocking):
        return None if blocking and self.timeout is None else event

    def all_reduce(self, array, op, blocking):
        ptr = array.data.ptr
        return self._done(self._launch(lambda s: self.comm.allReduce(
            ptr, ptr, array.size, _dtype(array), _OPS[op], s)), blocking)

    def broadcast(self, array, src, blocking):
        ptr = array.data.ptr
        return self._done(self._launch(lambda s: self.comm.broadcast(
            ptr, ptr, array.size, _dtype(array), src, s)), blocking)

    def all_gather(self, out, array, blocking):
        return self._done(self._launch(lambda s: self.comm.allGather(
            array.data.ptr, out.data.ptr, array.size, _dtype(array), s)), blocking)

    def wait(self, event, what, timeout=None):
        timeout = self.timeout if timeout is None else timeout
        if timeout is None:
            event.synchronize()
            return
        deadline = time.monotonic() + timeout
        while not event.done:
            if time.monotonic() > deadline:
                self.comm.abort()  # an NCCL kernel that waits for a dead peer never returns
                raise RuntimeError(f"{what}: NCCL timed out after {timeout:g} s on rank "
                                   f"{self.rank} of {self.size} (cuda:{self.device_index})")
            time.sleep(1e-4)

    def test(self, event):
        return event.done

    def close(self):
        self.comm.destroy()
