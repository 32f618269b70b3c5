"""Imports only go down the picture: models -> nn -> tensorgrad; numpy, cupy and numba only in
backends."""
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


def test_the_checker_sees_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from ..nn import Module\nimport numpy as np\n")
    names = [name for name, _ in _imports(bad, "tensorgrad.ops")]
    assert names == ["tensorgrad.nn", "numpy"]
