"""Pictures of tensorgrad graphs: a scalar expression, an MLP, a transformer block, a GPT.

Writes SVG and PNG files into --out (out/visualize_graphs; rendering needs Graphviz's `dot`:
apt-get install graphviz, brew install graphviz or conda install graphviz):

    python examples/visualize_graphs.py            # the pictures
    python examples/visualize_graphs.py --explore  # and explorers: scalar, mlp, gpt .html
    python examples/visualize_graphs.py --quick    # a 2-layer GPT: the test suite's run

  scalar          micrograd's L = (a*b + c) * f, with every value and gradient
  mlp             an MLP's loss, each module in its own cluster
  block           one pre-LN transformer block of the GPT below, grouped by module
  block_backward  the same block's gradient graph, numbered in the order backward() walks it
  gpt             a 4-layer GPT-mini's training loss, every module collapsed to depth 1
                  (--quick: 2 layers, and no timing of dot on the whole uncollapsed graph)
  gpt_block1      the same, with blocks.1 opened in full and the saved memory per op

An explorer is one HTML file to open in any browser: open and close modules, hover a node for
its shapes and value statistics, search, and colour the graph by gradient norm.
In Jupyter, `tg.viz.draw(loss, model)` displays inline.
"""
import argparse
import os
import pathlib
import time

import tensorgrad as tg
from tensorgrad import nn, viz
from tensorgrad.models import GPT, GPTConfig
from common import HelpFormatter

parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
parser.add_argument("--explore", action="store_true",
                    help="also write explorers (scalar.html, mlp.html, gpt.html)")
parser.add_argument("--out", default=os.path.join("out", "visualize_graphs"),
                    help="folder for the pictures")
parser.add_argument("--quick", action="store_true",
                    help="a 2-layer GPT and no timed layout of its whole graph")
args = parser.parse_args()

# --- configuration -----------------------------------------------------------------------
OUT = pathlib.Path(args.out)
OUT.mkdir(parents=True, exist_ok=True)
SEED = 0
# 4 layers, 4 heads, width 128, a byte vocabulary: 0.8M parameters
CONFIG = GPTConfig.mini(n_layer=2) if args.quick else GPTConfig.mini()
CONTEXT, BATCH = 64, 8

tg.manual_seed(SEED)


def save(graph, name):
    """Write name.svg and name.png."""
    for suffix in ("svg", "png"):
        viz.render(graph, str(OUT / f"{name}.{suffix}"))


# --- 1. a scalar expression, as in micrograd's README ----------------------------------------
a = tg.tensor(2.0, requires_grad=True)
b = tg.tensor(-3.0, requires_grad=True)
c = tg.tensor(10.0, requires_grad=True)
f = tg.tensor(-2.0, requires_grad=True)
L = (a * b + c) * f
save(viz.draw(L, {"a": a, "b": b, "c": c, "f": f}, show_values=True, show_grad=True,
              rankdir="LR"), "scalar")

# --- 2. an MLP classifier ---------------------------------------------------------------------
mlp = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2))
x, y = tg.randn(32, 2), tg.randint(0, 2, (32,))
mlp_loss = tg.cross_entropy(mlp(x), y)
save(viz.draw(mlp_loss, mlp), "mlp")

# --- 3. a GPT-mini (tensorgrad.models.GPT, 4 layers) and one of its blocks -------------------
gpt = GPT(CONFIG)
ids = tg.randint(0, CONFIG.vocab_size, (BATCH, CONTEXT))
_, loss = gpt(ids, tg.randint(0, CONFIG.vocab_size, (BATCH, CONTEXT)))

block = gpt.blocks[0]  # called on its own, its modules are named from it: attn_norm, self_attn ...
out = block(tg.randn(BATCH, CONTEXT, CONFIG.n_embd, requires_grad=True)).square().mean()
save(viz.draw(out, block), "block")
save(viz.draw_backward(out, block), "block_backward")

# --- 4. the whole GPT-mini: one box per module, then with blocks.1 opened ----------------------
if not args.quick:
    start = time.perf_counter()
    full = viz.draw(loss, gpt, show_memory=True)  # every op: the graph a user meets first
    drawn = time.perf_counter() - start
    start = time.perf_counter()
    full.pipe(format="svg")
    laid_out = time.perf_counter() - start
save(viz.draw(loss, gpt, depth=1), "gpt")
save(viz.draw(loss, gpt, depth=1, expand="blocks.1", show_memory=True), "gpt_block1")

# --- 5. explorers: the same graphs as pages to open, search and follow gradients in ------------
if args.explore:
    start = time.perf_counter()
    viz.explore(L, {"a": a, "b": b, "c": c, "f": f}, str(OUT / "scalar.html"))
    viz.explore(mlp_loss, mlp, str(OUT / "mlp.html"))
    viz.explore(loss, gpt, str(OUT / "gpt.html"))
    print(f"explorers written in {time.perf_counter() - start:.1f} s")

# --- results ----------------------------------------------------------------------------------
if not args.quick:
    ops = full.source.count("[label=<")
    print(f"GPT-mini ({CONFIG.n_layer} layers, {gpt.num_parameters():,} parameters): {ops} nodes "
          f"drawn in {drawn * 1000:.0f} ms, laid out by dot in {laid_out:.2f} s")
print(f"pictures in {OUT}: " + ", ".join(sorted(p.name for p in OUT.iterdir())))
