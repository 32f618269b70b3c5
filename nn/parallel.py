"""DistributedDataParallel: one replica of a model per process, gradients averaged over all.

    import tensorgrad.distributed as dist
    dist.init()                                   # under mpiexec -n N
    model = DistributedDataParallel(GPT(config))  # every rank now holds rank 0's weights
    loss = model(x_of_this_rank, targets=y_of_this_rank)[1]
    loss.backward()                               # .grad: the mean over ranks, on every rank
    optimizer.step()                              # the same step everywhere

How the gradients are averaged. At wrap time the parameters that require grad are laid out,
in reverse order (roughly the order backward produces their gradients), into buckets of at most
`bucket_cap_mb` of one dtype, each with one flat buffer. Each parameter gets a post-accumulate
hook (Tensor.register_post_accumulate_grad_hook), which, in a backward that follows a
synchronising forward, copies the parameter's `.grad` (this backward's gradient added to what
earlier no_sync steps left there) into its slot of the bucket. When a bucket's last parameter
is in, one allreduce averages the flat buffer and each `.grad` is overwritten in place with its
averaged slot. So when backward returns, every `.grad` holds the mean over ranks of the
gradient accumulated since it was last zeroed.
The allreduce runs inside the hook, synchronously: on CPUs the next VJP would compete with
MPI for the same core anyway.
"""
import contextlib
import functools
import weakref

import tensorgrad as tg
import tensorgrad.distributed as dist

from .module import Module


class DistributedDataParallel(Module):
    """torch.nn.parallel.DistributedDataParallel over tensorgrad.distributed (MPI or NCCL).

    module: the replica; its parameters and buffers are replaced by rank 0's at wrap time.
    device_ids, output_device: one process drives one device, the module's (a list of at most
        one device, which must be the module's; None is the same).
    dim: kept for torch's signature; nothing is scattered (each rank feeds its own batch).
    broadcast_buffers: copy rank 0's buffers (BatchNorm statistics) to every rank at the
        start of each forward, as torch does.
    bucket_cap_mb: the most megabytes (2**20 bytes) of gradients one allreduce carries.
    find_unused_parameters: not supported: every parameter that requires grad must get a
        gradient in each synchronised backward (a forward after one that left some without
        raises, naming them); freeze unused ones with requires_grad_(False).
    gradient_as_bucket_view: not supported (tensorgrad's engine copies views it is handed).
    static_graph: accepted; the reduction is the same either way.

    One synchronised backward per forward: a second backward of the same graph accumulates
    locally, as under no_sync(). Gradients are the mean over ranks of each rank's gradient,
    which equals a single process's on the concatenated batch when the loss is a mean over
    equally many samples per rank.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, process_group=None, bucket_cap_mb=25,
                 find_unused_parameters=False, gradient_as_bucket_view=False,
                 static_graph=False):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be a tensorgrad.nn.Module, "
                            f"got {type(module).__name__}")
        if find_unused_parameters:
            raise NotImplementedError(
                "DistributedDataParallel: find_unused_parameters=True is not supported; every "
                "parameter that requires grad must get a gradient each step (freeze the others "
                "with requires_grad_(False))")
        if gradient_as_bucket_view:
            raise NotImplementedError("DistributedDataParallel: gradient_as_bucket_view=True "
                                      "is not supported (the engine copies views it is handed)")
        if not bucket_cap_mb > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, got "
                             f"{bucket_cap_mb!r}")
        dist.get_world_size(process_group)  # a clear error when init() has not run
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers, self.static_graph, self.dim = broadcast_buffers, static_graph, dim
        self.require_backward_grad_sync = True  # what no_sync() switches off
        self._check_devices(device_ids, output_device)
        self.bucket_bytes_cap = int(bucket_cap_mb * 2**20)
        params = [p for p in module.parameters() if p.requires_grad]
        self._check_same_model_everywhere(params)
        _broadcast_coalesced(list(module.parameters()) + list(module.buffers()),
                             self.bucket_bytes_cap)
        self._buckets = [_Bucket(group) for group in
                         _layout(list(reversed(params)), self.bucket_bytes_cap)]
        self._armed = False  # the next backward averages (set by a synchronising forward)
        self._unreduced = 0  # buckets of the armed backward still waiting for a parameter
        this = weakref.ref(self)  # hooks must not keep the wrapper alive (params outlive it)
        handles = [p.register_post_accumulate_grad_hook(functools.partial(_hook, this, bucket, i))
                   for bucket in self._buckets for i, p in enumerate(bucket.params)]
        weakref.finalize(self, _remove_all, handles)

    def _check_devices(self, device_ids, output_device):
        own = {p.device for p in self.module.parameters()} or {tg.device("cpu")}
        given = list(device_ids or []) + ([output_device] if output_device is not None else [])
        wrong = [d for d in given
                 if (tg.device(f"cuda:{d}") if isinstance(d, int) else tg.device(d)) not in own]
        if len(device_ids or []) > 1 or wrong or len(own) > 1:
            raise ValueError(f"DistributedDataParallel: one process drives one device; the "
                             f"module is on {sorted(own)}, device_ids={device_ids!r}, "
                             f"output_device={output_device!r}")

    def _check_same_model_everywhere(self, params):
        """Different models on different ranks would make the collectives below mismatch
        (an MPI error, or a hang): compare the counts first and say what differs."""
        counts = [len(params), sum(p.numel() for p in params), len(list(self.module.buffers()))]
        low, high = tg.tensor(counts, dtype=tg.int64), tg.tensor(counts, dtype=tg.int64)
        dist.all_reduce(low, op=dist.ReduceOp.MIN)
        dist.all_reduce(high, op=dist.ReduceOp.MAX)
        if low.tolist() != high.tolist():
            raise RuntimeError(f"DistributedDataParallel: the ranks wrap different models; "
                               f"this rank (rank {dist.get_rank()}) has {counts[0]} parameters "
                               f"requiring grad ({counts[1]} elements) and {counts[2]} buffers; "
                               f"over all ranks these range from {low.tolist()} to "
                               f"{high.tolist()}")

    def forward(self, *inputs, **kwargs):
        if self.broadcast_buffers and dist.get_world_size() > 1:
            _broadcast_coalesced(list(self.module.buffers()), self.bucket_bytes_cap)
        # A forward under no_grad (evaluation between a forward and its backward) records no
        # graph: it leaves the pending reduction as it is, as torch does.
        if tg.is_grad_enabled():
            self._check_previous_reduction()
            self._armed = self.require_backward_grad_sync
            self._unreduced = len(self._buckets)
            for bucket in self._buckets:
                bucket.reset()
        return self.module(*inputs, **kwargs)

    def _check_previous_reduction(self):
        """A synchronised backward that gave some parameters no gradient left their buckets
        unreduced, so the ranks' gradients may now differ: torch raises here too. (Armed with
        nothing ready is a forward with no backward after it: fine.)"""
        if not (self._armed and any(b.ready for b in self._buckets)):
            return
        waiting = {id(p) for b in self._buckets if b.ready < len(b.params)
                   for p, arrived in zip(b.params, b.arrived) if not arrived}
        missing = [name for name, p in self.module.named_parameters() if id(p) in waiting]
        for bucket in self._buckets:  # start clean, should the caller go on regardless
            bucket.reset()
        self._armed = False
        raise RuntimeError(
            "DistributedDataParallel: the previous backward gave no gradient to "
            f"{', '.join(missing)}, so the gradients of their buckets were not averaged over "
            "the ranks; every parameter that requires grad must be used in the loss "
            "(find_unused_parameters is not supported: freeze unused ones instead)")

    @contextlib.contextmanager
    def no_sync(self):
        """Forwards and backwards inside accumulate gradients locally, without communication;
        the first synchronised backward after it averages everything accumulated."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def extra_repr(self):
        return (f"world_size={dist.get_world_size()}, buckets={len(self._buckets)}, "
                f"bucket_cap_mb={self.bucket_bytes_cap / 2**20:g}")


