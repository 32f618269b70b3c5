"""The process group: started once from MPI, then asked for rank, world size and local rank.

mpi4py is imported by `init`, not by `import tensorgrad`: importing it starts MPI, which a
program that never goes parallel should not pay for.
"""
import datetime


class DistBackendError(RuntimeError):
    """A collective failed or timed out (torch.distributed's name)."""


_world = None  # the MpiGroup after init()
_nccl = {}  # cuda device index -> its NCCL communicator, made at that device's first collective


def is_available():
    """Whether mpi4py (and so an MPI library) can be imported."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def init(backend=None, timeout=None):
    """Join the job: every process started by `mpiexec -n N` calls this once (a process
    started without mpiexec is a job of one).

    backend: None or "mpi" (CPU tensors through MPI, CUDA tensors through NCCL when CuPy is
        present), or "nccl" (the same; the name says CUDA tensors are expected).
    timeout: a collective that waits longer than this (seconds or a datetime.timedelta) raises
        DistBackendError, which ends the job. None (the default, unlike torch's 30 minutes)
        waits without limit: a rank that raises aborts the job anyway (see below), so only a
        rank that hangs needs a timeout, and without one the collectives are MPI's blocking
        calls, slightly faster than polling.

    A process that dies of an uncaught exception prints its traceback and aborts the job
    (MPI_Abort) rather than leave the others waiting forever.
    """
    global _world
    if backend not in (None, "mpi", "nccl"):
        raise ValueError(f"init: unknown backend {backend!r}; expected None, 'mpi' or 'nccl' "
                         "(gloo is not available: tensorgrad's CPU collectives are MPI's)")
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    if timeout is not None and not timeout > 0:
        raise ValueError(f"init: timeout must be positive seconds or None, got {timeout!r}")
    if _world is not None:
        raise RuntimeError("init: the process group is already initialized (call "
                           "destroy_process_group() first to start another)")
    if not is_available():
        raise RuntimeError("init: tensorgrad.distributed needs mpi4py and an MPI library: "
                           "pip install 'tensorgrad[distributed]' (mpi4py with the mpich wheel)")
    from .mpi import MpiGroup

    _world = MpiGroup(None if timeout is None else float(timeout), DistBackendError)
    if _world.size > 1:
        _world.install_abort_hook()
    return _world


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1):
    """torch.distributed.init_process_group's signature over `init`: MPI decides the ranks and
    how processes meet, so init_method must be None or "env://", and world_size and rank, when
    given, must be what mpiexec gave."""
    if init_method not in (None, "env://"):
        raise ValueError(f"init_process_group: init_method={init_method!r} is not supported; "
                         "the processes meet through MPI (start them with mpiexec)")
    world = init(backend, timeout)
    for name, given, actual in (("world_size", world_size, world.size),
                                ("rank", rank, world.rank)):
        if given != -1 and given != actual:
            destroy_process_group()
            raise ValueError(f"init_process_group: {name}={given} but MPI says {actual} "
                             "(mpiexec decides both)")


def is_initialized():
    return _world is not None


def world():
    """The MpiGroup, or a clear error naming the function that needed it."""
    if _world is None:
        raise RuntimeError("Default process group has not been initialized, please make sure "
                           "to call tensorgrad.distributed.init() (under mpiexec -n N)")
    return _world


def check_group(group, what):
    """Only the default group (every process) exists."""
    if group is not None:
        raise NotImplementedError(f"{what}: only the default group (group=None) exists in "
                                  "tensorgrad.distributed")
    return world()


def get_rank(group=None):
    """This process's index in the job, 0 .. world size - 1."""
    return check_group(group, "get_rank").rank


def get_world_size(group=None):
    """How many processes the job has."""
    return check_group(group, "get_world_size").size


def get_local_rank():
    """This process's index among the job's processes on the same node (the GPU it takes)."""
    return world().local_rank


def nccl_group(device_index):
    """The NCCL communicator of one GPU, made (collectively) at its first use: rank 0 draws the
    id and MPI hands it to the others."""
    comm = _nccl.get(device_index)
    if comm is None:
        from ..backend import nccl

        mpi = world()
        uid = mpi.broadcast_object(nccl.unique_id() if mpi.rank == 0 else None)
        comm = _nccl[device_index] = nccl.NcclGroup(mpi.size, uid, mpi.rank, device_index,
                                                    mpi.timeout)
    return comm


def destroy_process_group(group=None):
    """Leave the job's group: the abort hook goes, and init() may be called again. MPI itself
    is finalized when the interpreter exits (mpi4py does it)."""
    global _world
    mpi = check_group(group, "destroy_process_group")
    for comm in _nccl.values():
        comm.close()
    _nccl.clear()
    mpi.remove_abort_hook()
    _world = None
