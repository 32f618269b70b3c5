"""Run a PyTorch program unchanged on tensorgrad: `import torch` and its submodules resolve to
tensorgrad's modules.

    python -m tensorgrad.as_torch train.py --epochs 3    # run a script
    python -m tensorgrad.as_torch -m mypackage.train     # run a module, as python -m does

    import tensorgrad.as_torch
    tensorgrad.as_torch.install()                       # in code, before the first import torch
    import torch.nn as nn                               # tensorgrad.nn

Nothing changes unless asked: importing tensorgrad leaves `torch` alone. A real PyTorch that is
already imported is never replaced (install raises); one that is installed but not yet imported
is shadowed with a warning that says so. `uninstall()` undoes `install()`.
The modules covered are the keys of TORCH_MODULES; any other `torch.*` module raises
ModuleNotFoundError naming what is covered. docs/pytorch.md lists the documented differences.
"""
import importlib
import importlib.abc
import importlib.util
import os
import runpy
import sys
import warnings

# torch's module -> the tensorgrad module that stands in for it
TORCH_MODULES = {
    "torch": "tensorgrad",
    "torch.nn": "tensorgrad.nn",
    "torch.nn.functional": "tensorgrad.nn.functional",
    "torch.nn.init": "tensorgrad.nn.init",
    "torch.nn.utils": "tensorgrad.nn.utils",
    "torch.nn.utils.rnn": "tensorgrad.nn.utils.rnn",
    "torch.nn.parallel": "tensorgrad.nn.parallel",
    "torch.optim": "tensorgrad.nn.optim",
    "torch.optim.lr_scheduler": "tensorgrad.nn.optim.lr_scheduler",
    "torch.utils": "tensorgrad.utils",
    "torch.utils.data": "tensorgrad.utils.data",
    "torch.utils.checkpoint": "tensorgrad.utils.checkpoint",
    "torch.autograd": "tensorgrad.autograd",
    "torch.linalg": "tensorgrad.linalg",
    "torch.amp": "tensorgrad.amp",
    "torch.cuda": "tensorgrad.cuda",
    "torch.backends": "tensorgrad.backends",
    "torch.backends.cudnn": "tensorgrad.backends.cudnn",
    "torch.backends.mps": "tensorgrad.backends.mps",
    "torch.distributed": "tensorgrad.distributed",
}


class _AliasLoader(importlib.abc.Loader):
    """Loads `torch.x` as the tensorgrad module that stands in for it (already imported)."""

    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass  # the tensorgrad module ran its code when it was imported


class TorchAliasFinder(importlib.abc.MetaPathFinder):
    """A meta-path finder answering for `torch` and `torch.*`, ahead of any installed torch."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        module = TORCH_MODULES.get(fullname)
        if module is None:
            covered = ", ".join(sorted(TORCH_MODULES))
            raise ModuleNotFoundError(f"tensorgrad.as_torch: {fullname} has no tensorgrad "
                                      f"counterpart; the modules covered are {covered}",
                                      name=fullname)
        module = importlib.import_module(module)
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module),
                                               is_package=hasattr(module, "__path__"))


def _finder():
    return next((f for f in sys.meta_path if isinstance(f, TorchAliasFinder)), None)


def install():
    """Make `import torch` (and the modules in TORCH_MODULES) give tensorgrad from now on.

    Raises RuntimeError when a real torch is already imported: its objects would mix with
    tensorgrad's. Warns when an installed torch is being shadowed. Installing twice is a no-op.
    """
    if _finder() is not None:
        return
    loaded = sys.modules.get("torch")
    if loaded is not None:
        raise RuntimeError(f"tensorgrad.as_torch.install: a real torch is already imported "
                           f"({getattr(loaded, '__file__', loaded)}); install() must run before "
                           "the first `import torch`, or run the program with "
                           "`python -m tensorgrad.as_torch script.py`")
    real = importlib.util.find_spec("torch")
    if real is not None:
        warnings.warn(f"tensorgrad.as_torch: `import torch` now gives tensorgrad, shadowing the "
                      f"PyTorch installed at {real.origin}", stacklevel=2)
    sys.meta_path.insert(0, TorchAliasFinder())


def uninstall():
    """Undo install(): `torch` and its submodules are forgotten, and import normally again."""
    finder = _finder()
    if finder is None:
        return
    sys.meta_path.remove(finder)
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        del sys.modules[name]


def main(argv=None):
    """`python -m tensorgrad.as_torch script.py [args]` or `... -m module [args]`."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    install()
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(argv)
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))  # as python script.py does
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    import tensorgrad.as_torch as runner  # one copy of the module state, not __main__'s

    sys.exit(runner.main())
