"""DistributedSampler: each process of a data-parallel job reads its own share of a dataset,
torch.utils.data.distributed.DistributedSampler's signature and semantics."""
import math

from ... import Generator, randperm
from .sampler import Sampler


class DistributedSampler(Sampler):
    """The indices of one replica (rank) out of num_replicas: every rank gets the same number.

    The epoch's order (0..n-1, or a permutation seeded by seed + epoch, the same on every
    rank) is made a multiple of num_replicas long: with drop_last its tail is cut, otherwise
    it is padded by repeating its head (so a few samples are read twice per epoch). Rank r
    then takes positions r, r + num_replicas, r + 2 * num_replicas, ...

    num_replicas, rank: default to the process group's world size and rank
        (tensorgrad.distributed.init() must have run).
    shuffle: permute every epoch; call `set_epoch(epoch)` at each epoch's start, or every
        epoch repeats the first one's order.
    seed: the permutation's base seed: the same on every rank.
    drop_last: cut the tail instead of padding.

    With shuffle the permutation is tensorgrad's (its generator differs from torch's), so the
    indices equal torch's given the same permutation; without shuffle they are equal.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            from ... import distributed

            if not distributed.is_initialized():
                raise RuntimeError("DistributedSampler: num_replicas and rank default to the "
                                   "process group's, which is not initialized; call "
                                   "tensorgrad.distributed.init() or pass both")
            num_replicas = distributed.get_world_size() if num_replicas is None else num_replicas
            rank = distributed.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            # Cut to the largest multiple of num_replicas: every rank has the same count.
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            generator = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=generator, device="cpu").tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        elif indices:
            # Pad by repeating the order from its start, as many times as it takes.
            repeats = math.ceil(self.total_size / n)
            indices = (indices * repeats)[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """The epoch whose permutation the next iteration uses (the same on every rank)."""
        self.epoch = epoch
