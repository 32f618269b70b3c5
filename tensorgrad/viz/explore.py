"""`explore(loss, model)`: one self-contained HTML page to open and close modules, read any
node's shapes and statistics, search, follow gradients and find where NaN/Inf began.

Every layout comes from Graphviz's `dot`, run at write time: the page holds one SVG per
expansion state (which modules are open) and swaps them in place, so it needs no server, no
network and no layout engine of its own, and opening a module costs one innerHTML swap. The
states laid out are every depth level, every module opened on its own (with its ancestors), and
as many other combinations as `max_states` allows, fewest open modules first: a small model gets
all of them. A combination not laid out shows the nearest one that was (the clicked module open,
and as many of the others as can stay) and names the modules it closed. The
SVGs are stored gzipped (a seventh of the size); the page inflates them once when it opens.
"""
import base64
import concurrent.futures
import gzip
import itertools
import json
import os
import re

from ..serialization import atomic_write
from ..tensor import Tensor
from .dot import to_dot
from .graph_json import graph_data
from .scopes import _absorb
from .walk import Item

_HERE = os.path.dirname(os.path.abspath(__file__))
_SHOW = dict(values=False, grad=False, memory=False, steps=False)


def explore(output, params=None, path="graph.html", *, values=True, grads=True, max_states=64,
            title=None):
    """Write the explorer of the graph that produced `output` to `path` (one HTML file); returns
    `path`.

    output, params: as for `draw`: a Tensor that still holds its graph (before backward(), or
        after backward(retain_graph=True)) and the names of its parameters (a Module or a
        mapping name -> Tensor).
    values / grads: as for `to_json`: value statistics, and gradient norms for the backward view.
    max_states: combinations of open modules laid out beyond the depth levels and the single
        modules (one `dot` run each).
    title: the page's heading (default: the graph's size).
    Needs Graphviz's `dot` program; without it raises a RuntimeError that says how to install it.
    """
    if not isinstance(output, Tensor):
        raise TypeError(f"explore: expected a Tensor, got {type(output).__name__}")
    if isinstance(params, (str, os.PathLike)):
        raise TypeError(f"explore: params must name the tensors (a Module or a mapping name -> "
                        f"Tensor), got the path {str(params)!r}; pass the file as path=")
    data, walked = graph_data(output, params, values=values, grads=grads)
    states = _states(data["modules"], max_states)
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        svgs = list(pool.map(lambda state: _layout(walked, state), states))
    page = {"graph": data, "heading": title or f"graph: {data['title']}",
            "svgs": {"\n".join(sorted(state)): _packed(svg) for state, svg in zip(states, svgs)}}
    text = _template("explorer.html")
    for name, value in (("/*STYLE*/", _template("explorer.css")),
                        ("/*SCRIPT*/", _template("explorer.js")),
                        ("/*DATA*/", json.dumps(page).replace("</", "<\\/"))):
        text = text.replace(name, value)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    atomic_write(path, lambda f: f.write(text.encode()))
    return path


def _states(modules, max_states):
    """Sets of open modules to lay out: depth levels, each module alone, then breadth first."""
    parent = {m["path"]: m["parent"] for m in modules}
    deepest = max((m["level"] for m in modules), default=0)
    states = {frozenset(m["path"] for m in modules if m["level"] < depth): None
              for depth in range(1, deepest + 2)}
    for path in parent:
        chain = set()
        while path:
            chain.add(path)
            path = parent[path]
        states[frozenset(chain)] = None
    frontier, budget = [frozenset()], len(states) + max_states
    while frontier and len(states) < budget:
        grown = []
        for state, path in itertools.product(frontier, parent):
            if path not in state and (not parent[path] or parent[path] in state):
                grown.append(state | {path})
        for state in grown:
            if len(states) >= budget:
                break
            states[state] = None
        frontier = list(dict.fromkeys(grown))
    return list(states)


def _layout(walked, state):
    """One SVG: modules in `state` drawn as clusters, every other module as one box."""
    items, ids, levels = {}, dict(walked.ids), walked.levels
    where = {}
    for key, item in walked.items.items():
        parts, closed = levels(item.scope or ""), None
        for k in range(1, len(parts) + 1):
            if ".".join(parts[:k]) not in state:
                closed = ".".join(parts[:k])
                break
        if closed is None:
            items[key], where[key] = item, key
            continue
        box = ("module", closed)
        if box not in items:
            items[box] = Item("module", levels.parent(closed), closed)
            ids[box] = f"m-{closed}"
        _absorb(items[box], item)
        where[key] = box
    edges = dict.fromkeys((where[a], where[b]) for a, b in walked.edges if where[a] != where[b])
    graph = to_dot(items, list(edges), levels, walked.classes, "", "TB", _SHOW, ids)
    svg = graph.pipe(format="svg").decode()
    svg = re.sub(r'<\?xml[^>]*>|<!DOCTYPE[^>]*>|<!--.*?-->|<title>[^<]*</title>|'
                 r' font-family="[^"]*"', "", svg, flags=re.S)  # the page's style sets the font
    return re.sub(r"\n\s*", "\n", svg).strip()


def _packed(svg):
    """gzip, then base64: what the page's DecompressionStream reads back."""
    return base64.b64encode(gzip.compress(svg.encode(), mtime=0)).decode("ascii")


def _template(name):
    with open(os.path.join(_HERE, name), encoding="utf-8") as f:
        return f.read()
