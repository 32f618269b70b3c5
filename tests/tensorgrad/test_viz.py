"""tensorgrad.viz: graph structure (nodes, edges, labels, clusters, collapsing), the backward view,
highlighting, and rendering with Graphviz's `dot` (SVG parsed back with xml.etree)."""
import html
import math
import re
import shutil
import time
import xml.etree.ElementTree as ET

import pytest

import tensorgrad as tg
from tensorgrad import autograd, nn, viz
from tensorgrad.viz.text import number

graphviz = pytest.importorskip("graphviz")
needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz's `dot` binary is not installed "
                                      "(apt-get install graphviz)")


# --- reading a drawing back ---------------------------------------------------------------------
class Drawing:
    """The DOT text of a drawing, parsed: nodes (id -> label text), their clusters, and edges."""

    def __init__(self, graph):
        self.graph = graph
        self.labels, self.clusters, self.styles, self.edges = {}, {}, {}, []
        stack = []
        for line in graph.source.splitlines():
            line = line.strip()
            if line.startswith("subgraph cluster_"):
                stack.append(None)
            elif line == "}" and stack:
                stack.pop()
            elif stack and stack[-1] is None and line.startswith('label=""'):
                stack[-1] = ""  # the borderless cluster around one module box
            elif stack and stack[-1] is None and line.startswith("color="):
                stack[-1] = _text(re.search(r"label=<(.*)> labeljust", line).group(1))
            elif re.match(r"n\d+ -> n\d+", line):
                self.edges.append(tuple(line.split(" -> ")))
            elif re.match(r"n\d+ \[", line):
                node = line.split(" ", 1)[0]
                self.labels[node] = _text(re.search(r"label=<(.*)> color=", line).group(1))
                self.clusters[node] = [c for c in stack if c]
                self.styles[node] = line

    def titles(self):
        return sorted(label.split("\n")[0] for label in self.labels.values())

    def find(self, title):
        """Node ids whose first label line is `title`."""
        return [n for n, label in self.labels.items() if label.split("\n")[0] == title]

    def edge_titles(self):
        first = {n: label.split("\n")[0] for n, label in self.labels.items()}
        return sorted((first[a], first[b]) for a, b in self.edges)


def _text(label):
    """An HTML-like label as plain text, one line per <br/>."""
    lines = re.split(r"<br/>", label)
    return "\n".join(html.unescape(re.sub(r"<[^>]*>", "", line)) for line in lines)


def micrograd_expression():
    """micrograd's README example: L = (a * b + c) * f."""
    a = tg.tensor(2.0, requires_grad=True)
    b = tg.tensor(-3.0, requires_grad=True)
    c = tg.tensor(10.0, requires_grad=True)
    f = tg.tensor(-2.0, requires_grad=True)
    loss = (a * b + c) * f
    return loss, {"a": a, "b": b, "c": c, "f": f}


# --- scalar expressions -------------------------------------------------------------------------
def test_scalar_expression_structure():
    loss, names = micrograd_expression()
    d = Drawing(viz.draw(loss, names))
    assert d.titles() == ["a", "add", "b", "c", "f", "mul", "mul"]
    assert len(d.edges) == 6
    assert d.edge_titles() == sorted([("a", "mul"), ("b", "mul"), ("mul", "add"), ("c", "add"),
                                      ("add", "mul"), ("f", "mul")])
    assert all(path == [] for path in d.clusters.values())  # no module: no cluster
    assert "scalar float32" in d.labels[d.find("a")[0]]
    assert isinstance(d.graph, graphviz.Digraph)


