"""A computation graph as JSON: every op and tensor with its module, shapes, dtypes, devices,
value statistics and gradient norm, the module tree, and where NaN or Inf first appeared.

`SCHEMA` is the JSON Schema of what `to_json` writes; the explorer embeds the same data.
"""
import json
import math

from .scopes import Levels
from .text import natural_order
from .walk import names_of, nonfinite, walk_graph

VERSION = 1

_STATS = {"type": ["object", "null"], "required": ["numel", "min", "max", "mean", "std", "nan",
                                                   "inf"],
          "description": "statistics of the finite elements (null when none is), and how many "
                         "elements are NaN and how many infinite; null when the value is unknown",
          "properties": {"numel": {"type": "integer"}, "nan": {"type": "integer"},
                         "inf": {"type": "integer"},
                         **{k: {"type": ["number", "null"]}
                            for k in ("min", "max", "mean", "std")}}}
_SHAPE = {"type": "array", "items": {"type": "integer"}}

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "tensorgrad computation graph",
    "type": "object",
    "required": ["format", "version", "title", "root", "parameters", "modules", "nodes", "edges",
                 "nonfinite"],
    "properties": {
        "format": {"const": "tensorgrad.graph"},
        "version": {"const": VERSION},
        "title": {"type": "string"},
        "root": {"type": "string", "description": "id of the node that produced the output"},
        "parameters": {"type": "integer", "description": "elements in the named parameters"},
        "modules": {"type": "array", "description": "every module path that holds a node, with "
                    "its ancestors; a list index is no level of its own ('blocks.0')",
                    "items": {"type": "object", "required": ["path", "parent", "level", "class"],
                              "properties": {
                                  "path": {"type": "string"},
                                  "parent": {"type": "string", "description": "'' at the top"},
                                  "level": {"type": "integer", "minimum": 1},
                                  "class": {"type": ["string", "null"]}}}},
        "nodes": {"type": "array", "description": "inputs before the ops that read them",
                  "items": {"type": "object",
                            "required": ["id", "kind", "name", "module", "shape", "dtype",
                                         "device", "inputs", "stats", "grad", "nonfinite"],
                            "properties": {
                                "id": {"type": "string"},
                                "kind": {"enum": ["op", "param", "input", "const"]},
                                "name": {"type": "string", "description": "the primitive of an "
                                         "op; a tensor's dotted name, or input / constant"},
                                "module": {"type": "string", "description": "module path the "
                                           "op ran in ('' for none)"},
                                "shape": _SHAPE, "dtype": {"type": "string"},
                                "device": {"type": "string"},
                                "inputs": {"type": "array", "description": "an op's inputs in "
                                           "order; node is null for a one-element constant "
                                           "written into the op's name",
                                           "items": {"type": "object",
                                                     "required": ["node", "shape", "dtype"],
                                                     "properties": {
                                                         "node": {"type": ["string", "null"]},
                                                         "shape": _SHAPE,
                                                         "dtype": {"type": "string"}}}},
                                "stats": _STATS,
                                "grad": {"type": ["object", "null"], "description": "d(output)/d"
                                         "(this value), the gradient backward computes; null "
                                         "when not asked for or none flows",
                                         "required": ["norm", "nan", "inf"],
                                         "properties": {"norm": {"type": ["number", "null"]},
                                                        "nan": {"type": "integer"},
                                                        "inf": {"type": "integer"}}},
                                "nonfinite": {"type": "boolean"}}}},
        "edges": {"type": "array", "description": "[from, to]: a value flowing into an op",
                  "items": {"type": "array", "items": {"type": "string"}, "minItems": 2,
                            "maxItems": 2}},
        "nonfinite": {"type": "object", "required": ["forward", "backward"],
                      "description": "where NaN/Inf first appeared, by detect_anomaly's test: "
                      "forward, ops whose output has one while their inputs have none (and "
                      "leaves that hold one); backward, ops whose gradient rule made one from a "
                      "finite gradient",
                      "properties": {"forward": {"type": "array", "items": {"type": "string"}},
                                     "backward": {"type": "array",
                                                  "items": {"type": "string"}}}},
    },
}


def to_json(output, params=None, *, values=True, grads=True, indent=None):
    """The graph that produced `output` as JSON text, in the form `SCHEMA` describes.

    output, params: as for `draw` (draw before backward(), or after backward(retain_graph=True)).
    values: statistics (min, max, mean, std, NaN/Inf counts) of every value, recomputing the
        ones the graph did not keep at about the cost of one forward pass; False gives them
        only for the values it kept (leaves, and what the gradient rules read).
    grads: the norm of d(output)/d(value) at every node (of output.sum() for a non-scalar
        output), from one extra backward walk that leaves every `.grad` alone.
    """
    return json.dumps(graph_data(output, params, values=values, grads=grads)[0], indent=indent)