class _Bucket:
    """Parameters of one dtype and device whose gradients travel in one allreduce."""

    def __init__(self, params):
        self.params = params
        first = params[0]
        self.flat = tg.zeros(sum(p.numel() for p in params), dtype=first.dtype,
                             device=first.device)
        self.slots, offset = [], 0
        for p in params:  # each slot a view of the flat buffer, in the parameter's shape
            self.slots.append(self.flat[offset:offset + p.numel()].view(p.shape))
            offset += p.numel()
        self.reset()

    def reset(self):
        self.arrived = [False] * len(self.params)  # which .grads of this backward are in
        self.ready = 0


def _hook(this, bucket, index, param):
    """A parameter's .grad has taken this backward's gradient (see the module docstring)."""
    ddp = this()
    if ddp is None or not ddp._armed:
        return  # no_sync, or a backward of no DDP forward: the gradient stays local
    with tg.no_grad():
        bucket.slots[index].copy_(param.grad)
    bucket.arrived[index] = True
    bucket.ready += 1
    if bucket.ready == len(bucket.params):
        _reduce(ddp, bucket)


def _reduce(ddp, bucket):
    dist.all_reduce(bucket.flat, op=dist.ReduceOp.AVG)
    with tg.no_grad():
        for param, slot in zip(bucket.params, bucket.slots):
            param.grad.copy_(slot)
    ddp._unreduced -= 1
    if not ddp._unreduced:
        ddp._armed = False  # done: a second backward of the same graph stays local


def _layout(tensors, cap_bytes):
    """Consecutive tensors of one dtype and device, grouped up to cap_bytes (a larger tensor
    makes a group of its own)."""
    groups, size = [], 0
    for t in tensors:
        nbytes = t.numel() * t.element_size()
        last = groups[-1][-1] if groups else None
        if last is None or (last.dtype, last.device) != (t.dtype, t.device) \
                or size + nbytes > cap_bytes:
            groups.append([])
            size = 0
        groups[-1].append(t)
        size += nbytes
    return groups


def _broadcast_coalesced(tensors, cap_bytes):
    """Give every rank rank 0's values of `tensors`: one broadcast per group of _layout."""
    with tg.no_grad():
        for group in _layout(tensors, cap_bytes):
            flat = tg.cat([t.reshape(-1) for t in group])
            dist.broadcast(flat, 0)
            offset = 0
            for t in group:
                t.copy_(flat[offset:offset + t.numel()].view(t.shape))
                offset += t.numel()


def _remove_all(handles):
    for handle in handles:
        handle.remove()
