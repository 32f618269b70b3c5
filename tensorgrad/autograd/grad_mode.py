"""The switches every op reads: grad mode, anomaly detection and the current scope.

`state` holds all three; ops read it once per call, context managers and modules write it.
"""
import contextlib


class _State:
    """Grad mode, anomaly mode and the dotted module path new nodes are named with.

    The class attributes are the defaults.
    """
    grad_enabled = True
    anomaly = False
    scope = ""


state = _State()


def is_grad_enabled():
    return state.grad_enabled


class _GradMode(contextlib.ContextDecorator):
    def __init__(self, enabled):
        self.enabled = enabled

    def _recreate_cm(self):
        # One switch per decorated call: a shared one would let recursion overwrite `previous`.
        return _GradMode(self.enabled)

    def __enter__(self):
        self.previous, state.grad_enabled = state.grad_enabled, self.enabled

    def __exit__(self, *exc):
        state.grad_enabled = self.previous


def no_grad():
    """Context manager and decorator: ops inside record no graph (evaluation, optimizer steps)."""
    return _GradMode(False)


def enable_grad():
    """Context manager and decorator: switch recording back on inside a `no_grad` region."""
    return _GradMode(True)


class set_grad_enabled(_GradMode):
    """Switch grad mode at once when called, as in PyTorch; `with` restores it at the end."""

    def __init__(self, mode):
        super().__init__(bool(mode))
        self.previous, state.grad_enabled = state.grad_enabled, self.enabled

    def __enter__(self):
        pass  # the call already switched

    def __call__(self, fn):
        self.__exit__()  # as a decorator: undo the switch made when decorating
        return super().__call__(fn)


@contextlib.contextmanager
def scope(name):
    """Name the nodes created inside: `with scope("attn"):` inside `blocks.0` gives `blocks.0.attn`.

    A name starting with '/' replaces the current scope instead of extending it.
    """
    previous = enter_scope(name)
    try:
        yield state.scope
    finally:
        set_scope(previous)


def enter_scope(name):
    """`scope` without the context manager: returns the scope to hand back to `set_scope`."""
    previous = state.scope
    if name.startswith("/"):
        state.scope = name[1:]
    else:
        state.scope = f"{previous}.{name}" if previous else name
    return previous


def set_scope(scope):
    """Make `scope`, a full dotted path ("" for none), the current one and return the one it
    replaces: how modules enter their precomputed paths, and how any scope is left again."""
    previous, state.scope = state.scope, scope
    return previous


def current_scope():
    return state.scope


def where():
    """' in scope ...' for an error message about an op being run now ('' outside any scope)."""
    return f" in scope '{state.scope}'" if state.scope else ""


@contextlib.contextmanager
def _anomaly_mode(enabled):
    previous, state.anomaly = state.anomaly, enabled
    try:
        yield
    finally:
        state.anomaly = previous


def detect_anomaly():
    """Raise at the first op (forward) or VJP (backward) whose output holds NaN or Inf."""
    return _anomaly_mode(True)


def check_finite(array, backend, what):
    """detect_anomaly's test of one op's output (forward) or one VJP's gradient (backward)."""
    if array.dtype.kind in "fc" and not bool(backend.isfinite(array).all()):
        bad = "NaN" if bool(backend.isnan(array).any()) else "Inf"
        raise FloatingPointError(f"detect_anomaly: {what} produced {bad} "
                                 f"(shape {tuple(array.shape)}, dtype {array.dtype})")
