"""Imports only go down the picture: models -> nn -> tensorgrad; numpy, cupy and numba only in
backends; mpi4py only in tensorgrad.distributed."""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# folder -> (its import name, the import names it must never use)
LAYERS = {
    "tensorgrad": ("tensorgrad", ("tensorgrad.nn", "tensorgrad.models", "nn", "models")),
    "nn": ("tensorgrad.nn", ("tensorgrad.models", "models", "nn")),
    "models": ("tensorgrad.models", ("models", "nn")),
}


def _imports(path, package):
    """Absolute module names imported by a file (relative imports resolved against package)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    parts = package.split(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = parts[: len(parts) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module
            yield name, node.lineno


def _files(folder):
    for path in sorted((ROOT / folder).rglob("*.py")):
        rel = path.relative_to(ROOT / folder).with_suffix("")
        package_parts = [LAYERS[folder][0]] + list(rel.parts[:-1])
        yield path, ".".join(package_parts)


@pytest.mark.parametrize("folder", sorted(LAYERS))
def test_imports_only_go_down(folder):
    banned = LAYERS[folder][1]
    offenders = []
    for path, package in _files(folder):
        for name, line in _imports(path, package):
            if any(name == b or name.startswith(b + ".") for b in banned):
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not offenders, "imports that go up the layering (or use bare nn/models):\n" + \
        "\n".join(offenders)


@pytest.mark.parametrize("folder", sorted(LAYERS))
def test_only_backends_import_array_libraries(folder):
    offenders = []
    for path, package in _files(folder):
        if package.startswith("tensorgrad.backend"):
            continue
        for name, line in _imports(path, package):
            if name.split(".")[0] in ("numpy", "cupy", "cupyx", "numba"):
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not offenders, "op code must ask the tensor's backend instead:\n" + "\n".join(offenders)


@pytest.mark.parametrize("folder", sorted(LAYERS))
def test_only_distributed_imports_mpi4py(folder):
    """MPI is tensorgrad.distributed's business: everything else (DDP, the sampler) asks it."""
    offenders = []
    for path, package in _files(folder):
        if package.startswith("tensorgrad.distributed"):
            continue
        for name, line in _imports(path, package):
            if name.split(".")[0] == "mpi4py":
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not offenders, "use tensorgrad.distributed instead:\n" + "\n".join(offenders)


def test_the_checker_sees_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from ..nn import Module\nimport numpy as np\n")
    names = [name for name, _ in _imports(bad, "tensorgrad.ops")]
    assert names == ["tensorgrad.nn", "numpy"]


# --- no reaching into tensorgrad's private attributes from nn, models or examples --------------
OUTSIDE = ("nn", "models", "examples")
# The classes whose private attributes are tensorgrad's own business, found by name wherever
# they live in tensorgrad/ (a backend is any class named *Backend).
PRIVATE_OWNERS = ("Tensor", "InPlaceMethods", "Node", "Primitive")  # InPlaceMethods: Tensor's base
# Known offenders waiting for a public API: {path: {".name", ...}} (none today; a test below
# fails on stale entries, so the list cannot outlive the code it excuses).
ALLOWED = {}


def _private_names():
    """Private (single-underscore) attribute names of Tensor, Node, Primitive and the backends:
    their methods, class attributes, __slots__ and `self._x = ...` assignments."""
    names = set()
    for path in sorted((ROOT / "tensorgrad").rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for cls in ast.walk(tree):
            if not (isinstance(cls, ast.ClassDef) and (cls.name in PRIVATE_OWNERS
                                                       or cls.name.endswith("Backend"))):
                continue
            for node in ast.walk(cls):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(node.name)
                elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                        and node.value.id == "self" and isinstance(node.ctx, ast.Store):
                    names.add(node.attr)
                elif isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            names.add(target.id)
                            if target.id == "__slots__" and isinstance(node.value, ast.Tuple):
                                names.update(e.value for e in node.value.elts
                                             if isinstance(e, ast.Constant))
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def _private_uses(tree, private):
    """(line, '.name') for each access of a tensorgrad private attribute on anything but
    `self` (a module's own attributes are its business), and each private name imported from
    a tensorgrad module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in private:
            if not (isinstance(node.value, ast.Name) and node.value.id == "self"):
                yield node.lineno, f".{node.attr}"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tensorgrad"):
            for part in node.module.split("."):
                if part.startswith("_") and not part.startswith("__"):
                    yield node.lineno, f".{part}"
            for alias in node.names:
                if alias.name.startswith("_"):
                    yield node.lineno, f".{alias.name}"


def test_the_private_names_are_found():
    private = _private_names()
    assert {"_node", "_backend", "_version", "_inplace", "_constant", "_kernels"} <= private


@pytest.mark.parametrize("folder", OUTSIDE)
def test_no_private_access_of_tensorgrad_objects_outside_tensorgrad(folder):
    private = _private_names()
    offenders = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        allowed = ALLOWED.get(rel, set())
        for line, name in _private_uses(ast.parse(path.read_text(), filename=rel), private):
            if name not in allowed:
                offenders.append(f"{rel}:{line} uses {name}")
    assert not offenders, ("private attributes of tensorgrad objects used outside tensorgrad/ "
                           "(give tensorgrad a public API instead):\n" + "\n".join(offenders))


def test_the_private_access_checker_sees_a_violation():
    source = ("import tensorgrad as tg\nfrom tensorgrad.autograd import _where\n"
              "def step(p):\n    p._inplace('x')\n    return p._backend.kernels()\n"
              "class Mine:\n    def f(self):\n        return self._backend\n"
              "from tensorgrad.ops._helpers import clip\n")
    uses = sorted(_private_uses(ast.parse(source), _private_names()))
    assert uses == [(2, "._where"), (4, "._inplace"), (5, "._backend"), (9, "._helpers")]


def test_the_allowlist_holds_only_live_offenders():
    private = _private_names()
    for rel, names in ALLOWED.items():
        used = {name for _, name in _private_uses(ast.parse((ROOT / rel).read_text()), private)}
        assert names <= used, f"{rel} no longer uses {sorted(names - used)}: drop it from ALLOWED"
