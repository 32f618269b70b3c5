"""Pictures of computation graphs: `draw(loss)` returns a `graphviz.Digraph`.

Op nodes are named by their primitive (`matmul`, `softmax`, `layer_norm`) and show the shape of
what they produce; tensor nodes show a parameter's dotted name, shape and dtype. Ops made inside a
module's forward sit in a cluster named by the module path (`blocks.0.attn`), and `depth=`
collapses deep modules into one box each, so a large model stays readable.
`draw(loss, backward=True)` draws the graph `backward()` walks, numbered in walk order.

    g = tg.viz.draw(loss, params=model, depth=1)
    g.source                                    # DOT text: needs only the graphviz package
    tg.viz.render(g, "out/gpt.svg")             # .svg/.png/.pdf: needs Graphviz's `dot` binary
    g                                           # in Jupyter: shown inline as SVG

Draw before `backward()`, or after `backward(retain_graph=True)`: a plain backward frees the graph
and drawing it afterwards raises. The graphviz package is imported only when drawing.
"""
import contextlib
import functools
import html
import itertools
import os
import re

from . import autograd
from .autograd import Node
from .tensor import Tensor

_TINY = 6  # tensors with at most this many elements show their values

_RELEASED = ("draw: the graph of this tensor was freed by backward(); draw it before calling "
             "backward(), or call backward(retain_graph=True) first")

_NO_DOT = ("rendering needs Graphviz's `dot` program, which was not found on PATH; install "
           "Graphviz (Debian/Ubuntu: apt-get install graphviz, macOS: brew install graphviz, "
           "conda: conda install graphviz). The DOT text (`graph.source`) works without it.")

_STYLE = {  # fill colours: ops, tensors that require grad, constants, collapsed modules, NaN/Inf
    "op": dict(shape="box", style="rounded,filled", fillcolor="#dce8f8", color="#4a6fa5"),
    "param": dict(shape="box", style="filled", fillcolor="#d6f0cc", color="#3c8d2f"),
    "const": dict(shape="box", style="filled,dashed", fillcolor="#eeeeee", color="#888888"),
    "module": dict(shape="box3d", style="filled", fillcolor="#fde8c8", color="#b7791f"),
    "bad": dict(fillcolor="#ff8a8a", color="#c00000", penwidth="2"),
}


def draw(output, params=None, *, depth=None, expand=None, backward=False, show_values=False,
         show_grad=False, show_memory=False, summarize_repeats=False, rankdir="TB"):
    """The graph that produced `output`, as a graphviz.Digraph (`.source` is its DOT text).

    output: the Tensor to draw from (a loss, logits ...). It must still hold its graph: draw
        before `backward()` or after `backward(retain_graph=True)`.
    params: names for tensors, found by identity: a mapping name -> Tensor, or anything with
        `named_parameters()` (a Module), whose `named_modules()` also names the clusters' classes.
        Inputs can be named too (`{"x": x}`) when they require grad or an op saves them.
    depth: draw module paths this many levels deep (`blocks.0` counts as one level: list
        indices do not add one); deeper modules become one box each. None draws every op.
    expand: a module path (or a list of them) drawn in full although `depth` would collapse it.
    backward: draw the gradient graph instead: ops numbered in the order backward() runs their
        gradient rules, edges pointing the way gradients flow, constants left out.
    show_values / show_grad: print the value / d(output)/d(tensor) (of output.sum() for a
        non-scalar output) of tensors with at most 6 elements, as in micrograd's diagrams.
        Values the graph does not keep are recomputed from the ones it does (an op fed by a
        constant that no op saved has none); gradients come from one extra walk of the graph
        that leaves every `.grad` alone. Each costs about one forward or backward pass.
    show_memory: print the bytes each op keeps alive for backward (saved inputs and output,
        parameters not counted), and the total in the title.
    summarize_repeats: with `depth`, draw runs of three or more collapsed sibling modules
        (`blocks.0` ... `blocks.11`) as first, one box for the middle ones, and last.
    rankdir: graphviz's layout direction: "TB" (top to bottom) or "LR" (left to right).

    Constants (inputs that need no gradient) are drawn from the shapes the graph records: one
    node per tensor where an op saved it, else one per use. A one-element constant (the 0.5 in
    `0.5 * x`) is written into its op's name, `mul(·, 0.5)`. Tensors holding NaN or Inf are red.
    Tensors that require grad are green, constants grey, ops blue, collapsed modules orange.
    """
    if not isinstance(output, Tensor):
        raise TypeError(f"draw: expected a Tensor, got {type(output).__name__}")
    if depth is not None and (not isinstance(depth, int) or depth < 1):
        raise ValueError(f"draw: depth must be a positive int or None, got {depth!r}")
    names, classes = _names(params)
    levels = _Levels(classes)
    items, edges, saved_total = _trace(output, names, levels, backward, show_values, show_grad)
    expand = [expand] if isinstance(expand, str) else list(expand or ())
    _check_expand(expand, items, levels)
    items, edges = _collapse(items, edges, levels, depth, expand, summarize_repeats)
    title = _title(items, backward, saved_total if show_memory else None)
    return _to_dot(items, edges, levels, classes, title, rankdir,
                   dict(values=show_values, grad=show_grad, memory=show_memory, steps=backward))


