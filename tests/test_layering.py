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
PRIVATE_OWNERS = ("Tensor", "Node", "Primitive")
# Known offenders waiting for a public API: {path: {".name", ...}} (none today; a test below
# fails on stale entries, so the list cannot outlive the code it excuses).
ALLOWED = {}


def _private_names():
    """Private (single-underscore) attribute names of Tensor, Node, Primitive and the backends:
    their methods, class attributes, __slots__ and `self._x = ...` assignments, and the Tensor
    methods declared with `tensor_method` (`@tensor_method def _update`)."""
    names = set()
    for path in sorted((ROOT / "tensorgrad").rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        names.update(_declared_methods(tree))
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


def _declared_methods(tree):
    """Names a file declares Tensor methods with tensor_method: decorated functions and
    `tensor_method(fn, "name")` calls."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Name) and d.id == "tensor_method" for d in node.decorator_list):
            yield node.name
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "tensor_method" and len(node.args) == 2 \
                and isinstance(node.args[1], ast.Constant):
            yield node.args[1].value


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
    assert {"_node", "_backend", "_version", "_inplace", "_update", "_kernels"} <= private


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


# --- the engine's modules: no import circle, imports at the top, no patching after load -------
ENGINE = ("tensor", "creation", "inplace", "autograd", "ops")  # ops: its __init__ only


def _is_engine(module):
    rest = module.removeprefix("tensorgrad.")
    return rest in ENGINE or rest.startswith("autograd.")


def _modules():
    """tensorgrad's module names -> their files."""
    found = {}
    for path, package in _files("tensorgrad"):
        name = package if path.name == "__init__.py" else f"{package}.{path.stem}"
        found[name] = path
    return found


def import_graph():
    """{module: the tensorgrad modules it imports when it loads} (imports inside functions
    run later, and so make no circle at import time). `from pkg import sub` points at pkg.sub."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), filename=str(path))
        targets = set()
        for node in _at_load(tree):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(node, package)
                subs = {f"{base}.{a.name}" for a in node.names} & modules.keys()
                named = {a.name for a in node.names} - {s.rpartition(".")[2] for s in subs}
                targets |= subs | ({base} if named and base in modules else set())
        graph[name] = targets - {name}
    return graph


def _at_load(tree):
    """The nodes that run when a module loads: all but the bodies of functions."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def _resolve(node, package):
    if not node.level:
        return node.module
    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(parts + ([node.module] if node.module else []))


def _circles(graph):
    """The import circles: strongly connected sets of more than one module (Tarjan's walk)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_engine_is_in_no_import_circle():
    circles = [sorted(c) for c in _circles(import_graph()) if any(map(_is_engine, c))]
    assert not circles, f"import circles through Tensor and the engine: {circles}"


def _top_level_faults(tree, is_module):
    """(line, what) for each module-level import below the first definition, and each
    module-level write into another module's attributes (`other.name = ...`, setattr)."""
    seen_code = False
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if seen_code:
                yield node.lineno, "import below the code"
            continue
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            seen_code = True
        for sub in _at_load(node):
            targets = sub.targets if isinstance(sub, ast.Assign) else \
                [sub.target] if isinstance(sub, (ast.AugAssign, ast.AnnAssign)) else []
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and is_module(target.value.id):
                    yield sub.lineno, f"assigns {target.value.id}.{target.attr}"
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) \
                    and sub.func.id == "setattr" and sub.args \
                    and isinstance(sub.args[0], ast.Name) and is_module(sub.args[0].id):
                yield sub.lineno, f"setattr on {sub.args[0].id}"


def test_the_engine_imports_at_the_top_and_patches_no_module():
    import importlib
    import inspect
    offenders = []
    for name, path in _modules().items():
        if not _is_engine(name):
            continue
        module = importlib.import_module(name)
        tree = ast.parse(path.read_text(), filename=str(path))
        for line, what in _top_level_faults(
                tree, lambda n, m=module: inspect.ismodule(getattr(m, n, None))):
            offenders.append(f"{path.relative_to(ROOT)}:{line} {what}")
    assert not offenders, "\n".join(offenders)


def test_the_engine_checkers_see_violations():
    source = ('"""doc"""\nimport os\nfrom . import tensor as _tensor\nX = 1\n'
              "_tensor._ops = os\nsetattr(os, 'x', 1)\nfrom . import late\n"
              "def f():\n    _tensor.y = 2\n")
    modules = {"os", "_tensor"}
    faults = list(_top_level_faults(ast.parse(source), modules.__contains__))
    assert faults == [(5, "assigns _tensor._ops"), (6, "setattr on os"),
                      (7, "import below the code")]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


if __name__ == "__main__":  # print the import graph among the engine's modules
    for module, imports in sorted(import_graph().items()):
        if _is_engine(module):
            shown = sorted(m.removeprefix("tensorgrad.") for m in imports if _is_engine(m))
            print(f"{module.removeprefix('tensorgrad.'):22} -> {', '.join(shown) or '-'}")
