"""DataLoader: batches from a dataset, in the main process, with torch.utils.data's semantics.

    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True,
                        generator=tg.Generator().manual_seed(0))
    for xb, yb in loader: ...                   # (64, ...) batches; len(loader) batches per epoch

Only `num_workers=0` is supported: samples are loaded in the calling process, one batch at a
time. Worker processes (num_workers > 0) raise NotImplementedError, and the options that only
make sense with them (prefetch_factor, persistent_workers, multiprocessing_context) are refused
as torch refuses them with num_workers=0. `pin_memory` is accepted and has no effect: there is
no page-locked host memory to copy from here.
"""
import itertools

from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler, check_positive_int


def get_worker_info():
    """None: tensorgrad loads data in the main process only (torch returns None there too)."""
    return None


class DataLoader:
    """Iterates over `dataset` in batches.

    dataset: a map-style Dataset (`dataset[i]`, `len`) or an IterableDataset (read in order).
    batch_size: samples per batch; None turns batching off (each sample, converted by
        default_convert, is one step).
    shuffle: a new random order every epoch (map-style datasets only); reproducible with
        `generator` or after `tg.manual_seed`.
    sampler: the order of indices instead of shuffle (any iterable of indices).
    batch_sampler: yields whole lists of indices; excludes batch_size, shuffle, sampler and
        drop_last.
    num_workers: must be 0 (see the module docstring).
    collate_fn: list of samples -> batch; default_collate (stack tensors, convert numbers,
        keep tuples/lists/dicts) when batching, default_convert otherwise.
    drop_last: drop the last batch when it is short.
    generator: a tensorgrad.Generator for the shuffle order.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        _check_single_process(num_workers, timeout, prefetch_factor, persistent_workers,
                              multiprocessing_context)
        self.dataset, self.num_workers, self.generator = dataset, num_workers, generator
        self.pin_memory, self.timeout, self.worker_init_fn = pin_memory, timeout, worker_init_fn
        self.prefetch_factor, self.persistent_workers = prefetch_factor, persistent_workers
        self.pin_memory_device, self.in_order = pin_memory_device, in_order
        self.multiprocessing_context = multiprocessing_context
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            given = {"shuffle": shuffle, "sampler": sampler, "batch_sampler": batch_sampler}
            for name, value in given.items():
                if value is not None and value is not False:  # a stream has its own order
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                     f"{name} option, but got {name}={value!r}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive with "
                                 "batch_size, shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("DataLoader: batch_size=None option disables auto-batching and is "
                             "mutually exclusive with drop_last")
        if sampler is None and not self._iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_size is not None and self._iterable:
            check_positive_int("DataLoader", "batch_size", batch_size)
        elif batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler  # both None for a stream
        self._batching = batch_sampler is not None or (self._iterable and batch_size is not None)
        if collate_fn is None:
            collate_fn = default_collate if self._batching else default_convert
        self.collate_fn = collate_fn

    def __iter__(self):
        if self._iterable:
            return self._stream()
        if self.batch_sampler is None:
            return (self.collate_fn(self.dataset[i]) for i in self.sampler)
        return self._batches()

    def _batches(self):
        fetch_many = getattr(self.dataset, "__getitems__", None)
        for indices in self.batch_sampler:
            samples = fetch_many(indices) if fetch_many else [self.dataset[i] for i in indices]
            yield self.collate_fn(samples)

    def _stream(self):
        samples = iter(self.dataset)
        if not self._batching:
            yield from (self.collate_fn(sample) for sample in samples)
            return
        while batch := list(itertools.islice(samples, self.batch_size)):
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield self.collate_fn(batch)

    def __len__(self):
        """Batches per epoch (samples when batching is off); for an IterableDataset, worked out
        from `len(dataset)`, which must then exist."""
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)


def _check_single_process(num_workers, timeout, prefetch_factor, persistent_workers,
                          multiprocessing_context):
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(f"DataLoader: num_workers option should be a non-negative int; use "
                         f"num_workers=0 to disable multiprocessing, got {num_workers!r}")
    if num_workers > 0:
        raise NotImplementedError(
            f"DataLoader: num_workers={num_workers} asks for worker processes, but tensorgrad "
            f"loads data in the main process only; use num_workers=0")
    if timeout < 0:
        raise ValueError("DataLoader: timeout option should be non-negative")
    if prefetch_factor is not None:
        raise ValueError("DataLoader: prefetch_factor option could only be specified in "
                         "multiprocessing (num_workers > 0), otherwise set it to None")
    if persistent_workers:
        raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
    if multiprocessing_context is not None:
        raise ValueError("DataLoader: multiprocessing_context can only be used with "
                         "multi-process loading (num_workers > 0), but got num_workers=0")
