"""Numba's BLAS check, without importing all of scipy.linalg.

When Numba compiles its first function it imports its lowering registries (Numba's own disk
cache does so at each load too; the kernels' does not: kernels/disk_cache.py), and one of them
checks that a BLAS is there for `np.dot` by importing `scipy.linalg.cython_blas`. As a
submodule that import first runs all of `scipy.linalg`, a large part of a first step
(the cold_start row). The check needs only the one extension, and Numba's C code
finds it in sys.modules by name. So before Numba starts, `load()` loads that extension by
itself, and a finder hands it to `scipy.linalg` as its `cython_blas` attribute when that package
is imported later, as the import system would have: users' `scipy.linalg` and their own Numba
`np.dot` see no difference.
"""
import importlib.machinery
import importlib.util
import sys

NAME = "scipy.linalg.cython_blas"
PARENT, _, CHILD = NAME.rpartition(".")


def load():
    """Put the extension in sys.modules on its own, unless scipy.linalg is imported already (it
    then has it) or SciPy is not installed (Numba then has no BLAS, as without this)."""
    if NAME in sys.modules or PARENT in sys.modules:
        return
    try:
        parent = importlib.util.find_spec(PARENT)  # imports the light `scipy`, not its linalg
    except ImportError:
        return
    spec = parent and importlib.machinery.PathFinder.find_spec(
        NAME, parent.submodule_search_locations)
    if spec is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module
    try:
        spec.loader.exec_module(module)
    except Exception:  # noqa: BLE001 - left to Numba's own import, which says what is wrong
        del sys.modules[NAME]
        return
    sys.meta_path.insert(0, _GiveToParent(module))


class _GiveToParent:
    """A finder for `scipy.linalg` alone, once: the package's own spec, as the finders after this
    one find it, with a loader that gives it the early extension as its attribute. Afterwards it
    answers None to every import (it stays in sys.meta_path: taking it out of the list while
    another thread's import walks the list would make that import skip a finder)."""

    def __init__(self, module):
        self.module = module

    def find_spec(self, fullname, path=None, target=None):
        if fullname != PARENT or self.module is None:
            return None
        child, self.module = self.module, None
        spec = importlib.util.find_spec(fullname)  # the other finders' answer, this one now inert
        if spec is not None:
            spec.loader = _SetChildFirst(spec.loader, child)
        return spec


class _SetChildFirst:
    """The package's loader, which puts the package's own loader back in its spec and sets the
    child attribute before the package runs (as its first cimport of the extension would: the
    package's `__all__` names it)."""

    def __init__(self, loader, child):
        self.loader, self.child = loader, child

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = module.__spec__.loader = self.loader
        setattr(module, CHILD, self.child)
        self.loader.exec_module(module)

    def __getattr__(self, name):  # get_source, get_resource_reader, ...: the package's loader's
        return getattr(self.loader, name)
