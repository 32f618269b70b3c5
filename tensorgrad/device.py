"""tensorgrad.device: a device name with torch.device's attributes."""
from . import backend as _backends


class device(str):
    """A device, as torch.device: `device("cuda")`, `device("cuda", 1)`, `x.device.type`,
    `x.device.index`. It is the normalised device string itself ('cpu', 'cuda:0'), so it
    compares equal to the strings used everywhere. A deliberate difference: `device("cuda")` is
    cuda:0 here (index 0), where PyTorch leaves the index None (the current device)."""

    __slots__ = ()

    def __new__(cls, type, index=None):
        if index is not None:
            if ":" in str(type):
                raise ValueError(f"device: type {type!r} already names an index")
            type = f"{type}:{index}"
        return super().__new__(cls, _backends.normalize_device(type))

    @property
    def type(self):
        return str(self).partition(":")[0]  # a plain str: partition keeps the subclass

    @property
    def index(self):
        _, _, index = self.partition(":")
        return int(index) if index else None

    def __repr__(self):
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"

    def __reduce__(self):
        return device, (str(self),)
