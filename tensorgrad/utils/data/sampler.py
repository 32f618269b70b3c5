"""Samplers: the order in which a DataLoader visits a map-style dataset's indices, and how it
groups them into batches (torch.utils.data's classes and semantics)."""
import bisect
import itertools
import math

from ... import Generator, rand, randint, randperm


class Sampler:
    """Yields dataset indices (or, for a batch sampler, lists of them). Subclasses implement
    `__iter__` and, when the count is known, `__len__`."""

    def __init__(self, data_source=None):
        pass  # torch's signature; a sampler that needs the dataset keeps it itself

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


def check_positive_int(owner, name, value):
    """torch's check on batch sizes and sample counts (a bool is no count)."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{owner}: {name} should be a positive integer value, but got "
                         f"{name}={value!r}")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _generator_or_fresh(generator):
    """The sampler's generator, else a new one seeded from the global stream, as torch does: one
    draw per epoch, so `tg.manual_seed` makes a whole run reproducible and epochs still differ."""
    if generator is not None:
        return generator
    return Generator().manual_seed(int(randint(0, 2**63 - 1, (), device="cpu").item()))


class RandomSampler(Sampler):
    """Indices in random order: a fresh permutation per epoch, or draws with replacement.

    replacement: draw each index independently (samples may repeat), else permute.
    num_samples: how many indices per epoch (default len(data_source)); without replacement a
        count above the length runs through several permutations.
    generator: a tensorgrad.Generator for a reproducible order.
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement should be a boolean value, but got "
                            f"replacement={replacement!r}")
        self.data_source, self.replacement = data_source, replacement
        self._num_samples, self.generator = num_samples, generator
        check_positive_int("RandomSampler", "num_samples", self.num_samples)

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, generator = len(self.data_source), _generator_or_fresh(self.generator)
        if self.replacement:
            # In chunks of 32, as torch, so a partly read epoch does not draw them all.
            for start in range(0, self.num_samples, 32):
                size = min(32, self.num_samples - start)
                yield from randint(0, n, (size,), generator=generator, device="cpu").tolist()
            return
        for _ in range(self.num_samples // n):
            yield from randperm(n, generator=generator, device="cpu").tolist()
        yield from randperm(n, generator=generator, device="cpu").tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a random order each epoch."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = indices, generator

    def __iter__(self):
        order = randperm(len(self.indices), generator=self.generator, device="cpu").tolist()
        return (self.indices[i] for i in order)

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probability proportional to `weights` (an index of
    weight 0 never comes up); without replacement each index comes up at most once."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        check_positive_int("WeightedRandomSampler", "num_samples", num_samples)
        if not isinstance(replacement, bool):
            raise ValueError(f"WeightedRandomSampler: replacement should be a boolean value, "
                             f"but got replacement={replacement!r}")
        weights = [float(w) for w in (weights.tolist() if hasattr(weights, "tolist")
                                      else weights)]
        if not weights or min(weights) < 0 or not math.isfinite(sum(weights)) \
                or sum(weights) == 0:
            raise ValueError("WeightedRandomSampler: weights must be finite, non-negative and "
                             "not all zero")
        if not replacement and num_samples > sum(w > 0 for w in weights):
            raise ValueError(f"WeightedRandomSampler: cannot draw {num_samples} samples without "
                             f"replacement from {sum(w > 0 for w in weights)} non-zero weights")
        self.weights, self.num_samples = weights, num_samples
        self.replacement, self.generator = replacement, generator

    def __iter__(self):
        u = rand(self.num_samples if self.replacement else len(self.weights), dtype="float64",
                 generator=self.generator, device="cpu").tolist()
        if self.replacement:  # invert the cumulative distribution at each uniform draw
            cumulative = list(itertools.accumulate(self.weights))
            total = cumulative[-1]
            last = max(i for i, w in enumerate(self.weights) if w > 0)
            return iter([min(bisect.bisect_right(cumulative, x * total), last) for x in u])
        # Without replacement: the num_samples largest keys u ** (1 / w) (Efraimidis and
        # Spirakis), the same distribution as drawing one at a time and removing it.
        keys = [(math.log(x) / w if w > 0 else -math.inf) if x > 0 else -math.inf
                for x, w in zip(u, self.weights)]
        order = sorted(range(len(keys)), key=keys.__getitem__, reverse=True)
        return iter(order[:self.num_samples])

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of `batch_size`; the last one is shorter
    unless `drop_last` drops it."""

    def __init__(self, sampler, batch_size, drop_last):
        check_positive_int("BatchSampler", "batch_size", batch_size)
        if not isinstance(drop_last, bool):
            raise ValueError(f"BatchSampler: drop_last should be a boolean value, but got "
                             f"drop_last={drop_last!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        indices = iter(self.sampler)
        while batch := list(itertools.islice(indices, self.batch_size)):
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return -(-len(self.sampler) // self.batch_size)
