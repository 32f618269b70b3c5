"""The switches every op reads: grad mode, anomaly detection and the current scope.

Each thread has its own, as in PyTorch: `no_grad` in an inference thread leaves a training
thread recording, a backward walk switches grad mode off only in its own thread, and each
thread's ops are named by its own module path. Ops read `this_thread.switches` once per call;
context managers and modules write it.
"""
import contextlib
import threading


class Switches:
    """One thread's grad mode, anomaly mode and the dotted module path its nodes are named with,
    and nn.Module's {id(module): dotted path} of the root call in progress in this thread (None
    when none is), so two threads running two models name their own nodes.

    A plain slotted object: after the one thread-local lookup that finds it, its attributes
    read at the cost of a global's (op_overhead fwd), which a threading.local's own do not.
    """
    __slots__ = ("grad_enabled", "anomaly", "scope", "inference", "module_paths", "autocast")

    def __init__(self):
        self.grad_enabled = True
        self.anomaly = False
        self.scope = ""
        self.inference = False  # read only by is_inference_mode_enabled
        self.module_paths = None  # read and written by nn.Module.__call__ only
        self.autocast = None  # tensorgrad.amp's casting policy inside an autocast region


class _PerThread(threading.local):
    def __init__(self):  # runs once in each thread, at its first use: a new thread records
        self.switches = Switches()


this_thread = _PerThread()


def thread_switches():
    """The calling thread's Switches: what nn.Module.__call__ reads and writes to name the nodes
    of every op under it by the module's path."""
    return this_thread.switches

# How many threads have anomaly mode on: while none has, an op that records nothing need not
# look up its thread's switches (generate, op_overhead). Changed under the lock: `+=` can race.
anomaly_threads = [0]
_anomaly_lock = threading.Lock()
# How many autocast regions are open, in any thread: while none is, ops skip the check.
autocast_threads = [0]


@contextlib.contextmanager
def autocast_off():
    """No autocast inside (the backward pass: each VJP runs in its forward's dtypes)."""
    switches = this_thread.switches
    previous, switches.autocast = switches.autocast, None
    try:
        yield
    finally:
        switches.autocast = previous


def is_grad_enabled():
    return this_thread.switches.grad_enabled


class _GradMode(contextlib.ContextDecorator):
    def __init__(self, enabled):
        self.enabled = enabled

    def _recreate_cm(self):
        # One switch per decorated call: a shared one would let recursion overwrite `previous`.
        return _GradMode(self.enabled)

    def __enter__(self):
        switches = this_thread.switches
        self.previous, switches.grad_enabled = switches.grad_enabled, self.enabled

    def __exit__(self, *exc):
        this_thread.switches.grad_enabled = self.previous


def no_grad():
    """Context manager and decorator: ops inside record no graph (evaluation, optimizer steps)."""
    return _GradMode(False)


def enable_grad():
    """Context manager and decorator: switch recording back on inside a `no_grad` region."""
    return _GradMode(True)


class inference_mode(_GradMode):
    """Context manager and decorator (`@inference_mode` or `@inference_mode()`): no graph is
    recorded inside, as under `no_grad`, and `is_inference_mode_enabled()` is True.
    `inference_mode(False)` turns it off and recording back on, as in PyTorch.

    A deliberate difference from PyTorch: tensors made inside are ordinary tensors, not
    "inference tensors". PyTorch forbids using those in autograd later or changing them in place
    outside the mode; here they can be, exactly like tensors made under `no_grad` (and there is
    no speed difference between the two modes to gain from the restriction)."""

    def __new__(cls, mode=True):
        if callable(mode):  # used bare as a decorator: @inference_mode
            return cls(True)(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        super().__init__(not mode)
        self.inference = bool(mode)

    def _recreate_cm(self):
        return inference_mode(self.inference)

    def __enter__(self):
        super().__enter__()
        switches = this_thread.switches
        self.previous_inference, switches.inference = switches.inference, self.inference

    def __exit__(self, *exc):
        this_thread.switches.inference = self.previous_inference
        super().__exit__(*exc)


def is_inference_mode_enabled():
    return this_thread.switches.inference


class set_grad_enabled(_GradMode):
    """Switch grad mode at once when called, as in PyTorch; `with` restores it at the end."""

    def __init__(self, mode):
        super().__init__(bool(mode))
        switches = this_thread.switches
        self.previous, switches.grad_enabled = switches.grad_enabled, self.enabled

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
        yield this_thread.switches.scope
    finally:
        set_scope(previous)


def enter_scope(name):
    """`scope` without the context manager: returns the scope to hand back to `set_scope`."""
    switches = this_thread.switches
    previous = switches.scope
    if name.startswith("/"):
        switches.scope = name[1:]
    else:
        switches.scope = f"{previous}.{name}" if previous else name
    return previous


def set_scope(scope):
    """Make `scope`, a full dotted path ("" for none), the current one and return the one it
    replaces: how modules enter their precomputed paths, and how any scope is left again."""
    switches = this_thread.switches
    previous, switches.scope = switches.scope, scope
    return previous


def current_scope():
    return this_thread.switches.scope


def where():
    """' in scope ...' for an error message about an op being run now ('' outside any scope)."""
    scope = this_thread.switches.scope
    return f" in scope '{scope}'" if scope else ""


@contextlib.contextmanager
def _anomaly_mode(enabled):
    switches = this_thread.switches
    previous = switches.anomaly
    _switch_anomaly(switches, enabled)
    try:
        yield
    finally:
        _switch_anomaly(switches, previous)


def _switch_anomaly(switches, enabled):
    if switches.anomaly != enabled:
        with _anomaly_lock:
            anomaly_threads[0] += 1 if enabled else -1
        switches.anomaly = enabled


def detect_anomaly():
    """Raise at the first op (forward) or VJP (backward) whose output holds NaN or Inf."""
    return _anomaly_mode(True)


def check_finite(array, backend, what):
    """detect_anomaly's test of one op's output (forward) or one VJP's gradient (backward)."""
    if array.dtype.kind in "fc" and not bool(backend.isfinite(array).all()):
        bad = "NaN" if bool(backend.isnan(array).any()) else "Inf"
        raise FloatingPointError(f"detect_anomaly: {what} produced {bad} "
                                 f"(shape {tuple(array.shape)}, dtype {array.dtype})")
