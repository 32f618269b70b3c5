"""DistributedSampler: even shards, padding by repetition or drop_last, epochs that reshuffle,
and torch's DistributedSampler's indices (torch's own, given the same permutation)."""
import itertools

import pytest

import tensorgrad as tg
from tensorgrad.utils.data import DataLoader, DistributedSampler, TensorDataset

SIZES = [0, 1, 5, 10, 11, 12, 13]  # empty, fewer than replicas, multiples and not


def shards(n, replicas, **kw):
    return [list(DistributedSampler(range(n), replicas, rank, **kw)) for rank in range(replicas)]


@pytest.mark.parametrize("n, replicas", list(itertools.product(SIZES, [1, 2, 3, 4])))
@pytest.mark.parametrize("drop_last", [False, True])
def test_shards_are_even_and_cover_the_dataset(n, replicas, drop_last):
    parts = shards(n, replicas, shuffle=True, seed=3, drop_last=drop_last)
    lengths = {len(p) for p in parts}
    assert len(lengths) == 1
    assert [len(DistributedSampler(range(n), replicas, r, drop_last=drop_last))
            for r in range(replicas)] == [len(p) for p in parts]
    seen = [i for p in parts for i in p]
    if drop_last:  # the largest multiple of replicas, each index at most once
        assert len(seen) == n // replicas * replicas and len(set(seen)) == len(seen)
    else:  # everything, padded by repetition up to a multiple
        assert set(seen) == set(range(n)) and len(seen) == -(-n // replicas) * replicas


@pytest.mark.parametrize("n, replicas", list(itertools.product(SIZES, [1, 2, 3, 4])))
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_indices_equal_torchs(n, replicas, drop_last, shuffle, monkeypatch):
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    epoch = 4
    ours = []
    for rank in range(replicas):
        sampler = DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=7,
                                     drop_last=drop_last)
        sampler.set_epoch(epoch)
        ours.append(list(sampler))
    # tensorgrad's generator is not torch's: hand torch the permutation ours drew, so that
    # everything after it (padding, cutting, striding) is compared.
    permutation = tg.randperm(n, generator=tg.Generator().manual_seed(7 + epoch)).tolist()
    monkeypatch.setattr(torch, "randperm", lambda *a, **k: torch.tensor(permutation))
    theirs = []
    for rank in range(replicas):
        sampler = TorchSampler(range(n), replicas, rank, shuffle=shuffle, seed=7,
                               drop_last=drop_last)
        sampler.set_epoch(epoch)
        theirs.append(list(sampler))
        assert len(sampler) == len(ours[rank])
    assert ours == theirs


def test_epochs_reshuffle_and_the_seed_is_shared():
    a, b = DistributedSampler(range(40), 2, 0, seed=1), DistributedSampler(range(40), 2, 1, seed=1)
    first = list(a)
    assert list(a) == first  # no set_epoch: the same order again (torch's behaviour)
    a.set_epoch(1)
    b.set_epoch(1)
    second = list(a)
    assert second != first and sorted(second + list(b)) == list(range(40))
    assert list(DistributedSampler(range(40), 2, 0, seed=2)) != first
    assert list(DistributedSampler(range(40), 2, 0, shuffle=False)) == list(range(0, 40, 2))


def test_feeds_a_dataloader():
    data = TensorDataset(tg.arange(10.0))
    sampler = DistributedSampler(data, num_replicas=2, rank=1, shuffle=False)
    batches = [b[0].tolist() for b in DataLoader(data, batch_size=2, sampler=sampler)]
    assert batches == [[1.0, 3.0], [5.0, 7.0], [9.0]]


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval "
                                         r"\[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(RuntimeError, match="not initialized"):
        DistributedSampler(range(4))  # no process group in this process
