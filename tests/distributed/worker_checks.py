"""Run under `mpiexec -n 2` by test_collectives.py (and test_nccl.py with --device cuda): each
check runs on every rank, and each rank writes its results to OUT/rank<r>.json for the test."""
import json
import os
import sys
import traceback

import numpy as np

import tensorgrad as tg
import tensorgrad.distributed as dist
from tensorgrad import nn
from tensorgrad.nn.parallel import DistributedDataParallel

CHECKS = []
# Checks whose expected values are two ranks': a world of one (test_nccl.py's) skips them.
TWO_RANKS = {"all_reduce_ops", "all_reduce_in_place_of_a_view", "async_work", "barrier_and_ranks",
             "ddp_no_sync_accumulates_then_averages_everything",
             "ddp_training_keeps_replicas_identical"}


def check(fn):
    CHECKS.append(fn)
    return fn


def close(a, b, tol=1e-12, name=""):
    np.testing.assert_allclose(np.asarray(a.cpu().numpy(), dtype=np.float64),
                               np.asarray(b.cpu().numpy() if isinstance(b, tg.Tensor) else b,
                                          dtype=np.float64), rtol=tol, atol=tol, err_msg=name)


# --- collectives --------------------------------------------------------------------------------
@check
def all_reduce_ops(rank, n, device):
    for dtype in (tg.float32, tg.float64, tg.int64):
        x = tg.tensor([1, 2, 3], dtype=dtype, device=device) * (rank + 1)
        dist.all_reduce(x)
        assert x.dtype == dtype
        close(x, [3, 6, 9])
    expected = {"AVG": [1.5, 3.0], "MAX": [2, 4], "MIN": [1, 2], "PRODUCT": [2, 8]}
    for op, want in expected.items():
        x = tg.tensor([1.0, 2.0], device=device) * (rank + 1)
        dist.all_reduce(x, op=dist.ReduceOp[op])
        close(x, want)


@check
def all_reduce_in_place_of_a_view(rank, n, device):
    base = tg.arange(6.0, device=device).reshape(2, 3) + rank
    view = base.T  # not row-major: reduced in a copy, written back through the view
    version = base._version[0]
    dist.all_reduce(view)
    close(base, (tg.arange(6.0).reshape(2, 3) * 2 + 1))
    assert base._version[0] > version
    x = tg.ones(3, device=device, requires_grad=True)
    y = (x * x).sum()  # saves x
    dist.all_reduce(x)  # allowed on a leaf (collectives are outside autograd) ...
    try:
        y.backward()  # ... but backward sees that a saved tensor changed
    except RuntimeError:
        return
    raise AssertionError("backward did not notice the all_reduce of a saved tensor")


@check
def async_work(rank, n, device):
    x = tg.full((4,), float(rank), device=device)
    work = dist.all_reduce(x, op=dist.ReduceOp.AVG, async_op=True)
    assert work.wait() and work.is_completed()
    close(x, [0.5] * 4)
    assert dist.all_reduce(x) is None  # blocking calls return None, as in torch


@check
def broadcast_from_each_rank(rank, n, device):
    for src in range(n):
        x = tg.arange(5, device=device) * (rank + 1)
        dist.broadcast(x, src)
        close(x, np.arange(5) * (src + 1))


@check
def all_gather_both_forms(rank, n, device):
    x = tg.full((2, 3), float(rank), device=device)
    parts = [tg.zeros(2, 3, device=device) for _ in range(n)]
    dist.all_gather(parts, x)
    for r, part in enumerate(parts):
        close(part, np.full((2, 3), r))
    stacked, joined = tg.zeros(n, 2, 3, device=device), tg.zeros(2 * n, 3, device=device)
    dist.all_gather_into_tensor(stacked, x)
    dist.all_gather_into_tensor(joined, x)
    close(stacked, np.repeat(np.arange(n), 6).reshape(n, 2, 3))
    close(joined, np.repeat(np.arange(n), 6).reshape(2 * n, 3))


@check
def barrier_and_ranks(rank, n, device):
    dist.barrier()
    assert n == 2 and dist.get_rank() == rank and 0 <= dist.get_local_rank() < n
    assert dist.is_initialized()


# --- DistributedDataParallel --------------------------------------------------------------------
def mlp(seed, device):
    tg.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 3)).to(device=device, dtype=tg.float64)


def global_batch(device, rows=8):
    g = tg.Generator().manual_seed(123)
    x = tg.randn(rows, 5, generator=g, dtype=tg.float64)
    y = tg.randn(rows, 3, generator=g, dtype=tg.float64)
    return x.to(device), y.to(device)


def shard(t, rank, n):
    size = t.shape[0] // n
    return t[rank * size:(rank + 1) * size]


def loss_of(model, x, y):
    return ((model(x) - y) ** 2).mean()


