"""Compiled overrides of the reference math in tensorgrad/ops.

ops/ writes each piece of math once, against `xp`, and declares it overridable under a name:
a primitive's forward (`"relu"`), the array step of its VJP (`"relu.vjp"`), or a step of an
algorithm (`"attention.online_step_"`). A backend's compiled code registers against the name:

    @override("relu", supports=floats)       # in backend/kernels/activation.py
    def relu(x): ...

A call of the declared function runs the first override whose `supports(*args, **kwargs)`
accepts the arguments (dtype, layout, sizes), else the reference. An override may still decline
after a closer look by returning NotImplemented. The overrides load with the backend's kernel
package (`xp.kernels(first argument, family=...)`, the CPU backend's Numba kernels, which also
says whether the family's are built for that array's dtype: backend/kernel_loading.py; the
family is the name before the dot), and are only tried on that
backend's arrays; without them (no Numba, TENSORGRAD_NUMBA=0), or on a backend that has none
(CuPy's), the reference runs.
tests/tensorgrad/test_overrides.py runs every registered override against its reference.
"""
import functools

REFERENCES = {}  # name -> the reference function, as declared in ops/ (first argument xp)
OVERRIDES = {}  # name -> [Override], in the order registered


class Override:
    __slots__ = ("name", "supports", "run")

    def __init__(self, name, supports, run):
        self.name, self.supports, self.run = name, supports, run

    def __repr__(self):
        return f"<override {self.name}: {self.run.__module__}.{self.run.__qualname__}>"


def overridable(name):
    """Declare the function below, `reference(xp, array, *args, **kwargs)`, as the math `name`
    that a backend's compiled code may override."""
    def declare(reference):
        if name in REFERENCES:
            raise ValueError(f"overridable {name!r} declared twice")
        REFERENCES[name] = reference
        candidates = OVERRIDES.setdefault(name, [])
        family = name.split(".")[0]  # built together: "layer_norm" and "layer_norm.vjp"

        @functools.wraps(reference)
        def dispatch(xp, *args, **kwargs):
            if xp.kernels(args[0], family=family) is not None:  # built for args[0]'s dtype
                for candidate in candidates:
                    if candidate.supports(*args, **kwargs):
                        out = candidate.run(*args, **kwargs)
                        if out is not NotImplemented:
                            return out
            return reference(xp, *args, **kwargs)
        dispatch.reference = reference
        return dispatch
    return declare


def override(name, supports):
    """Register the function below as a compiled override of the math `name`, run (with the
    reference's arguments, less xp) when `supports(*args, **kwargs)` is true."""
    def register(run):
        OVERRIDES.setdefault(name, []).append(Override(name, supports, run))
        return run
    return register
