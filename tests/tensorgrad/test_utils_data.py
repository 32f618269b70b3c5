"""tensorgrad.utils.data against torch.utils.data: batch shapes and values, collate structure,
lengths with drop_last, samplers, splits; shuffles reproducible with a seeded Generator."""
import collections
import contextlib
import itertools

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.utils.data import (
    BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset, IterableDataset,
    RandomSampler, SequentialSampler, StackDataset, Subset, SubsetRandomSampler, TensorDataset,
    WeightedRandomSampler, default_collate, default_convert, get_worker_info, random_split,
)

Point = collections.namedtuple("Point", "x y")


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def plain(batch):
    """A batch of either framework as comparable Python values: tensors become (shape, dtype,
    values), containers keep their type, so a tuple where torch gives a list shows up."""
    if isinstance(batch, tg.Tensor) or type(batch).__name__ == "Tensor":
        return ("tensor", tuple(batch.shape), str(batch.dtype).replace("torch.", ""),
                batch.tolist())
    if isinstance(batch, dict):
        return {key: plain(value) for key, value in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(*map(plain, batch)) if hasattr(batch, "_fields") else \
            type(batch)(map(plain, batch))
    return batch


class Squares(Dataset):
    """dataset[i] = {"x": (float, [int, bool]), "name": str}: every kind default_collate meets."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return {"x": (i * 0.5, [i * i, i % 2 == 0]), "name": f"s{i}"}

    def __len__(self):
        return self.n


class Stream(IterableDataset):
    def __init__(self, n, with_len=True):
        self.n, self.with_len = n, with_len

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        if not self.with_len:
            raise TypeError("a stream of unknown length")
        return self.n


# --- default_collate ----------------------------------------------------------------------------
SAMPLES = {
    "tensors": [tg.arange(6).reshape(2, 3) * i for i in range(3)],
    "ints": [1, 2, 3],
    "floats": [0.5, 1.5],                       # float64, as torch
    "bools": [True, False],
    "strings": ["a", "b"],
    "tuples": [(1, 2.0), (3, 4.0)],             # come back as a list
    "lists": [[1, 2], [3, 4]],
    "nested dicts": [{"a": {"b": (1, [2.5])}, "c": "x"}, {"a": {"b": (3, [4.5])}, "c": "y"}],
    "namedtuples": [Point(1, 2.0), Point(3, 4.0)],
    "numpy arrays": [np.ones((2,), np.float64), np.zeros((2,), np.float64)],
    "numpy scalars": [np.int32(3), np.int32(4)],
    "numpy float64 scalars": [np.float64(1.5), np.float64(2.5)],
}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_default_collate_matches_torch(kind, torch):
    from torch.utils.data import default_collate as torch_collate

    def to_torch(x):  # the same sample for torch: tensors converted, the rest as is
        if isinstance(x, tg.Tensor):
            return torch.tensor(x.tolist())
        if isinstance(x, dict):
            return {k: to_torch(v) for k, v in x.items()}
        return x
    batch = SAMPLES[kind]
    assert plain(default_collate(batch)) == plain(torch_collate([to_torch(b) for b in batch]))


def test_default_collate_values_and_errors():
    stacked = default_collate(SAMPLES["tensors"])
    assert stacked.shape == (3, 2, 3) and stacked[2].tolist() == [[0, 2, 4], [6, 8, 10]]
    assert default_collate([0.5, 1.5]).dtype == tg.float64
    assert default_collate([np.ones(2, np.float32)]).dtype == tg.float32
    with pytest.raises(RuntimeError, match=r"equal size, but got \(2,\) at entry 0 and \(3,\) at "
                                           "entry 1"):
        default_collate([tg.zeros(2), tg.zeros(3)])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="batch must contain tensors.*found <class 'object'>"):
        default_collate([object()])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"])])


def test_default_convert_leaves_structure_and_converts_arrays(torch):
    from torch.utils.data import default_convert as torch_convert
    sample = {"x": np.arange(3), "y": (1, "a"), "p": Point(np.float64(1.5), 2)}
    assert plain(default_convert(sample)) == plain(torch_convert(sample))


# --- DataLoader against torch's -----------------------------------------------------------------
@pytest.mark.parametrize("batch_size, drop_last", [(1, False), (3, False), (3, True), (4, True),
                                                   (10, False), (11, True), (11, False)])
def test_sequential_batches_match_torch(batch_size, drop_last, torch):
    from torch.utils.data import DataLoader as TorchLoader
    ours = DataLoader(Squares(10), batch_size=batch_size, drop_last=drop_last)
    theirs = TorchLoader(Squares(10), batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    assert [plain(b) for b in ours] == [plain(b) for b in theirs]


def test_tensor_dataset_batches_and_len(torch):
    x, y = tg.randn(10, 3), tg.arange(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    shapes = [(xb.shape, yb.shape) for xb, yb in loader]
    assert shapes == [((4, 3), (4,)), ((4, 3), (4,)), ((2, 3), (2,))]
    assert tg.cat([xb for xb, _ in loader]).tolist() == x.tolist()
    from torch.utils.data import DataLoader as TorchLoader, TensorDataset as TorchTD
    for n, bs, drop in itertools.product((0, 1, 7, 8), (1, 3, 8), (False, True)):
        data = TensorDataset(tg.zeros(n, 2))
        assert len(DataLoader(data, batch_size=bs, drop_last=drop)) == \
            len(TorchLoader(TorchTD(torch.zeros(n, 2)), batch_size=bs, drop_last=drop))
        assert len(list(DataLoader(data, batch_size=bs, drop_last=drop))) == \
            len(DataLoader(data, batch_size=bs, drop_last=drop))


def shuffled(loader):
    return [i for _, yb in loader for i in yb.tolist()]


def test_shuffle_with_a_generator_is_a_reproducible_permutation():
    data = TensorDataset(tg.zeros(50, 1), tg.arange(50))
    make = lambda seed: DataLoader(data, batch_size=8, shuffle=True,  # noqa: E731
                                   generator=tg.Generator().manual_seed(seed))
    first, again = make(0), make(0)
    epochs = [shuffled(first) for _ in range(3)]
    assert all(sorted(e) == list(range(50)) for e in epochs) and epochs[0] != list(range(50))
    assert [shuffled(again) for _ in range(3)] == epochs  # same seed, same orders
    assert epochs[0] != epochs[1] != epochs[2]            # each epoch a new order
    assert shuffled(make(1)) != epochs[0]                 # another seed, another order


def test_shuffle_without_a_generator_follows_manual_seed():
    data = TensorDataset(tg.zeros(30, 1), tg.arange(30))
    tg.manual_seed(7)
    first = [shuffled(DataLoader(data, batch_size=4, shuffle=True)) for _ in range(2)]
    tg.manual_seed(7)
    second = [shuffled(DataLoader(data, batch_size=4, shuffle=True)) for _ in range(2)]
    assert first == second and first[0] != first[1]


def test_batching_off_collate_fn_sampler_and_batch_sampler():
    data = TensorDataset(tg.arange(6) * 10)
    assert [t.tolist() for (t,) in DataLoader(data, batch_size=None)] == [0, 10, 20, 30, 40, 50]
    assert len(DataLoader(data, batch_size=None)) == 6
    loader = DataLoader(data, batch_size=2, collate_fn=lambda samples: len(samples))
    assert list(loader) == [2, 2, 2]
    picked = DataLoader(data, batch_size=2, sampler=[5, 0, 3])
    assert [b.tolist() for (b,) in picked] == [[50, 0], [30]] and len(picked) == 2
    groups = DataLoader(data, batch_sampler=[[1, 2, 3], [4]])
    assert [b.tolist() for (b,) in groups] == [[10, 20, 30], [40]]
    assert loader.num_workers == 0 and get_worker_info() is None


def test_iterable_datasets_batch_in_stream_order(torch):
    from torch.utils.data import DataLoader as TorchLoader, IterableDataset as TorchIterable

    class TorchStream(TorchIterable):
        def __iter__(self):
            return iter(range(7))

        def __len__(self):
            return 7
    for bs, drop in [(3, False), (3, True), (None, False), (7, True), (8, False)]:
        ours, theirs = DataLoader(Stream(7), bs, drop_last=drop), TorchLoader(TorchStream(),
                                                                              bs, drop_last=drop)
        assert [plain(b) for b in ours] == [plain(b) for b in theirs]
        assert len(ours) == len(theirs)
    with pytest.raises(TypeError, match="unknown length"):
        len(DataLoader(Stream(3, with_len=False), batch_size=2))
    assert [b.tolist() for b in DataLoader(Stream(2) + Stream(3), batch_size=2)] == \
        [[0, 1], [0, 1], [2]]


def test_bad_options_are_refused_clearly():
    data = TensorDataset(tg.zeros(4))
    with pytest.raises(NotImplementedError, match="num_workers=2.*main process only.*"
                                                  "num_workers=0"):
        DataLoader(data, num_workers=2)
    with pytest.raises(ValueError, match="non-negative"):
        DataLoader(data, num_workers=-1)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(data, shuffle=True, sampler=[0, 1])
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(data, batch_size=2, batch_sampler=[[0, 1]])
    with pytest.raises(ValueError, match="batch_size=None option disables auto-batching"):
        DataLoader(data, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="batch_size should be a positive integer.*=0"):
        DataLoader(Stream(3), batch_size=0)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(data, persistent_workers=True)
    with pytest.raises(ValueError, match="prefetch_factor"):
        DataLoader(data, prefetch_factor=2)
    with pytest.raises(ValueError, match="num_samples should be a positive integer.*=0"):
        DataLoader(TensorDataset(tg.zeros(0)), shuffle=True)
    DataLoader(data, pin_memory=True, timeout=0, worker_init_fn=print)  # accepted, no effect


# --- samplers ----------------------------------------------------------------------------------
def test_samplers_lengths_and_orders_match_torch(torch):
    import torch.utils.data as tud
    data = list(range(10))
    assert list(SequentialSampler(data)) == list(tud.SequentialSampler(data))
    for bs, drop in itertools.product((1, 3, 10, 12), (False, True)):
        ours, theirs = BatchSampler(range(10), bs, drop), tud.BatchSampler(range(10), bs, drop)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    for replacement, n in [(False, None), (False, 25), (False, 3), (True, None), (True, 70)]:
        ours = RandomSampler(data, replacement, n, generator=tg.Generator().manual_seed(0))
        theirs = tud.RandomSampler(data, replacement, n)
        drawn = list(ours)
        assert len(ours) == len(theirs) == len(drawn) and set(drawn) <= set(data)
        if not replacement and n is not None and n >= 10:  # full permutations, then a part
            assert sorted(drawn[:10]) == data and sorted(drawn[10:20]) == data
    g = tg.Generator().manual_seed(0)
    assert list(RandomSampler(data, generator=g)) != list(RandomSampler(data, generator=g))
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(data, replacement=1)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(data, 0, False)


def test_subset_and_weighted_samplers():
    g = tg.Generator().manual_seed(3)
    picked = list(SubsetRandomSampler([10, 20, 30], generator=g))
    assert sorted(picked) == [10, 20, 30]
    weights = [0.0, 1.0, 3.0, 0.0]
    draws = list(WeightedRandomSampler(weights, 4000, generator=g))
    counts = collections.Counter(draws)
    assert set(counts) == {1, 2} and 2.6 < counts[2] / counts[1] < 3.4
    unique = list(WeightedRandomSampler([1, 5, 0, 2], 3, replacement=False, generator=g))
    assert sorted(unique) == [0, 1, 3]
    with pytest.raises(ValueError, match="cannot draw 4 samples without replacement from 3"):
        WeightedRandomSampler([1, 5, 0, 2], 4, replacement=False)
    with pytest.raises(ValueError, match="non-negative and not all zero"):
        WeightedRandomSampler([0, 0], 1)


# --- datasets and splits -----------------------------------------------------------------------
def test_tensor_subset_and_concat_datasets():
    x, y = tg.arange(12).reshape(6, 2), tg.arange(6)
    data = TensorDataset(x, y)
    assert len(data) == 6 and [t.tolist() for t in data[4]] == [[8, 9], 4]
    with pytest.raises(ValueError, match=r"same size in dimension 0.*\(6, 2\), \(5,\)"):
        TensorDataset(x, tg.arange(5))
    sub = Subset(data, [5, 1])
    assert len(sub) == 2 and sub[0][1].item() == 5 and sub[[1, 0]][1].tolist() == [1, 5]
    both = data + Subset(data, [0])
    assert isinstance(both, ConcatDataset) and len(both) == 7
    assert both[6][1].item() == 0 and both[-1][1].item() == 0 and both[5][1].item() == 5
    with pytest.raises(IndexError):
        both[-8]
    with pytest.raises(TypeError, match="does not support IterableDataset"):
        ConcatDataset([Stream(2)])
    assert list(ChainDataset([Stream(2), Stream(1)])) == [0, 1, 0]
    with pytest.raises(NotImplementedError, match="must implement __getitem__"):
        Dataset()[0]


def test_stack_dataset_matches_torch(torch):
    from torch.utils.data import StackDataset as TorchStack
    x, y = [1.5, 2.5, 3.5], [0, 1, 0]
    for ours, theirs in [(StackDataset(x, y), TorchStack(x, y)),
                         (StackDataset(image=x, label=y), TorchStack(image=x, label=y))]:
        assert len(ours) == len(theirs) == 3 and ours[2] == theirs[2]
        assert plain(next(iter(DataLoader(ours, batch_size=3)))) == \
            plain(next(iter(torch.utils.data.DataLoader(theirs, batch_size=3))))
    with pytest.raises(ValueError, match="one length, got \\[3, 2\\]"):
        StackDataset(x, y[:2])
    with pytest.raises(ValueError, match="not both"):
        StackDataset(x, label=y)


def test_random_split_by_counts_and_fractions(torch):
    from torch.utils.data import random_split as torch_split
    data = list(range(10))
    for lengths in ([3, 7], [0.3, 0.7], [0.33, 0.33, 0.34], [0.5, 0.5, 0.0]):
        empty_split = 0.0 in lengths  # torch warns about it; so do we
        with pytest.warns(UserWarning) if empty_split else contextlib.nullcontext():
            parts = random_split(data, lengths, generator=tg.Generator().manual_seed(0))
        with pytest.warns(UserWarning) if empty_split else contextlib.nullcontext():
            expected = torch_split(data, lengths)
        assert [len(p) for p in parts] == [len(p) for p in expected]
        assert sorted(i for p in parts for i in p) == data  # disjoint, and all of it
    again = random_split(data, [5, 5], generator=tg.Generator().manual_seed(0))
    assert [list(p) for p in again] == [list(p) for p in
                                        random_split(data, [5, 5],
                                                     generator=tg.Generator().manual_seed(0))]
    with pytest.raises(ValueError, match=r"add up to 9, but the dataset has 10 samples"):
        random_split(data, [4, 5])


def test_reachable_after_importing_tensorgrad():
    assert tg.utils.data.DataLoader is DataLoader