def test_values_and_gradients_like_micrograd():
    loss, names = micrograd_expression()
    d = Drawing(viz.draw(loss, names, show_values=True, show_grad=True))
    label = {title: d.labels[d.find(title)[0]] for title in "abcf"}
    assert "data 2.0" in label["a"] and "grad 6.0" in label["a"]
    assert "data -3.0" in label["b"] and "grad -4.0" in label["b"]
    assert "grad -2.0" in label["c"] and "grad 4.0" in label["f"]
    ops = sorted(d.labels[n] for n in d.find("mul") + d.find("add"))
    assert any("data -6.0" in x and "grad -2.0" in x for x in ops)  # a * b, recomputed for drawing
    assert any("data 4.0" in x and "grad -2.0" in x for x in ops)
    assert any("data -8.0" in x and "grad 1.0" in x for x in ops)
    assert all(t.grad is None for t in names.values())  # drawing never fills .grad
    loss.backward()  # and the graph is still usable
    assert names["a"].grad.item() == 6.0


def test_constants_are_drawn_from_recorded_shapes():
    x = tg.randn(3, 4)
    w = tg.randn(4, 2, requires_grad=True)
    y = (tg.randn(3, 2) + x @ w) * 0.5
    d = Drawing(viz.draw(y, {"x": x, "w": w}))
    assert d.titles() == ["add", "constant", "matmul", "mul(·, 0.5)", "w", "x"]
    assert "(3, 4) float32" in d.labels[d.find("x")[0]]     # named: matmul saved it
    assert "(3, 2) float32" in d.labels[d.find("constant")[0]]
    assert "dashed" in d.styles[d.find("x")[0]] and "dashed" not in d.styles[d.find("w")[0]]
    assert ("x", "matmul") in d.edge_titles()


def test_unnamed_leaf_is_an_input_and_no_parameter():
    x = tg.randn(3, requires_grad=True)
    d = Drawing(viz.draw((x * x).sum()))
    assert d.titles() == ["input", "mul", "sum"]
    assert 'label="graph: 2 ops"' in d.graph.source  # 3 elements, but not a parameter


def test_output_that_is_a_leaf():
    w = tg.randn(2, requires_grad=True)
    assert Drawing(viz.draw(w, {"w": w})).titles() == ["w"]


# --- scopes: clusters, depth, expand ------------------------------------------------------------
def scoped_graph():
    """Two 'blocks' with an 'attn' and an 'mlp' inside each, and a head at the root scope."""
    x = tg.randn(3, 4)
    params = {f"blocks.{i}.{m}.weight": tg.randn(4, 4, requires_grad=True)
              for i in range(2) for m in ("attn", "mlp")}
    h = x
    for i in range(2):
        with tg.scope(f"blocks.{i}"):
            with tg.scope("attn"):
                a = (h @ params[f"blocks.{i}.attn.weight"]).softmax(-1)
            h = h + a
            with tg.scope("mlp"):
                h = h + (h @ params[f"blocks.{i}.mlp.weight"]).relu()
    return h.sum(), params


def test_clusters_follow_nested_scopes():
    loss, params = scoped_graph()
    d = Drawing(viz.draw(loss, params))
    assert d.clusters[d.find("sum")[0]] == []
    softmaxes = d.find("softmax")
    assert sorted(d.clusters[n] for n in softmaxes) == [["blocks.0", "blocks.0.attn"],
                                                        ["blocks.1", "blocks.1.attn"]]
    weight = d.find("blocks.1.mlp.weight")[0]
    assert d.clusters[weight] == ["blocks.1", "blocks.1.mlp"]  # a parameter sits with its module
    assert len(d.find("add")) == 4 and len(d.find("matmul")) == 4


def test_depth_collapses_modules_and_keeps_edges_between_them():
    loss, params = scoped_graph()
    d = Drawing(viz.draw(loss, params, depth=1))
    assert d.titles() == ["blocks.0", "blocks.1", "sum"]  # the input x is used only in blocks.0
    assert d.edge_titles() == [("blocks.0", "blocks.1"), ("blocks.1", "sum")]
    box = d.labels[d.find("blocks.0")[0]]
    assert "6 ops" in box and "32 params" in box
    assert "box3d" in d.styles[d.find("blocks.0")[0]]

    d2 = Drawing(viz.draw(loss, params, depth=2))  # attn and mlp become boxes inside blocks.N
    assert sorted(d2.titles()) == sorted(["add", "add", "blocks.0.attn", "blocks.0.mlp",
                                          "blocks.1.attn", "blocks.1.mlp", "constant", "sum"])
    assert d2.clusters[d2.find("constant")[0]] == ["blocks.0"]
    assert d2.clusters[d2.find("blocks.1.mlp")[0]] == ["blocks.1"]
    assert len(d2.edges) == len(set(d2.edges))


