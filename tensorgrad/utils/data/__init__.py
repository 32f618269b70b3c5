"""tensorgrad.utils.data: datasets, samplers and the DataLoader, with torch.utils.data's names
and semantics (single-process loading only: num_workers=0).

    from tensorgrad.utils.data import DataLoader, TensorDataset, random_split
    g = tg.Generator().manual_seed(0)
    train, val = random_split(TensorDataset(x, y), [0.9, 0.1], generator=g)
    for xb, yb in DataLoader(train, batch_size=32, shuffle=True, generator=g): ...
"""
from .collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (
    ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
    "IterableDataset",
    "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
    "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "default_collate",
    "default_convert", "get_worker_info", "random_split",
]