def draw_backward(output, params=None, **options):
    """`draw(output, params, backward=True, ...)`: the graph backward() walks, in walk order."""
    return draw(output, params, backward=True, **options)


def render(graph, path, format=None, dpi=150):
    """Write `graph` to `path` as SVG, PNG or PDF (from the suffix unless `format` is given).

    Raster formats (png, jpg) are drawn at `dpi` dots per inch, so the small labels stay sharp.
    Needs Graphviz's `dot` program; without it raises a RuntimeError that says how to install it.
    Returns `path`.
    """
    format = format or os.path.splitext(path)[1].lstrip(".").lower()
    if not format:
        raise ValueError(f"render: cannot tell the format of {path!r}; pass format='svg', "
                         "'png' or 'pdf'")
    if format in ("png", "jpg", "jpeg", "gif", "bmp"):
        graph = graph.copy()
        graph.attr(dpi=str(dpi))
    with _dot_required():
        data = graph.pipe(format=format)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


# ----------------------------------------------------------------------------------------------
# Walking the graph into items (ops, parameters, constants) and edges
# ----------------------------------------------------------------------------------------------
class _Item:
    """One box of the picture: an op, a leaf or constant tensor, or a collapsed module."""

    __slots__ = ("kind", "scope", "title", "shape", "dtype", "value", "grad", "nbytes", "steps",
                 "ops", "numel", "bad", "root")

    def __init__(self, kind, scope, title, shape=None, dtype=None, value=None):
        self.kind, self.scope, self.title = kind, scope, title
        self.shape, self.dtype, self.value, self.grad = shape, dtype, value, None
        self.nbytes, self.steps, self.ops, self.numel = 0, [], 0, 0
        self.bad, self.root = _nonfinite(value), False


def _names(params):
    """id(tensor) -> dotted name, and module path -> class name (when params is a Module)."""
    if params is None:
        return {}, {}
    if hasattr(params, "named_parameters"):
        pairs = params.named_parameters()
    elif hasattr(params, "items"):
        pairs = params.items()
    else:
        raise TypeError(f"draw: params must be a mapping name -> Tensor or have "
                        f"named_parameters(), got {type(params).__name__}")
    names = {id(t): name for name, t in pairs}
    classes = {}
    if hasattr(params, "named_modules"):
        classes = {path: type(m).__name__ for path, m in params.named_modules()}
    return names, classes


def _trace(output, names, levels, backward, show_values, show_grad):
    """Items keyed by ("op" | "leaf" | "const", id), edges between keys, saved bytes in total."""
    root = output._node
    if root is None:
        item = _leaf_item(output, names, "")
        item.root = True
        return {("leaf", id(output)): item}, [], 0
    try:
        order = autograd._topological_order([root])  # every consumer before what it consumes
    except RuntimeError:
        raise RuntimeError(_RELEASED) from None
    items, edges, held = {}, [], {}
    outs = {id(root): (output.shape, output.dtype, output)}  # filled in by each node's consumers
    for step, node in enumerate(order, 1):
        shape, dtype, value = outs.pop(id(node))
        if value is None and node.out_data is not None:
            value = Tensor._constant(node.out_data, node.backend)
        item = _Item("op", node.scope, node.prim.name, shape, dtype, value)
        item.steps, item.ops, item.root = [step], 1, node is root
        item.nbytes = _saved_bytes(node, held)
        items[("op", id(node))] = item
        saved = _saved_by_input(node)
        folded = []
        for i, (parent, shape, dtype) in enumerate(zip(node.parents, node.in_shapes,
                                                       node.in_dtypes)):
            if shape is None:  # an optional input left out (a layer_norm without bias)
                continue
            kept = saved.get(i)
            if type(parent) is Node:
                key = ("op", id(parent))
                if outs.get(id(parent), (None, None, None))[2] is None:
                    outs[id(parent)] = (shape, dtype, kept)
            elif parent is not None:
                key = ("leaf", id(parent))
                if key not in items:
                    items[key] = _leaf_item(parent, names, None)
            elif backward:  # no gradient flows into a constant
                continue
            elif _prod(shape) == 1 and (kept is None or id(kept) not in names):
                folded.append((i, kept))
                continue
            else:
                key = ("const", id(kept)) if kept is not None else ("const", id(node), i)
                if key not in items:
                    title = names.get(id(kept), "constant")
                    items[key] = _Item("const", None, title, shape, dtype, kept)
            if key[0] != "op":
                items[key].scope = levels.common(items[key].scope, node.scope)
            edges.append((("op", id(node)), key) if backward else (key, ("op", id(node))))
        if folded:
            item.title = _folded_title(node, folded)
    if show_values:
        _replay(order, items)
    if show_grad:
        _attach_grads(output, items, order)
    return items, edges, sum(held.values())


