"""torch.backends.mps: tensorgrad has no backend for Apple's GPUs."""


def is_available():
    return False


def is_built():
    return False
