"""tensorgrad.distributed: processes that train together, over MPI (torch.distributed's names).

Start N processes with MPI's launcher; each calls `init()` and learns its rank:

    mpiexec -n 2 python train.py

    import tensorgrad.distributed as dist
    dist.init()
    x = tg.ones(3) * (dist.get_rank() + 1)
    dist.all_reduce(x)                          # in place: every rank now holds [3, 3, 3]
    dist.all_reduce(x, op=dist.ReduceOp.AVG)    # the mean

CPU tensors travel through mpi4py's buffer interface (the arrays' memory, never pickled); CUDA
tensors through NCCL (cupy.cuda.nccl, tensorgrad/backend/nccl.py) when CuPy is installed.
Collectives run outside autograd. Only the default group (every process) exists. The layer
that averages gradients is tensorgrad.nn.parallel.DistributedDataParallel; the sampler that
shards a dataset is tensorgrad.utils.data.DistributedSampler.
"""
from .collectives import (  # noqa: F401
    ReduceOp, Work, all_gather, all_gather_into_tensor, all_reduce, barrier, broadcast,
)
from .group import (  # noqa: F401
    DistBackendError, destroy_process_group, get_local_rank, get_rank, get_world_size, init,
    init_process_group, is_available, is_initialized,
)