def _leaf_item(tensor, names, scope):
    kind = "param" if tensor.requires_grad else "const"
    name = names.get(id(tensor), "tensor" if kind == "param" else "constant")
    item = _Item(kind, scope, name, tensor.shape, tensor.dtype, tensor)
    item.numel = tensor.numel() if kind == "param" else 0
    return item


def _saved_by_input(node):
    """input index -> the Tensor the node saved for it (its value, for drawing)."""
    indices = range(len(node.parents)) if node.prim.saves == "all" else node.prim.saves
    return {i: t for i, t in zip(indices, node.saved) if t is not None}


def _saved_bytes(node, held):
    """Bytes this node keeps alive for backward; `held` collects them by buffer for the total.

    Parameters are not counted: the model holds them whether or not a graph exists.
    """
    arrays = [t.data for t in node.saved if t is not None and not (t.requires_grad and t.is_leaf)]
    if node.out_data is not None:
        arrays.append(node.out_data)
    for a in arrays:
        base = a
        while getattr(base, "base", None) is not None:  # views share their base's memory
            base = base.base
        held[id(base)] = base.nbytes
    return sum(a.nbytes for a in arrays)


def _folded_title(node, folded):
    """`mul(·, 0.5)`: a one-element constant written into its op's name."""
    args = ["·" if s is not None else None for s in node.in_shapes]
    for i, kept in folded:
        args[i] = _format_values(kept) if kept is not None else "const"
    return f"{node.prim.name}({', '.join(a for a in args if a is not None)})"


def _replay(order, items):
    """Recompute, from each primitive's forward, the op outputs the graph did not keep.

    Only for drawing values: the graph keeps just what backward needs. An op whose input is a
    constant nobody saved stays without a value.
    """
    for node in reversed(order):  # producers first
        item = items[("op", id(node))]
        if item.value is not None:
            continue
        saved, datas = _saved_by_input(node), []
        for i, (parent, shape) in enumerate(zip(node.parents, node.in_shapes)):
            if shape is None:
                datas.append(None)
                continue
            value = saved.get(i)
            if value is None:
                value = items[("op", id(parent))].value if type(parent) is Node else parent
            if value is None:
                break
            datas.append(value.data)
        else:
            out = node.prim.forward(node.backend, *datas, **node.attrs)
            item.value = Tensor._constant(node.backend.asarray(out), node.backend)
            item.bad = item.bad or _nonfinite(item.value)


def _attach_grads(output, items, order):
    """d(output)/d(each drawn tensor), from the engine itself; `.grad` fields are not touched."""
    leaves = _leaf_tensors(order)
    proxies = [Tensor._wrap(None, n.backend, True, n, None) for n in order]
    seed = Tensor._constant(output._backend.ones_like(output.data), output._backend)
    grads = autograd.run_backward([output], [seed], retain_graph=True, create_graph=False,
                                  inputs=proxies + leaves)
    keys = [("op", id(n)) for n in order] + [("leaf", id(t)) for t in leaves]
    for key, g in zip(keys, grads):
        if g is not None:
            items[key].grad = g
            items[key].bad = items[key].bad or _nonfinite(g)


def _leaf_tensors(order):
    seen = {}
    for node in order:
        for parent in node.parents:
            if parent is not None and type(parent) is not Node:
                seen[id(parent)] = parent
    return list(seen.values())


def _check_expand(expand, items, levels):
    scopes = {item.scope for item in items.values()}
    for path in expand:
        if not any(s == path or s.startswith(path + ".") for s in scopes):
            known = sorted({levels(s)[0] for s in scopes if s})
            raise ValueError(f"draw: expand={path!r} names no module of this graph; its "
                             f"top-level modules are {known}")


