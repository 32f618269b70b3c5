"""Walking a tensor's graph into items (ops, parameters, constants) and the edges between them.

An item is one box of the picture. Items are keyed by ("op", id(node)), ("leaf", id(tensor)) or
("const", ...), so the later steps (collapsing, DOT output) never touch the graph itself.
"""
import math

from .. import autograd
from ..autograd import Node
from ..tensor import from_array
from .text import format_values

_RELEASED = ("draw: the graph of this tensor was freed by backward(); draw it before calling "
             "backward(), or call backward(retain_graph=True) first")


class Item:
    """One box of the picture: an op, a leaf or constant tensor, or a collapsed module."""

    __slots__ = ("kind", "scope", "title", "shape", "dtype", "value", "grad", "nbytes", "steps",
                 "ops", "numel", "bad", "root", "device", "inputs")

    def __init__(self, kind, scope, title, shape=None, dtype=None, value=None, device=None):
        self.kind, self.scope, self.title = kind, scope, title
        self.shape, self.dtype, self.value, self.grad = shape, dtype, value, None
        self.device, self.inputs = device, []  # inputs: (key or None, shape, dtype) of an op
        self.nbytes, self.steps, self.ops, self.numel = 0, [], 0, 0
        self.bad, self.root = nonfinite(value), False


def names_of(params):
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


def walk_graph(output, names, levels, backward, show_values, show_grad):
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
            value = from_array(node.out_data, node.backend)
        item = Item("op", node.scope, node.prim.name, shape, dtype, value, node.backend.device)
        item.steps, item.ops, item.root = [step], 1, node is root
        item.nbytes = _saved_bytes(node, held)
        items[("op", id(node))] = item
        saved = _saved_by_input(node)
        folded = []
        for i, (parent, shape, dtype) in enumerate(zip(node.parents, node.in_shapes,
                                                       node.in_dtypes)):
            if shape is None:  # an optional input left out (a layer_norm without bias)
                continue
            item.inputs.append((None, shape, dtype))  # the key is filled in once it is known
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
            elif math.prod(shape) == 1 and (kept is None or id(kept) not in names):
                folded.append((i, kept))
                continue
            else:
                key = ("const", id(kept)) if kept is not None else ("const", id(node), i)
                if key not in items:
                    title = names.get(id(kept), "constant")
                    items[key] = Item("const", None, title, shape, dtype, kept,
                                      node.backend.device)
            item.inputs[-1] = (key, shape, dtype)
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
    """A named tensor that requires grad is a parameter; an unnamed one is an input."""
    name = names.get(id(tensor))
    kind = ("param" if name is not None else "input") if tensor.requires_grad else "const"
    title = name or ("input" if kind == "input" else "constant")
    item = Item(kind, scope, title, tensor.shape, tensor.dtype, tensor, tensor._backend.device)
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
        args[i] = format_values(kept) if kept is not None else "const"
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
            item.value = from_array(node.backend.asarray(out), node.backend)
            item.bad = item.bad or nonfinite(item.value)


def _attach_grads(output, items, order):
    """d(output)/d(each drawn tensor), from the engine itself; `.grad` fields are not touched."""
    leaves = _leaf_tensors(order)
    proxies = [from_array(None, n.backend, True, n, None) for n in order]
    seed = from_array(output._backend.ones_like(output.data), output._backend)
    grads = autograd.run_backward([output], [seed], retain_graph=True, create_graph=False,
                                  inputs=proxies + leaves)
    keys = [("op", id(n)) for n in order] + [("leaf", id(t)) for t in leaves]
    for key, g in zip(keys, grads):
        if g is not None:
            items[key].grad = g
            items[key].bad = items[key].bad or nonfinite(g)


def _leaf_tensors(order):
    seen = {}
    for node in order:
        for parent in node.parents:
            if parent is not None and type(parent) is not Node:
                seen[id(parent)] = parent
    return list(seen.values())


def check_expand(expand, items, levels):
    scopes = {item.scope for item in items.values()}
    for path in expand:
        if not any(s == path or s.startswith(path + ".") for s in scopes):
            known = sorted({levels(s)[0] for s in scopes if s})
            raise ValueError(f"draw: expand={path!r} names no module of this graph; its "
                             f"top-level modules are {known}")


def nonfinite(t):
    return (t is not None and t.data.dtype.kind in "fc"
            and not bool(t._backend.isfinite(t.data).all()))
