"""Variable-length batches for the recurrent layers, as torch.nn.utils.rnn.

A PackedSequence holds the non-padding steps of a batch of sequences, time-major: first the
first step of every sequence, then the second step of those at least two long, and so on, the
sequences sorted by length, longest first. `batch_sizes[t]` is how many sequences have a step t.
An RNN, LSTM or GRU given one runs each sequence exactly to its length.

    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, h_n = lstm(packed)                          # h_n: each sequence's own last state
    out, lengths = pad_packed_sequence(out, batch_first=True)
"""
from typing import NamedTuple

import tensorgrad as tg
from tensorgrad import Tensor

from .. import functional as F

__all__ = ["PackedSequence", "pack_padded_sequence", "pack_sequence", "pad_packed_sequence",
           "pad_sequence"]


class PackedSequence(NamedTuple):
    """data: (sum of lengths, *) the steps, time-major; batch_sizes: (T,) int64 on the CPU;
    sorted_indices: the batch index of each sorted position (None when the input was sorted);
    unsorted_indices: its inverse."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor = None
    unsorted_indices: Tensor = None

    def to(self, *args, **kwargs):
        """The data moved or cast as Tensor.to; batch_sizes stay on the CPU, as in torch."""
        data = self.data.to(*args, **kwargs)
        indices = [None if i is None else i.to(data.device)
                   for i in (self.sorted_indices, self.unsorted_indices)]
        return PackedSequence(data, self.batch_sizes, *indices)

    @property
    def is_cuda(self):
        return self.data.is_cuda


def _lengths_list(lengths, op):
    lengths = lengths.tolist() if isinstance(lengths, Tensor) else [int(n) for n in lengths]
    if not lengths or min(lengths) <= 0:
        raise RuntimeError(f"{op}: every length must be positive, got {lengths}")
    return lengths


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch. input: (T, B, *) or (B, T, *) with batch_first; lengths: B ints
    (a list or a CPU tensor), sorted longest first unless enforce_sorted=False."""
    op = "pack_padded_sequence"
    lengths = _lengths_list(lengths, op)
    if batch_first:
        input = input.transpose(0, 1)  # (T, B, *)
    T, B = input.shape[0], input.shape[1]
    if len(lengths) != B or max(lengths) > T:
        raise RuntimeError(f"{op}: expected {B} lengths of at most {T} (the input is "
                           f"{tuple(input.shape)}, batch_first={batch_first}), got {lengths}")
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError(f"{op}: `lengths` must be sorted in decreasing order when "
                               f"`enforce_sorted` is True, got {lengths}; pass "
                               "enforce_sorted=False to have them sorted")
        order = list(range(B))
        sorted_indices = unsorted_indices = None
    else:
        order = sorted(range(B), key=lambda b: -lengths[b])  # stable: ties keep batch order
        sorted_indices = tg.tensor(order, dtype=tg.int64, device=input.device)
        unsorted_indices = tg.tensor(_inverse(order), dtype=tg.int64, device=input.device)
    batch_sizes = [sum(n > t for n in lengths) for t in range(max(lengths))]
    rows = [t * B + order[i] for t, size in enumerate(batch_sizes) for i in range(size)]
    data = input.reshape(T * B, *input.shape[2:])[tg.tensor(rows, device=input.device)]
    return PackedSequence(data, tg.tensor(batch_sizes, dtype=tg.int64), sorted_indices,
                          unsorted_indices)


def _inverse(order):
    inverse = [0] * len(order)
    for position, b in enumerate(order):
        inverse[b] = position
    return inverse


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo pack_padded_sequence: returns (padded (T, B, *) or (B, T, *), lengths (B,) int64),
    in the original batch order. total_length pads T further (to undo packing a longer batch)."""
    data, batch_sizes = sequence.data, sequence.batch_sizes.tolist()
    B, T = batch_sizes[0], len(batch_sizes)
    if total_length is not None:
        if total_length < T:
            raise ValueError(f"pad_packed_sequence: total_length ({total_length}) must be at "
                             f"least the longest sequence ({T})")
        T = total_length
    order = list(range(B)) if sequence.sorted_indices is None \
        else sequence.sorted_indices.tolist()
    rank = _inverse(order)  # the sorted position of each batch entry
    lengths = [sum(size > rank[b] for size in batch_sizes) for b in range(B)]
    starts = [0]
    for size in batch_sizes:
        starts.append(starts[-1] + size)
    pad_row = data.shape[0]  # one padding row appended after the data
    rows = [starts[t] + rank[b] if t < lengths[b] else pad_row for t in range(T) for b in range(B)]
    padding = tg.full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    padded = tg.cat([data, padding])[tg.tensor(rows, device=data.device)]
    padded = padded.reshape(T, B, *data.shape[1:])  # (T, B, *)
    if batch_first:
        padded = padded.transpose(0, 1)  # (B, T, *)
    return padded, tg.tensor(lengths, dtype=tg.int64)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shapes (L_i, *) into (max L, B, *) (or (B, max L, *) with batch_first),
    padding each at its end (padding_side="right") or its start ("left")."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'right' or 'left', got "
                         f"{padding_side!r}")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    trailing = sequences[0].shape[1:]
    if any(s.shape[1:] != trailing for s in sequences):
        raise RuntimeError(f"pad_sequence: every sequence must have the trailing shape "
                           f"{tuple(trailing)}, got {[tuple(s.shape) for s in sequences]}")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = (0, longest - s.shape[0]) if padding_side == "right" \
            else (longest - s.shape[0], 0)
        # F.pad's widths run from the last dim backwards: leave the trailing dims alone
        widths = (0, 0) * len(trailing) + missing
        padded.append(F.pad(s, widths, value=padding_value))
    return tg.stack(padded, dim=0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors (L_i, *): pad_sequence, then pack_padded_sequence."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)