# ----------------------------------------------------------------------------------------------
# Scopes: module paths as levels, clusters and collapsing
# ----------------------------------------------------------------------------------------------
class _Levels:
    """Module paths as levels: 'blocks.0.attn' -> ['blocks.0', 'attn'].

    A ModuleList (or ModuleDict) has no forward of its own, so its children are no level below
    it: `depth=1` shows `blocks.0`, `blocks.1` ... When the module classes are unknown, every
    numeric part is taken for a list index; when they are known, the children of a Sequential
    `mlp` stay one level below `mlp`.
    """

    def __init__(self, classes):
        self.lists = ({path for path, name in classes.items() if name in ("ModuleList",
                                                                          "ModuleDict")}
                      if classes else None)
        self.cache = {}

    def __call__(self, scope):
        levels = self.cache.get(scope)
        if levels is None:
            levels, prefix = [], ""
            for part in scope.split(".") if scope else ():
                is_item = part.isdigit() if self.lists is None else prefix in self.lists
                if is_item and levels:
                    levels[-1] += "." + part
                else:
                    levels.append(part)
                prefix = f"{prefix}.{part}" if prefix else part
            self.cache[scope] = levels
        return levels

    def parent(self, path):
        return ".".join(self(path)[:-1])

    def common(self, a, b):
        """The innermost module path holding both scopes (None stands for 'no scope yet')."""
        if a is None:
            return b
        common = []
        for x, y in zip(self(a), self(b)):
            if x != y:
                break
            common.append(x)
        return ".".join(common)


def _closed_module(scope, levels, depth, expand):
    """The module box a scope collapses into, or None when it is drawn in full."""
    if depth is None:
        return None
    parts = levels(scope)
    for k in range(depth, len(parts) + 1):
        path = ".".join(parts[:k])
        if not any(path == e or path.startswith(e + ".") or e.startswith(path + ".")
                   for e in expand):
            return path
    return None


def _collapse(items, edges, levels, depth, expand, summarize):
    """Fold every item inside a closed module into that module's box; edges follow, deduplicated."""
    boxes, where = {}, {}
    for key, item in items.items():
        path = _closed_module(item.scope, levels, depth, expand)
        where[key] = key if path is None else ("module", path)
        if path is not None:
            if path not in boxes:
                boxes[path] = _Item("module", levels.parent(path), path)
            _absorb(boxes[path], item)
    if summarize:
        _summarize_repeats(boxes, where)
    drawn = {k: v for k, v in items.items() if where[k] == k}
    drawn.update((("module", path), box) for path, box in boxes.items())
    moved = ((where[a], where[b]) for a, b in edges)
    return drawn, list(dict.fromkeys((a, b) for a, b in moved if a != b))


def _absorb(box, item):
    box.ops += item.ops
    box.numel += item.numel
    box.nbytes += item.nbytes
    box.steps += item.steps
    box.bad = box.bad or item.bad
    box.root = box.root or item.root


def _summarize_repeats(boxes, where):
    """blocks.0 ... blocks.11 -> blocks.0, one box 'blocks.1 … blocks.10 (×10)', blocks.11."""
    runs = {}
    for path in boxes:
        match = re.fullmatch(r"(.*)\.(\d+)", path)
        if match:
            runs.setdefault(match.group(1), []).append((int(match.group(2)), path))
    for run in runs.values():
        if len(run) < 3:
            continue
        middle = [path for _, path in sorted(run)[1:-1]]
        title = f"{middle[0]} … {middle[-1]} (×{len(middle)})"
        merged = _Item("module", boxes[middle[0]].scope, title)
        for path in middle:
            _absorb(merged, boxes.pop(path))
        boxes[title] = merged
        for key, target in where.items():
            if target[0] == "module" and target[1] in middle:
                where[key] = ("module", title)


# ----------------------------------------------------------------------------------------------
# DOT output
# ----------------------------------------------------------------------------------------------
def _title(items, backward, saved_total):
    ops = sum(item.ops for item in items.values())
    numel = sum(item.numel for item in items.values())
    kind = "backward graph" if backward else "graph"
    text = f"{kind}: {ops} ops, {_count(numel)} parameters"
    if saved_total is not None:
        text += f", {_bytes(saved_total)} saved for backward"
    return text


