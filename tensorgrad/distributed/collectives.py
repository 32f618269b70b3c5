"""Collectives on Tensors, with torch.distributed's signatures: in place, outside autograd.

Every function works on the tensor's backend array: a CPU tensor's goes to MPI through the
buffer interface (no pickling), a CUDA tensor's to NCCL. A tensor whose memory is not
row-major is reduced in a row-major copy, written back when the collective completes. Writing
bumps the tensor's version, so a graph that saved it refuses to backward (as any in-place op).
"""
import enum

from ..autograd import no_grad
from ..creation import empty
from ..tensor import Tensor
from .group import check_group, nccl_group


class ReduceOp(enum.Enum):
    """How all_reduce combines the ranks' tensors. AVG is the mean (floating dtypes only)."""
    SUM = "SUM"
    AVG = "AVG"
    PRODUCT = "PRODUCT"
    MIN = "MIN"
    MAX = "MAX"


class Work:
    """What a collective returns with async_op=True: `wait()` blocks until it completed (and
    the result is in the tensors), `is_completed()` asks without blocking."""

    def __init__(self, comm, request, what, finish):
        self._comm, self._request, self._what, self._finish = comm, request, what, finish
        self._done = False

    def wait(self, timeout=None):
        """timeout: seconds (or a timedelta), else the group's."""
        if not self._done:
            if hasattr(timeout, "total_seconds"):
                timeout = timeout.total_seconds()
            self._comm.wait(self._request, self._what, timeout)
            self._complete()
        return True

    def is_completed(self):
        if not self._done and self._comm.test(self._request):
            self._complete()
        return self._done

    def _complete(self):
        self._done = True
        self._finish()


def _check(tensor, what, name="tensor"):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{what}: {name} must be a tensorgrad.Tensor, got "
                        f"{type(tensor).__name__}")


def _comm(tensor, what, group):
    """The communicator for a tensor's device: MPI on the CPU, NCCL on a GPU."""
    mpi = check_group(group, what)
    if tensor._backend.device == "cpu":
        return mpi
    return nccl_group(tensor.device.index)


def _buffer(tensor):
    """The array a collective reads and writes: the tensor's own when row-major, else a copy
    (on the tensor's device)."""
    if tensor.data.flags.c_contiguous:
        return tensor.data
    with no_grad():
        return tensor.contiguous().data


def _claim(tensor, what):
    """A collective is about to write `tensor`: refuse an expanded one (elements sharing
    memory) and move its version, as any in-place op does."""
    with no_grad():
        tensor._inplace(what)


def _copy_back(tensor, array):
    """The collective worked on a copy (the tensor is not row-major): write the result in."""
    if array is not tensor.data:
        tensor.data[...] = array


def _run(comm, what, start, finish, async_op):
    """Start a collective (`start(blocking)` returns a request or None) and finish it now, or
    hand back a Work that finishes it at wait()."""
    if not async_op:
        request = start(True)
        if request is not None:  # the group has a timeout: the call was non-blocking
            comm.wait(request, what)
        finish()
        return None
    return Work(comm, start(False), what, finish)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Replace `tensor`, on every rank, by the reduction (op) of all ranks' tensors."""
    _check(tensor, "all_reduce")
    op = _reduce_op(op)
    if op is ReduceOp.AVG and not tensor.is_floating_point():
        raise TypeError(f"all_reduce: ReduceOp.AVG needs a floating tensor, got {tensor.dtype}; "
                        "reduce with SUM and divide")
    comm = _comm(tensor, "all_reduce", group)
    _claim(tensor, "all_reduce")
    buffer = _buffer(tensor)

    def finish():
        if op is ReduceOp.AVG:
            buffer[...] /= comm.size  # in place; float division keeps the dtype
        _copy_back(tensor, buffer)

    return _run(comm, "all_reduce", lambda blocking: comm.all_reduce(buffer, op.value, blocking),
                finish, async_op)


