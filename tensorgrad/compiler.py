"""`torch.compile`, accepted: tensorgrad runs every model eagerly, so compiling returns the
model or function unchanged, after checking the arguments as PyTorch's signature does."""

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, disable=False):
    """Returns `model` itself (a Module or a function), which runs eagerly: there is no graph
    capture and no code generation. Without `model`, returns a decorator, as PyTorch does."""
    if mode not in _MODES:
        raise RuntimeError(f"compile: unrecognized mode={mode!r}; expected one of {_MODES}")
    if mode is not None and options is not None:
        raise RuntimeError("compile: either mode or options can be specified, but both can't "
                           "be specified at the same time")
    if options is not None and not isinstance(options, dict):
        raise RuntimeError(f"compile: options must be a dict, got {type(options).__name__}")
    if not (isinstance(backend, str) or callable(backend)):
        raise RuntimeError(f"compile: backend must be a name or a callable, got {backend!r}")
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise RuntimeError(f"compile: expected a Module or a function, got "
                           f"{type(model).__name__}")
    return model
