"""Putting samples together into a batch, with torch's default_collate rules.

    default_collate([(x0, 0), (x1, 1)])       -> [stack([x0, x1]), tensor([0, 1])]
    default_collate([{"a": 1.5}, {"a": 2.5}]) -> {"a": tensor([1.5, 2.5], dtype=float64)}

Tensors are stacked along a new first dimension; Python ints become an int64 tensor (bools a
bool one) and floats a float64 one (torch's choice, not float32); NumPy arrays and scalars become
tensors of their own dtype; strings stay a list. Tuples, lists, dicts and namedtuples are
collated field by field, keeping their structure (a tuple comes back as a list, as in torch).
"""
import collections.abc
import copy

from ... import Tensor, as_tensor, float64, stack, tensor

_NOT_COLLATABLE = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                   "or lists; found {}")


def _is_numpy(x):
    # NumPy arrays and scalars by their type's module: utils never imports numpy itself.
    return type(x).__module__.split(".")[0] == "numpy" and hasattr(x, "dtype")


def default_collate(batch):
    """One batch from a list of samples (see the module docstring for the rules)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        for i, t in enumerate(batch):
            if t.shape != elem.shape:
                raise RuntimeError(f"default_collate: stack expects each tensor to be equal "
                                   f"size, but got {elem.shape} at entry 0 and {t.shape} at "
                                   f"entry {i}")
        return stack(batch, 0)
    if _is_numpy(elem):
        if elem.dtype.kind in "SUOV":  # strings, objects, records: no tensor holds them
            raise TypeError(_NOT_COLLATABLE.format(elem.dtype))
        return default_collate([as_tensor(b, dtype=b.dtype) for b in batch])
    if isinstance(elem, float):
        return tensor(batch, dtype=float64)
    if isinstance(elem, int):  # bool included: a batch of bools is a bool tensor
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        fields = {key: default_collate([sample[key] for sample in batch]) for key in elem}
        try:  # keep the mapping's own type (an OrderedDict, a user dict class) where it can
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(fields)
                return clone
            return type(elem)(fields)
        except TypeError:
            return fields
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(default_collate(list(field)) for field in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("default_collate: each element in list of batch should be of "
                               f"equal size, got sizes {[len(sample) for sample in batch]}")
        fields = [default_collate(list(field)) for field in zip(*batch)]
        if isinstance(elem, tuple):
            return fields
        try:
            return type(elem)(fields)
        except TypeError:
            return fields
    raise TypeError(_NOT_COLLATABLE.format(type(elem)))


def default_convert(data):
    """What a DataLoader without batching (`batch_size=None`) does to each sample: NumPy arrays
    become tensors, containers are walked; nothing is stacked."""
    if isinstance(data, Tensor):
        return data
    if _is_numpy(data):
        return data if data.dtype.kind in "SUOV" else as_tensor(data, dtype=data.dtype)
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        fields = {key: default_convert(data[key]) for key in data}
        try:
            return type(data)(fields)
        except TypeError:
            return fields
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