def broadcast(tensor, src, group=None, async_op=False):
    """Replace `tensor` on every rank by rank `src`'s."""
    _check(tensor, "broadcast")
    comm = _comm(tensor, "broadcast", group)
    if not (isinstance(src, int) and 0 <= src < comm.size):
        raise ValueError(f"broadcast: src={src!r} is not a rank of this job of {comm.size}")
    _claim(tensor, "broadcast")
    buffer = _buffer(tensor)
    return _run(comm, "broadcast", lambda blocking: comm.broadcast(buffer, src, blocking),
                lambda: _copy_back(tensor, buffer), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's input_tensor, in rank order, into output_tensor: stacked (shape
    (world_size, *input.shape)) or concatenated along dim 0 (world_size * input.shape[0], ...)."""
    _check(output_tensor, "all_gather_into_tensor", "output_tensor")
    _check(input_tensor, "all_gather_into_tensor", "input_tensor")
    comm = _comm(input_tensor, "all_gather_into_tensor", group)
    shape, n = tuple(input_tensor.shape), comm.size
    fits = (n,) + shape, ((n * shape[0],) + shape[1:] if shape else None)
    if tuple(output_tensor.shape) not in fits or output_tensor.dtype != input_tensor.dtype \
            or output_tensor.device != input_tensor.device:
        raise ValueError(f"all_gather_into_tensor: output_tensor of shape "
                         f"{tuple(output_tensor.shape)} ({output_tensor.dtype} on "
                         f"{output_tensor.device}) cannot hold {n} inputs of shape {shape} "
                         f"({input_tensor.dtype} on {input_tensor.device}); expected shape "
                         f"{fits[0]}" + (f" or {fits[1]}" if fits[1] else "") + " of that dtype")
    _claim(output_tensor, "all_gather_into_tensor")
    buffer, send = _buffer(output_tensor), _buffer(input_tensor)
    out = buffer.reshape((n,) + shape)  # a view: buffer is row-major
    return _run(comm, "all_gather", lambda blocking: comm.all_gather(out, send, blocking),
                lambda: _copy_back(output_tensor, buffer), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every rank's `tensor` into `tensor_list` (one tensor per rank, in rank order, each of
    `tensor`'s shape and dtype), written in place."""
    _check(tensor, "all_gather")
    comm = _comm(tensor, "all_gather", group)
    tensor_list = list(tensor_list)
    if len(tensor_list) != comm.size:
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors for a job of "
                         f"{comm.size} ranks; give one per rank")
    for i, t in enumerate(tensor_list):
        _check(t, "all_gather", f"tensor_list[{i}]")
        if t.shape != tensor.shape or t.dtype != tensor.dtype or t.device != tensor.device:
            raise ValueError(f"all_gather: tensor_list[{i}] is {tuple(t.shape)} {t.dtype} on "
                             f"{t.device}, expected {tuple(tensor.shape)} {tensor.dtype} on "
                             f"{tensor.device} like the input")
    for t in tensor_list:
        _claim(t, "all_gather")
    out = empty((comm.size,) + tuple(tensor.shape), dtype=tensor.dtype, device=tensor.device).data
    send = _buffer(tensor)

    def finish():
        for t, part in zip(tensor_list, out):
            t.data[...] = part

    return _run(comm, "all_gather", lambda blocking: comm.all_gather(out, send, blocking),
                finish, async_op)


def barrier(group=None, async_op=False):
    """Return only when every rank has called barrier."""
    comm = check_group(group, "barrier")
    return _run(comm, "barrier", comm.barrier, lambda: None, async_op)


def _reduce_op(op):
    if isinstance(op, ReduceOp):
        return op
    if isinstance(op, str) and op.upper() in ReduceOp.__members__:
        return ReduceOp[op.upper()]
    raise ValueError(f"all_reduce: unknown op {op!r}; expected a ReduceOp "
                     f"({', '.join(ReduceOp.__members__)})")
