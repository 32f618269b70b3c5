"""Modules Numba imports as it starts but a run that loads its kernels never uses: their code
runs at their first use instead.

Numba imports PyYAML to read a `.numba_config.yaml` from the working directory, which it does
only when there is one, and `importlib.metadata` to look for Numba extensions, which it does
before it compiles. A warm run loads every kernel from the disk cache (kernels/disk_cache.py)
and does neither, yet paid for both imports in its first step (benchmarks/README.md:
cold_start, warm cache). So `defer()`, called before Numba starts, puts each in sys.modules as
a module whose code has not run yet: `import yaml` still works where PyYAML is installed (and
fails where it is not), and the first attribute asked of it runs the module, as the import would
have. A thread that asks while another runs it waits for it; the module's own code, running,
sees itself partly built, as during any import.
"""
import importlib.machinery
import importlib.util
import sys
import threading
import types

NAMES = ("yaml", "importlib.metadata")
_lock = threading.RLock()
_running = set()  # the modules whose code runs now, on the thread that holds _lock


class _NotRunYet(types.ModuleType):
    """A module whose code runs at the first attribute asked of it that it does not have."""

    def __getattr__(self, name):
        with _lock:
            if type(self) is _NotRunYet and self.__name__ not in _running:
                _running.add(self.__name__)
                try:
                    self.__spec__.loader.exec_module(self)
                except BaseException:
                    if sys.modules.get(self.__name__) is self:  # as a failed import leaves it
                        del sys.modules[self.__name__]
                    raise
                finally:
                    _running.discard(self.__name__)
                self.__class__ = types.ModuleType
        return types.ModuleType.__getattribute__(self, name)


def defer(names=NAMES):
    """Each module of `names` not imported yet and written in Python, put in sys.modules (and on
    its package) with its code not run."""
    for name in names:
        if name in sys.modules:
            continue
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            continue  # not installed (its import fails as before), or not plain Python
        module = importlib.util.module_from_spec(spec)
        module.__class__ = _NotRunYet
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)
