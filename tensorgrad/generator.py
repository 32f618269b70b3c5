"""tensorgrad.Generator: a random number generator of its own, as torch.Generator.

    g = tg.Generator().manual_seed(0)
    tg.randperm(10, generator=g)            # the same permutation after every manual_seed(0)
    DataLoader(data, shuffle=True, generator=g)

Creation functions given no generator draw from their device's global generator, which
`tg.manual_seed` seeds; a Generator leaves that stream alone. The random numbers themselves come
from the device's backend (NumPy's or CuPy's own generators), so tensorgrad draws other numbers
than PyTorch for the same seed.
"""
import operator
import os

from . import backend as _backends

# A fresh torch.Generator starts from this fixed seed (not from the clock); so does ours.
DEFAULT_SEED = 67280421310721
_SEED_RANGE = (-2**63, 2**64)  # torch's: a negative seed stands for 2**64 + seed


class Generator:
    """A seeded random number generator on one device ("cpu" by default, or "cuda:N")."""

    def __init__(self, device="cpu"):
        self.device = _backends.normalize_device(device)
        self._backend = _backends.get_backend(self.device)
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed):
        """Restart the stream from `seed` (an int in [-2**63, 2**64)); returns the generator."""
        try:
            seed = operator.index(seed)  # ints and NumPy integers; floats are refused, as in torch
        except TypeError:
            raise TypeError(f"Generator.manual_seed: expected an int seed, got "
                            f"{type(seed).__name__}") from None
        if not _SEED_RANGE[0] <= seed < _SEED_RANGE[1]:
            raise ValueError(f"Generator.manual_seed: seed {seed} is outside [-2**63, 2**64)")
        self._initial_seed = seed % 2**64
        self._rng = self._backend.new_rng(self._initial_seed)
        return self

    def seed(self):
        """Reseed from the operating system's entropy (not reproducible); returns the new seed."""
        seed = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(seed)
        return seed

    def initial_seed(self):
        """The seed the stream last started from (a negative seed reads as 2**64 + seed)."""
        return self._initial_seed

    def __repr__(self):
        return f"Generator(device={self.device!r}, initial_seed={self._initial_seed})"


def rng_for(generator, backend, op):
    """The backend generator `op` draws from: the Generator's, or None for the device's global
    one. A Generator on another device than the tensor being made is an error, as in torch."""
    if generator is None:
        return None
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}: generator must be a tensorgrad.Generator, got "
                        f"{type(generator).__name__}")
    if generator.device != backend.device:
        raise ValueError(f"{op}: the generator is on {generator.device} but the tensor is made "
                         f"on {backend.device}; create the Generator with "
                         f"device={backend.device!r}")
    return generator._rng
