"""From items and edges to a graphviz.Digraph (styles, HTML-like labels, nested clusters), and
rendering it with Graphviz's `dot` program. The graphviz package is imported on first use."""
import contextlib
import functools
import html
import itertools
import os

from ..serialization import atomic_write
from .text import count, format_values, natural_order, size_in_bytes

_TINY = 6  # tensors with at most this many elements show their values

_NO_DOT = ("rendering needs Graphviz's `dot` program, which was not found on PATH; install "
           "Graphviz (Debian/Ubuntu: apt-get install graphviz, macOS: brew install graphviz, "
           "conda: conda install graphviz). The DOT text (`graph.source`) works without it.")

_STYLE = {  # fill colours: ops, tensors that require grad, constants, collapsed modules, NaN/Inf
    "op": dict(shape="box", style="rounded,filled", fillcolor="#dce8f8", color="#4a6fa5"),
    "param": dict(shape="box", style="filled", fillcolor="#d6f0cc", color="#3c8d2f"),
    "input": dict(shape="box", style="filled", fillcolor="#d6f0cc", color="#3c8d2f"),
    "const": dict(shape="box", style="filled,dashed", fillcolor="#eeeeee", color="#888888"),
    "module": dict(shape="box3d", style="filled", fillcolor="#fde8c8", color="#b7791f"),
    "bad": dict(fillcolor="#ff8a8a", color="#c00000", penwidth="2"),
}


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
    atomic_write(path, lambda f: f.write(data))  # a full disk never leaves half a picture
    return path


def graph_title(items, backward, saved_total):
    ops = sum(item.ops for item in items.values())
    numel = sum(item.numel for item in items.values())
    kind = "backward graph" if backward else "graph"
    text = f"{kind}: {ops} ops" + (f", {numel:,} parameters" if numel else "")
    if saved_total is not None:
        text += f", {size_in_bytes(saved_total)} saved for backward"
    return text


def to_dot(items, edges, levels, classes, title, rankdir, show, ids=None):
    """ids: key -> a stable name for each node, written as the SVG elements' ids (the explorer
    finds nodes, edges `a>b` and clusters `c-path` by them); None numbers the nodes."""
    font = "Helvetica"
    graph = _graph_class()(
        "tensorgrad",
        graph_attr=dict(rankdir=rankdir, label=title, labelloc="t", fontname=font, fontsize="14",
                        nodesep="0.25", ranksep="0.35", newrank="true"),
        node_attr=dict(fontname=font, fontsize="11", margin="0.1,0.04", height="0.3"),
        edge_attr=dict(color="#555555", arrowsize="0.6"))
    named = ids is not None
    ids = ids or {key: f"n{i}" for i, key in enumerate(items)}
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
            if item.kind == "module":  # dot keeps clusters apart, a lone node not
                with sub.subgraph(name=f"cluster_{next(counter)}") as box:
                    box.attr(label="", peripheries="0", margin="16")
                    box.node(ids[key], _label(item, classes, show), **style,
                             **({"id": ids[key]} if named else {}))
            else:
                sub.node(ids[key], _label(item, classes, show), **style,
                         **({"id": ids[key]} if named else {}))
        for child in sorted(children.get(path, ()), key=natural_order):
            with sub.subgraph(name=f"cluster_{next(counter)}") as cluster:
                name = html.escape(child)
                if child in classes:
                    name += f' <font color="#666666">({html.escape(classes[child])})</font>'
                cluster.attr(label=f"<{name}>", style="rounded", color="#999999",
                             fontname=font, fontsize="12", labeljust="l",
                             **({"id": f"c-{child}"} if named else {}))
                emit(cluster, child)

    emit(graph, "")
    for a, b in edges:
        graph.edge(ids[a], ids[b], **({"id": f"{ids[a]}>{ids[b]}"} if named else {}))
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
        lines.append(ops + (f", {count(item.numel)} params" if item.numel else ""))
        if show["steps"] and item.steps:
            lines.append(f"steps {min(item.steps)}–{max(item.steps)}")
    else:
        shape = "scalar" if item.shape == () else str(item.shape)
        dtype = f" {item.dtype.name}" if item.kind != "op" or item.dtype.name != "float32" else ""
        lines.append(shape + dtype)
        if show["values"] and item.value is not None and item.value.numel() <= _TINY:
            lines.append("data " + format_values(item.value))
        if show["grad"] and item.grad is not None and item.grad.numel() <= _TINY:
            lines.append("grad " + format_values(item.grad))
    if show["memory"] and item.nbytes:
        lines.append(f"saved {size_in_bytes(item.nbytes)}")
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