class Walked:
    """A walked graph kept for laying it out: items and edges by key, levels, classes, ids."""

    def __init__(self, items, edges, levels, classes, ids):
        self.items, self.edges, self.levels, self.classes, self.ids = (items, edges, levels,
                                                                        classes, ids)


def graph_data(output, params=None, *, values=True, grads=True):
    """(the JSON document as a dict, the Walked graph it came from)."""
    names, classes = names_of(params)
    levels = Levels(classes)
    grads = grads and output.is_floating_point() and output._node is not None
    items, edges, _ = walk_graph(output, names, levels, False, values, grads)
    keys = _inputs_first(items)
    ids = {key: f"n{i}" for i, key in enumerate(keys)}
    nodes = [_node(key, items[key], ids) for key in keys]
    data = {"format": "tensorgrad.graph", "version": VERSION,
            "title": "", "root": next(ids[k] for k in keys if items[k].root),
            "parameters": sum(item.numel for item in items.values()),
            "modules": _modules(items, levels, classes),
            "nodes": nodes, "edges": [[ids[a], ids[b]] for a, b in edges],
            "nonfinite": _first_nonfinite(items, edges, ids)}
    ops = sum(item.ops for item in items.values())
    data["title"] = f"{ops} ops" + (f", {data['parameters']:,} parameters"
                                    if data["parameters"] else "")
    return data, Walked(items, edges, levels, classes, ids)


def _inputs_first(items):
    """Ops producers first, each tensor just before the first op that reads it."""
    keys = {}
    for key in reversed(list(items)):
        if key[0] == "op":
            keys.update((k, None) for k, _, _ in items[key].inputs if k is not None)
            keys[key] = None
    keys.update((k, None) for k in items)  # an output that is a leaf
    return list(keys)


def _node(key, item, ids):
    return {"id": ids[key], "kind": item.kind, "name": item.title, "module": item.scope or "",
            "shape": list(item.shape), "dtype": item.dtype.name, "device": item.device,
            "inputs": [{"node": ids[key] if key is not None else None, "shape": list(shape),
                        "dtype": dtype.name} for key, shape, dtype in item.inputs],
            "stats": _stats(item.value), "grad": _grad(item.grad),
            "nonfinite": nonfinite(item.value)}


def _modules(items, levels, classes):
    paths = {}
    for item in items.values():
        parts = levels(item.scope or "")
        for k in range(1, len(parts) + 1):
            paths[".".join(parts[:k])] = k
    return [{"path": path, "parent": levels.parent(path), "level": level,
             "class": classes.get(path)}
            for path, level in sorted(paths.items(), key=lambda p: natural_order(p[0]))]


def _stats(t):
    if t is None:
        return None
    xp = t._backend
    data = t.data
    if data.dtype.kind == "b":
        data = data.astype("int64")
    finite = data[xp.isfinite(data)] if data.dtype.kind in "fc" else data.ravel()
    nan = int(xp.isnan(data).sum()) if data.dtype.kind in "fc" else 0
    stats = {"numel": int(data.size), "nan": nan, "inf": int(data.size - finite.size - nan)}
    if data.dtype.kind == "c":
        finite = abs(finite)
    empty = finite.size == 0
    for name, fn in (("min", "min"), ("max", "max"), ("mean", "mean"), ("std", "std")):
        stats[name] = None if empty else _number(getattr(finite.astype("float64"), fn)())
    return stats


def _grad(g):
    if g is None:
        return None
    data = g.data
    nan = int(g._backend.isnan(data).sum())
    inf = int(g._backend.isinf(data).sum())
    norm = float(g._backend.sqrt((abs(data.astype("float64")) ** 2).sum()))
    return {"norm": _number(norm), "nan": nan, "inf": inf}


def _number(v):
    v = float(v)
    return v if math.isfinite(v) else None


def _first_nonfinite(items, edges, ids):
    """Forward and backward origins of NaN/Inf, by the test detect_anomaly applies to each op."""
    inputs, consumers = {}, {}
    for a, b in edges:
        inputs.setdefault(b, []).append(a)
        consumers.setdefault(a, []).append(b)
    forward = [key for key, item in items.items() if nonfinite(item.value)
               and not any(nonfinite(items[k].value) for k in inputs.get(key, ()))]
    backward = [key for key, item in items.items() if item.kind == "op" and item.grad is not None
                and not nonfinite(item.grad)
                and any(nonfinite(items[k].grad) for k in inputs.get(key, ()))]
    order = list(ids)
    return {"forward": [ids[k] for k in sorted(forward, key=order.index)],
            "backward": [ids[k] for k in sorted(backward, key=order.index)]}