def test_expand_opens_one_module_in_full():
    loss, params = scoped_graph()
    d = Drawing(viz.draw(loss, params, depth=1, expand="blocks.1"))
    titles = d.titles()
    assert "blocks.0" in titles and "blocks.1" not in titles and "softmax" in titles
    assert d.clusters[d.find("softmax")[0]] == ["blocks.1", "blocks.1.attn"]
    assert ("blocks.0", "add") in d.edge_titles() and ("blocks.0", "matmul") in d.edge_titles()
    inner = Drawing(viz.draw(loss, params, depth=1, expand="blocks.1.attn"))
    assert "blocks.1.mlp" in inner.titles() and "softmax" in inner.titles()
    with pytest.raises(ValueError, match="expand='blocks.7' names no module.*'blocks.0'"):
        viz.draw(loss, params, depth=1, expand="blocks.7")


def test_repeated_blocks_are_summarised():
    x = tg.randn(2, 3, requires_grad=True)
    for i in range(6):
        with tg.scope(f"layers.{i}"):
            x = x.tanh() * 2.0
    d = Drawing(viz.draw(x.sum(), depth=1, summarize_repeats=True))
    assert d.titles() == ["layers.0", "layers.1 … layers.4 (×4)", "layers.5", "sum"]
    assert "8 ops" in d.labels[d.find("layers.1 … layers.4 (×4)")[0]]
    assert d.edge_titles() == [("layers.0", "layers.1 … layers.4 (×4)"),
                               ("layers.1 … layers.4 (×4)", "layers.5"), ("layers.5", "sum")]


# --- backward view ------------------------------------------------------------------------------
def test_backward_view_numbers_nodes_in_walk_order():
    loss, params = scoped_graph()
    order = autograd._topological_order([loss._node])
    d = Drawing(viz.draw_backward(loss, params))
    numbered = {int(re.match(r"#(\d+) ", label).group(1)): label.split("\n")[0].split(" ", 1)[1]
                for label in d.labels.values() if label.startswith("#")}
    assert numbered == {i + 1: node.prim.name for i, node in enumerate(order)}
    assert "constant" not in d.titles()  # no gradient flows into constants
    weight = d.find("blocks.0.attn.weight")[0]
    assert [a for a, b in d.edges if b == weight] and not [b for a, b in d.edges if a == weight]
    first = [n for n, label in d.labels.items() if label.startswith("#1 ")][0]
    assert [a for a, b in d.edges if b == first] == []  # backward starts at the output
    boxes = Drawing(viz.draw(loss, params, backward=True, depth=1))
    assert "steps" in boxes.labels[boxes.find("blocks.1")[0]]


def test_released_graph_gives_a_clear_error():
    loss, names = micrograd_expression()
    loss.backward(retain_graph=True)
    assert len(Drawing(viz.draw(loss, names)).labels) == 7  # retained: still drawable
    loss.backward()
    with pytest.raises(RuntimeError, match=r"freed by backward\(\).*retain_graph=True"):
        viz.draw(loss, names)


# --- highlighting ------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:divide by zero", "ignore:invalid value")
def test_nan_and_inf_are_red():
    x = tg.tensor([1.0, 0.0], requires_grad=True)
    y = (x.log() * x).sum()  # log(0) = -inf, -inf * 0 = nan
    d = Drawing(viz.draw(y, {"x": x}, show_values=True))
    red = {d.labels[n].split("\n")[0] for n, style in d.styles.items() if "#ff8a8a" in style}
    assert red == {"log", "mul", "sum"}
    assert "data nan" in d.labels[d.find("sum")[0]]