@check
def ddp_gradients_equal_one_process_on_the_global_batch(rank, n, device):
    single = mlp(10, device)
    replica = mlp(rank + 10, device)  # a different start on each rank: DDP takes rank 0's
    ddp = DistributedDataParallel(replica, bucket_cap_mb=600 / 2**20)  # several buckets
    assert len(ddp._buckets) > 2
    x, y = global_batch(device)
    loss_of(single, x, y).backward()
    loss_of(ddp, shard(x, rank, n), shard(y, rank, n)).backward()
    for (name, a), b in zip(single.named_parameters(), replica.parameters()):
        close(b.detach(), a.detach(), name=name)
        close(b.grad, a.grad, name=name)


@check
def ddp_no_sync_accumulates_then_averages_everything(rank, n, device):
    single, replica = mlp(0, device), mlp(0, device)
    ddp = DistributedDataParallel(replica)
    x, y = global_batch(device, rows=16)
    halves = [(x[:8], y[:8]), (x[8:], y[8:])]
    for xs, ys in halves:  # the single process sees each micro-batch whole
        loss_of(single, xs, ys).backward()
    with ddp.no_sync():
        loss_of(ddp, shard(halves[0][0], rank, n), shard(halves[0][1], rank, n)).backward()
    local = [p.grad.clone() for p in replica.parameters()]
    peers = [tg.zeros_like(local[0]) for _ in range(n)]
    dist.all_gather(peers, local[0])
    assert not np.allclose(peers[0].cpu().numpy(), peers[1].cpu().numpy())  # not synced yet
    loss_of(ddp, shard(halves[1][0], rank, n), shard(halves[1][1], rank, n)).backward()
    for a, b in zip(single.parameters(), replica.parameters()):
        close(b.grad, a.grad)


@check
def ddp_a_no_grad_forward_in_between_leaves_the_reduction_pending(rank, n, device):
    single, replica = mlp(0, device), mlp(0, device)
    ddp = DistributedDataParallel(replica)
    x, y = global_batch(device)
    loss_of(single, x, y).backward()
    loss = loss_of(ddp, shard(x, rank, n), shard(y, rank, n))
    with tg.no_grad():
        ddp(x)  # evaluation before the backward
    loss.backward()
    for a, b in zip(single.parameters(), replica.parameters()):
        close(b.grad, a.grad)


@check
def ddp_training_keeps_replicas_identical(rank, n, device):
    replica = mlp(rank, device)
    ddp = DistributedDataParallel(replica)
    opt = nn.optim.AdamW(replica.parameters(), lr=1e-2)
    x, y = global_batch(device)
    for _ in range(3):
        opt.zero_grad()
        loss_of(ddp, shard(x, rank, n), shard(y, rank, n)).backward()
        nn.utils.clip_grad_norm_(replica.parameters(), 0.5)
        opt.step()
    for p in replica.parameters():
        copies = [tg.zeros_like(p) for _ in range(n)]
        dist.all_gather(copies, p.detach())
        close(copies[0], copies[1], tol=0)


@check
def ddp_broadcasts_buffers_at_each_forward(rank, n, device):
    tg.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6)).to(device=device,
                                                                  dtype=tg.float64)
    ddp = DistributedDataParallel(net)
    g = tg.Generator().manual_seed(rank)  # each rank its own data: running stats diverge
    first, second = (tg.randn(8, 4, generator=g, dtype=tg.float64).to(device) for _ in "12")
    ddp(first).sum().backward()
    leader = net[1].running_mean.detach().clone()
    dist.broadcast(leader, 0)  # rank 0's statistics after the first forward
    ddp(second)  # starts from rank 0's statistics, then updates them with this rank's batch
    with tg.no_grad():
        expected = 0.9 * leader + 0.1 * net[0](second).mean(0)  # momentum 0.1
    close(net[1].running_mean, expected)


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.used, self.unused = nn.Linear(5, 3), nn.Linear(5, 3)

    def forward(self, x):
        return self.used(x)


@check
def ddp_unused_parameter_is_an_error_at_the_next_forward(rank, n, device):
    net = TwoHeads().to(device=device, dtype=tg.float64)
    ddp = DistributedDataParallel(net, bucket_cap_mb=100)  # one bucket: it never completes
    x, _ = global_batch(device)
    ddp(x).sum()  # a forward with no backward after it is fine
    ddp(x).sum().backward()
    try:
        ddp(x)
    except RuntimeError as exc:
        assert "unused.weight, unused.bias" in str(exc), str(exc)
    else:
        raise AssertionError("a parameter without a gradient went unnoticed")
    net.unused.requires_grad_(False)  # the remedy: freeze it, wrap again
    ddp = DistributedDataParallel(net)
    ddp(shard(x, rank, n)).sum().backward()
    ddp(x)


def main():
    out, device = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "cpu"
    dist.init()
    rank, n = dist.get_rank(), dist.get_world_size()
    if device == "cuda":
        device = f"cuda:{dist.get_local_rank()}"
    report = {}
    for fn in CHECKS:
        if n == 1 and fn.__name__ in TWO_RANKS:
            continue
        try:
            fn(rank, n, device)
            report[fn.__name__] = ""
        except Exception:  # noqa: BLE001 - reported to the test, which fails with it
            report[fn.__name__] = traceback.format_exc()
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