def _to_dot(items, edges, levels, classes, title, rankdir, show):
    font = "Helvetica"
    graph = _graph_class()(
        "tensorgrad",
        graph_attr=dict(rankdir=rankdir, label=title, labelloc="t", fontname=font, fontsize="14",
                        nodesep="0.25", ranksep="0.35", newrank="true"),
        node_attr=dict(fontname=font, fontsize="11", margin="0.1,0.04", height="0.3"),
        edge_attr=dict(color="#555555", arrowsize="0.6"))
    ids = {key: f"n{i}" for i, key in enumerate(items)}
    members, children = {}, {}
    for key in reversed(list(items)):  # forward order: inputs first
        path = levels(items[key].scope)
        members.setdefault(".".join(path), []).append(key)
        for k in range(len(path)):
            children.setdefault(".".join(path[:k]), set()).add(".".join(path[:k + 1]))
    counter = itertools.count()

    def emit(sub, path):
        for key in members.get(path, ()):
            item = items[key]
            style = dict(_STYLE[item.kind], **(_STYLE["bad"] if item.bad else {}))
            if item.root:
                style["penwidth"] = "2.5"
            sub.node(ids[key], _label(item, classes, show), **style)
        for child in sorted(children.get(path, ()), key=_natural):
            with sub.subgraph(name=f"cluster_{next(counter)}") as cluster:
                name = html.escape(child)
                if child in classes:
                    name += f' <font color="#666666">({html.escape(classes[child])})</font>'
                cluster.attr(label=f"<{name}>", style="rounded", color="#999999",
                             fontname=font, fontsize="12", labeljust="l")
                emit(cluster, child)

    emit(graph, "")
    for a, b in edges:
        graph.edge(ids[a], ids[b])
    return graph


def _label(item, classes, show):
    """An HTML-like label: the bold title, then small lines (shape, values, memory)."""
    title = item.title
    if show["steps"] and item.kind == "op":
        title = f"#{item.steps[0]} {title}"
    lines = []
    if item.kind == "module":
        if item.title in classes:
            title += f" ({classes[item.title]})"
        ops = f"{item.ops} op" + ("s" if item.ops != 1 else "")
        lines.append(ops + (f", {_count(item.numel)} params" if item.numel else ""))
        if show["steps"] and item.steps:
            lines.append(f"steps {min(item.steps)}–{max(item.steps)}")
    else:
        shape = "scalar" if item.shape == () else str(item.shape)
        dtype = f" {item.dtype}" if item.kind != "op" or str(item.dtype) != "float32" else ""
        lines.append(shape + dtype)
        if show["values"] and item.value is not None and item.value.numel() <= _TINY:
            lines.append("data " + _format_values(item.value))
        if show["grad"] and item.grad is not None and item.grad.numel() <= _TINY:
            lines.append("grad " + _format_values(item.grad))
    if show["memory"] and item.nbytes:
        lines.append(f"saved {_bytes(item.nbytes)}")
    small = "".join(f'<br/><font point-size="9" color="#333333">{html.escape(line)}</font>'
                    for line in lines)
    return f"<<b>{html.escape(title)}</b>{small}>"


@functools.lru_cache(maxsize=None)
def _graph_class():
    """graphviz.Digraph whose rendering (Jupyter display included) explains a missing `dot`."""
    graphviz = _import_graphviz()

    class ComputationGraph(graphviz.Digraph):
        def pipe(self, *args, **kwargs):
            with _dot_required():
                return super().pipe(*args, **kwargs)

        def render(self, *args, **kwargs):
            with _dot_required():
                return super().render(*args, **kwargs)

    return ComputationGraph


def _import_graphviz():
    try:
        import graphviz
    except ImportError:
        raise ImportError("tensorgrad.viz needs the graphviz Python package: pip install "
                          "graphviz") from None
    return graphviz


@contextlib.contextmanager
def _dot_required():
    graphviz = _import_graphviz()
    try:
        yield
    except graphviz.ExecutableNotFound as exc:
        raise RuntimeError(_NO_DOT) from exc


# ----------------------------------------------------------------------------------------------
# Small formatting helpers
# ----------------------------------------------------------------------------------------------
def _nonfinite(t):
    return (t is not None and t.data.dtype.kind in "fc"
            and not bool(t._backend.isfinite(t.data).all()))


def _format_values(t):
    values = t._backend.to_host(t.data).ravel().tolist()
    text = [_number(v) for v in values]
    return text[0] if t.data.ndim == 0 or len(text) == 1 else "[" + ", ".join(text) + "]"


def _number(v):
    """4 significant digits; a float keeps a decimal point (2.0, not 2)."""
    if not isinstance(v, float):
        return str(v)
    text = f"{v:.4g}"
    return text if any(c in text for c in ".enai") else text + ".0"


def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _natural(path):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path)]


def _count(n):
    for unit, size in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def _bytes(n):
    for unit, size in (("GB", 2 ** 30), ("MB", 2 ** 20), ("KB", 2 ** 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"
