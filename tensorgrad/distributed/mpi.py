"""MPI through mpi4py: the one module of tensorgrad that imports it.

Collectives take host arrays through mpi4py's buffer interface (the upper-case methods:
`Allreduce`, `Bcast`, `Allgather`), so an array travels as raw memory, never pickled. Without
a timeout they are MPI's blocking calls, exactly what mpi4py would run; with one, the
non-blocking form is polled until it completes or the time is up.
"""
import sys
import time

from mpi4py import MPI


# AVG is a SUM followed by a division (collectives.py): MPI has no mean.
_OPS = {"SUM": MPI.SUM, "AVG": MPI.SUM, "PRODUCT": MPI.PROD, "MIN": MPI.MIN, "MAX": MPI.MAX}


class MpiGroup:
    """All the processes of MPI_COMM_WORLD: rank, size, local rank and the collectives."""

    def __init__(self, timeout, error):
        self.error = error  # what a timed-out collective raises (the API's DistBackendError)
        self.comm = MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        # The local rank is the rank among the processes that share this node's memory: the
        # index of the GPU a process takes, whatever launcher started it.
        node = self.comm.Split_type(MPI.COMM_TYPE_SHARED)
        self.local_rank, self.local_size = node.Get_rank(), node.Get_size()
        node.Free()
        self.timeout = timeout  # seconds, or None to block without limit

    # --- collectives on host arrays (C-contiguous; the caller checks) --------------------------
    def all_reduce(self, array, op, blocking):
        if blocking and self.timeout is None:
            self.comm.Allreduce(MPI.IN_PLACE, array, op=_OPS[op])
            return None
        return self.comm.Iallreduce(MPI.IN_PLACE, array, op=_OPS[op])

    def broadcast(self, array, src, blocking):
        if blocking and self.timeout is None:
            self.comm.Bcast(array, root=src)
            return None
        return self.comm.Ibcast(array, root=src)

    def all_gather(self, out, array, blocking):
        """out: (size, *array.shape), filled with every rank's array in rank order."""
        if blocking and self.timeout is None:
            self.comm.Allgather(array, out)
            return None
        return self.comm.Iallgather(array, out)

    def barrier(self, blocking):
        if blocking and self.timeout is None:
            self.comm.Barrier()
            return None
        return self.comm.Ibarrier()

    def broadcast_object(self, obj, src=0):
        """A small Python object (an NCCL id), pickled: never used for arrays."""
        return self.comm.bcast(obj, root=src)

    def wait(self, request, what, timeout=None):
        """Wait for a non-blocking collective, at most `timeout` (else the group's) seconds."""
        timeout = self.timeout if timeout is None else timeout
        if timeout is None:
            request.Wait()
            return
        deadline = time.monotonic() + timeout
        pause = 1e-6
        while not request.Test():
            if time.monotonic() > deadline:
                raise self.error(
                    f"{what}: timed out after {timeout:g} s on rank {self.rank} of {self.size}, "
                    "waiting for the other ranks (did one fail, or call the collectives in a "
                    "different order?); the job cannot continue")
            # Polling backs off so that a long wait does not take a core from the ranks being
            # waited for, which may share this machine's cores.
            time.sleep(pause)
            pause = min(2 * pause, 1e-3)

    def test(self, request):
        return request.Test()

    # --- failure --------------------------------------------------------------------------------
    def install_abort_hook(self):
        """A rank that dies of an uncaught exception prints its traceback, then aborts the whole
        job (MPI_Abort), so that the other ranks fail at once instead of waiting forever in
        their next collective."""
        previous = sys.excepthook

        def abort_job(exc_type, exc, tb):
            previous(exc_type, exc, tb)
            sys.stderr.write(f"tensorgrad.distributed: rank {self.rank} of {self.size} raised "
                             f"{exc_type.__name__}; aborting the job (MPI_Abort)\n")
            sys.stdout.flush()
            sys.stderr.flush()
            # mpiexec forwards each rank's output through a proxy that MPI_Abort kills at once:
            # without a moment to pass it on, the traceback can arrive cut short
            time.sleep(0.5)
            self.comm.Abort(1)

        abort_job.previous = previous
        sys.excepthook = abort_job

    def remove_abort_hook(self):
        previous = getattr(sys.excepthook, "previous", None)
        if previous is not None:
            sys.excepthook = previous
