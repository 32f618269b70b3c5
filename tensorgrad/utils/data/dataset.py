"""Datasets, as torch.utils.data has them: indexable (map-style) and iterable ones, and the ways
to combine and split them."""
import bisect
import itertools
import math
import warnings

from ... import Tensor, randperm  # tensorgrad's public names (its __init__ imports utils last)


class Dataset:
    """A map-style dataset: `dataset[i]` is one sample; most also define `len(dataset)`.

    Subclasses implement `__getitem__` (and usually `__len__`). `a + b` concatenates two.
    """

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read as a stream (`for sample in dataset`): files, generators, endless data.

    Subclasses implement `__iter__`. A DataLoader batches it in stream order: it cannot be
    shuffled or given a sampler. `a + b` chains two streams.
    """

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples made of the same row of each tensor: `dataset[i] == (x[i], y[i])`.

    tensors: Tensors that all have the same size in dimension 0 (the number of samples).
    """

    def __init__(self, *tensors):
        if not tensors or not all(isinstance(t, Tensor) for t in tensors):
            raise TypeError(f"TensorDataset: expected one or more Tensors, got "
                            f"{[type(t).__name__ for t in tensors]}")
        if any(t.ndim == 0 or t.shape[0] != tensors[0].shape[0] for t in tensors):
            raise ValueError(f"TensorDataset: every tensor needs the same size in dimension 0 "
                             f"(one row per sample), got shapes {[t.shape for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class StackDataset(Dataset):
    """Several datasets of one length side by side: `StackDataset(x, y)[i] == (x[i], y[i])`, or
    with names, `StackDataset(image=x, label=y)[i] == {"image": x[i], "label": y[i]}`."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("StackDataset: pass the datasets either by position (samples are "
                             "tuples) or by name (samples are dicts), not both")
        if not args and not kwargs:
            raise ValueError("StackDataset: at least one dataset should be passed")
        self.datasets = args or kwargs
        lengths = [len(d) for d in (args or kwargs.values())]
        if any(n != lengths[0] for n in lengths):
            raise ValueError(f"StackDataset: the datasets must have one length, got {lengths}")
        self._length = lengths[0]

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {name: d[index] for name, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """Map-style datasets one after the other: indices run through the first, then the next."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset; chain streams "
                                "with ChainDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        if index < 0:
            if -index > len(self):
                raise IndexError(f"ConcatDataset: index {index} is out of range for a dataset "
                                 f"of {len(self)} samples")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


class ChainDataset(IterableDataset):
    """Iterable datasets read one after the other."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only chains IterableDatasets, got "
                                f"{type(d).__name__}")
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order: `subset[i] == dataset[indices[i]]`."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices):
        # The DataLoader asks for a whole batch at once when a dataset can serve one.
        inner = [self.indices[i] for i in indices]
        if hasattr(self.dataset, "__getitems__"):
            return self.dataset.__getitems__(inner)
        return [self.dataset[i] for i in inner]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split `dataset` into non-overlapping random Subsets of the given lengths.

    lengths: sample counts that add up to len(dataset), or fractions that add up to 1 (each
        split gets floor(fraction * len), and the samples left over go one each to the splits
        in turn, as in torch).
    generator: a tensorgrad.Generator for a reproducible split; None draws from the global
        generator (`tg.manual_seed`).
    """
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, fraction in enumerate(lengths):
            if not 0 <= fraction <= 1:
                raise ValueError(f"random_split: fraction at index {i} is {fraction}, not "
                                 "between 0 and 1")
        counts = [math.floor(n * fraction) for fraction in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, count in enumerate(counts):
            if count == 0:
                warnings.warn(f"random_split: length of split at index {i} is 0; this "
                              "results in an empty dataset", stacklevel=2)
        lengths = counts
    if sum(lengths) != n:
        raise ValueError(f"random_split: the lengths {list(lengths)} add up to {sum(lengths)}, "
                         f"but the dataset has {n} samples")
    order = randperm(n, generator=generator, device="cpu").tolist()
    ends = itertools.accumulate(lengths)
    return [Subset(dataset, order[end - length:end]) for end, length in zip(ends, lengths)]