def test_requires_grad_and_constants_have_different_fills():
    x = tg.randn(3)
    w = tg.randn(3, requires_grad=True)
    d = Drawing(viz.draw((x * w).sum(), {"x": x, "w": w}))
    fills = {t: re.search(r'fillcolor="(#\w+)"', d.styles[d.find(t)[0]]).group(1)
             for t in ("x", "w", "mul")}
    assert len(set(fills.values())) == 3


def test_memory_of_saved_activations():
    x = tg.randn(8, 16)
    w = tg.randn(16, 32, requires_grad=True)
    y = (x @ w).tanh().sum()
    d = Drawing(viz.draw(y, {"w": w}, show_memory=True))
    # matmul saves x (8*16 float32; w is a parameter, not counted); tanh saves its output
    assert "saved 512 B" in d.labels[d.find("matmul")[0]]
    assert "saved 1.0 KB" in d.labels[d.find("tanh")[0]]
    assert "1.5 KB saved for backward" in d.graph.source


def test_params_from_an_object_with_named_parameters():
    class Tiny:
        def __init__(self):
            self.w = tg.randn(2, 2, requires_grad=True)

        def named_parameters(self):
            return [("layer.weight", self.w)]

        def named_modules(self):
            return [("", self), ("layer", self)]

    model = Tiny()
    with tg.scope("layer"):
        y = (tg.randn(2) @ model.w).sum()
    d = Drawing(viz.draw(y, model))
    assert d.find("layer.weight") and d.clusters[d.find("sum")[0]] == ["layer (Tiny)"]


def test_values_gradients_and_memory_on_every_device(device):
    x = tg.randn(3, device=device)
    w = tg.randn(3, device=device, requires_grad=True)
    y = (x * w).tanh().sum()
    d = Drawing(viz.draw(y, {"x": x, "w": w}, show_values=True, show_grad=True,
                         show_memory=True))
    tanh = d.labels[d.find("tanh")[0]]
    assert "data [" in tanh and "grad [" in tanh and "saved 12 B" in tanh
    expected = (1 - (x * w).tanh() ** 2) * x  # d/dw sum(tanh(x * w))
    shown = d.labels[d.find("w")[0]].split("grad ")[1]
    assert shown == "[" + ", ".join(number(v) for v in expected.tolist()) + "]"


def test_bad_arguments():
    loss, _ = micrograd_expression()
    with pytest.raises(TypeError, match="draw: expected a Tensor"):
        viz.draw([loss])
    with pytest.raises(ValueError, match="depth must be a positive int"):
        viz.draw(loss, depth=0)
    with pytest.raises(TypeError, match="params must be a mapping"):
        viz.draw(loss, params=[1, 2])


# --- modules: an MLP, a transformer block, a 4-layer stack -------------------------------------
def mlp():
    return nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))


def test_mlp_grouped_by_module():
    model = mlp()
    loss = model(tg.randn(4, 3)).sum()
    d = Drawing(viz.draw(loss, model))
    cluster_of = {title: d.clusters[d.find(title)[0]] for title in ("0.weight", "relu", "2.bias")}
    assert cluster_of == {"0.weight": ["0 (Linear)"], "relu": ["1 (ReLU)"],
                          "2.bias": ["2 (Linear)"]}
    assert len(d.find("linear")) == 2 and len(d.find("sum")) == 1
    assert len(d.find("constant")) == 1  # the input batch, saved by the first linear
    params = [t for t in d.titles() if t.endswith(("weight", "bias"))]
    assert sorted(params) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    assert "50 parameters" in d.graph.source  # 3*8 + 8 + 8*2 + 2
    boxes = Drawing(viz.draw(loss, model, depth=1))
    assert boxes.titles() == ["0 (Linear)", "1 (ReLU)", "2 (Linear)", "sum"]
    assert boxes.edge_titles() == [("0 (Linear)", "1 (ReLU)"), ("1 (ReLU)", "2 (Linear)"),
                                   ("2 (Linear)", "sum")]
    assert "1 op, 32 params" in boxes.labels[boxes.find("0 (Linear)")[0]]  # 3*8 + 8
    assert boxes.labels[boxes.find("1 (ReLU)")[0]].endswith("\n1 op")


