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

`explore(loss, model, "graph.html")` writes one self-contained page to open and close modules in,
hover nodes for their shapes and statistics, search, and follow gradients (docs/explore.md);
`to_json(loss, model)` gives the same data as JSON, described by `SCHEMA`.
"""
from ..tensor import Tensor
from .dot import graph_title, render, to_dot
from .explore import explore
from .graph_json import SCHEMA, to_json
from .scopes import Levels, collapse
from .walk import check_expand, names_of, walk_graph

__all__ = ["draw", "draw_backward", "render", "explore", "to_json", "SCHEMA"]


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
    names, classes = names_of(params)
    levels = Levels(classes)
    items, edges, saved_total = walk_graph(output, names, levels, backward, show_values, show_grad)
    expand = [expand] if isinstance(expand, str) else list(expand or ())
    check_expand(expand, items, levels)
    items, edges = collapse(items, edges, levels, depth, expand, summarize_repeats)
    title = graph_title(items, backward, saved_total if show_memory else None)
    return to_dot(items, edges, levels, classes, title, rankdir,
                  dict(values=show_values, grad=show_grad, memory=show_memory, steps=backward))


def draw_backward(output, params=None, **options):
    """`draw(output, params, backward=True, ...)`: the graph backward() walks, in walk order."""
    return draw(output, params, backward=True, **options)
