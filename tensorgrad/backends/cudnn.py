"""torch.backends.cudnn: tensorgrad never calls cuDNN, so it is not available and its flags,
kept so that scripts setting them run, change nothing."""
enabled = True
benchmark = False  # tensorgrad picks no kernels by timing them
deterministic = False  # read by scripts; tensorgrad has no nondeterministic kernels to switch off
allow_tf32 = False  # no TF32: float32 matmuls are float32


def is_available():
    return False


def version():
    """None, as torch answers when it is built without cuDNN."""
    return None