class SelfAttention(nn.Module):
    """Causal multi-head self-attention from matmul, softmax and a tril mask."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.heads
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.reshape(B, T, self.heads, hs).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.mT) * (1.0 / math.sqrt(hs))  # (B, nh, T, hs) @ (B, nh, hs, T) -> (B, nh, T, T)
        future = tg.tril(tg.ones(T, T)) == 0
        att = att.masked_fill(future, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)  # (B, nh, T, hs) -> (B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    """Pre-LN transformer block: x + attn(ln_1(x)), then + mlp(ln_2(x))."""

    def __init__(self, dim, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Stack(nn.Module):
    """A GPT-like language model: embeddings, `layers` blocks, final norm, head."""

    def __init__(self, vocab=32, dim=16, heads=2, layers=4, context=8):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids, targets):
        B, T = ids.shape
        x = self.wte(ids) + self.wpe(tg.arange(T))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return tg.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))


def test_transformer_block_grouped_and_collapsed():
    block = Block(8, 2)
    x = tg.randn(2, 4, 8, requires_grad=True)  # unnamed: drawn as "input"
    out = block(x).sum()
    d = Drawing(viz.draw(out, block))
    assert len(d.find("layer_norm")) == 2 and len(d.find("softmax")) == 1
    assert len(d.find("linear")) == 4 and len(d.find("matmul")) == 2  # q @ k^T and att @ v
    softmax = d.find("softmax")[0]
    assert d.clusters[softmax] == ["attn (SelfAttention)"]
    assert d.clusters[d.find("attn.c_attn.weight")[0]] == ["attn (SelfAttention)",
                                                          "attn.c_attn (Linear)"]
    assert d.clusters[d.find("mlp.2.bias")[0]] == ["mlp (Sequential)", "mlp.2 (Linear)"]

    top = Drawing(viz.draw(out, block, depth=1))
    attn, mlp, ln_1, ln_2 = ("attn (SelfAttention)", "mlp (Sequential)", "ln_1 (LayerNorm)",
                             "ln_2 (LayerNorm)")
    assert top.titles() == sorted(["add", "add", attn, ln_1, ln_2, mlp, "sum", "input"])
    assert top.edge_titles() == sorted([
        ("input", ln_1), ("input", "add"), (ln_1, attn), (attn, "add"), ("add", ln_2),
        ("add", "add"), (ln_2, mlp), (mlp, "add"), ("add", "sum")])

    opened = Drawing(viz.draw(out, block, depth=1, expand="attn"))
    assert "softmax" in opened.titles() and mlp in opened.titles()
    assert "attn.c_attn (Linear)" not in opened.titles()  # drawn in full, not as a box


def test_four_layer_stack_draws_and_collapses():
    model = Stack()
    ids = tg.randint(0, 32, (2, 8))
    loss = model(ids, tg.randint(0, 32, (2, 8)))
    start = time.perf_counter()
    full = viz.draw(loss, model, show_memory=True)
    seconds = time.perf_counter() - start
    d = Drawing(full)
    assert len(d.labels) > 150
    # About 0.04 s here. The bound only catches a walk gone quadratic (minutes at this size), so
    # a loaded 2-core machine cannot trip it.
    assert seconds < 30.0, f"drawing {len(d.labels)} nodes took {seconds:.2f} s"
    top = Drawing(viz.draw(loss, model, depth=1))
    blocks = [f"blocks.{i} (Block)" for i in range(4)]
    others = ["wte (Embedding)", "wpe (Embedding)", "ln_f (LayerNorm)", "head (Linear)"]
    assert set(blocks + others + ["cross_entropy"]) <= set(top.titles())
    chain = list(zip(blocks, blocks[1:] + others[2:]))
    assert set(chain) <= set(top.edge_titles())
    assert len(top.edges) == len(set(top.edges))
    short = Drawing(viz.draw(loss, model, depth=1, summarize_repeats=True))
    assert "blocks.1 … blocks.2 (×2)" in short.titles()
    focused = Drawing(viz.draw(loss, model, depth=1, expand="blocks.2"))
    assert "blocks.2 (Block)" not in focused.titles() and blocks[3] in focused.titles()
    assert len(focused.find("softmax")) == 1


# --- rendering ----------------------------------------------------------------------------------
SVG = "{http://www.w3.org/2000/svg}"


def _svg_groups(svg_text):
    root = ET.fromstring(svg_text)
    groups = {}
    for g in root.iter(SVG + "g"):
        groups.setdefault(g.get("class"), []).append(g)
    return groups


@needs_dot
def test_render_real_svg(tmp_path):
    loss, params = scoped_graph()
    graph = viz.draw(loss, params)
    path = viz.render(graph, str(tmp_path / "sub" / "graph.svg"))
    groups = _svg_groups(open(path, encoding="utf-8").read())
    d = Drawing(graph)
    assert len(groups["node"]) == len(d.labels)
    assert len(groups["edge"]) == len(d.edges)
    assert len(groups["cluster"]) == 6  # blocks.N and blocks.N.{attn, mlp}
    texts = {t.text for t in ET.parse(path).getroot().iter(SVG + "text")}
    assert {"softmax", "blocks.0.attn", "blocks.1.mlp.weight"} <= texts
    png = viz.render(graph, str(tmp_path / "graph.png"))
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert graph._repr_mimebundle_(include=["image/svg+xml"])["image/svg+xml"].lstrip() \
        .startswith("<?xml")  # Jupyter shows it inline


def _boxes(svg_text):
    """title -> (x0, y0, x1, y1) of every node's and cluster's polygons, from the SVG."""
    boxes = {}
    for g in ET.fromstring(svg_text).iter(SVG + "g"):
        if g.get("class") not in ("node", "cluster"):
            continue
        shapes = [e.get("points") or e.get("d") for e in g if e.tag in (SVG + "polygon",
                                                                         SVG + "path")]
        points = [tuple(map(float, p)) for shape in shapes
                  for p in re.findall(r"(-?[\d.]+),(-?[\d.]+)", shape)]
        if points:  # a borderless cluster draws nothing
            xs, ys = [p[0] for p in points], [p[1] for p in points]
            text = " ".join((t.text or "").strip() for t in g.iter(SVG + "text"))
            boxes[text] = (min(xs), min(ys), max(xs), max(ys))
    return boxes


@needs_dot
def test_collapsed_boxes_stand_clear_of_an_opened_cluster():
    from tensorgrad.models import GPT, GPTConfig
    config = GPTConfig.mini()
    model = GPT(config)
    ids = tg.randint(0, config.vocab_size, (2, 16))
    _, loss = model(ids, ids)
    graph = viz.draw(loss, model, depth=1, expand="blocks.1")  # examples/: gpt_block1.png
    boxes = _boxes(graph.pipe(format="svg").decode())
    opened = next(box for text, box in boxes.items() if text.startswith("blocks.1 (Decoder"))
    for text, (x0, y0, x1, y1) in boxes.items():
        if re.match(r"blocks\.[023] \(DecoderBlock\)", text):
            gap = max(opened[0] - x1, x0 - opened[2], opened[1] - y1, y0 - opened[3])
            assert gap >= 16, f"{text!r} at {(x0, y0, x1, y1)} touches blocks.1 at {opened}"


def test_missing_dot_explains_how_to_install(monkeypatch, tmp_path):
    loss, names = micrograd_expression()
    graph = viz.draw(loss, names)
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` anywhere on PATH
    assert "digraph" in graph.source  # the DOT text needs no binary
    for attempt in (lambda: viz.render(graph, str(tmp_path / "g.svg")),
                    lambda: graph.render(str(tmp_path / "g"), format="png"),
                    lambda: graph._repr_mimebundle_(include=["image/svg+xml"])):
        with pytest.raises(RuntimeError, match="apt-get install graphviz.*brew install graphviz"):
            attempt()
    with pytest.raises(ValueError, match="cannot tell the format"):
        viz.render(graph, str(tmp_path / "graph"))
