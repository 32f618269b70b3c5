"""Random op graphs against PyTorch in float64: values, gradients of every input, and
Hessian-vector products (fuzz_graphs.py draws and compares; fuzz_ops.py is the op table).

The default run checks a few hundred derandomized graphs, so CI sees the same ones every time;
`-m slow` checks 5,000. TENSORGRAD_FUZZ_EXAMPLES=N changes the default run's count and
TENSORGRAD_FUZZ_SEED=S draws other graphs, from seed S, for hunting. A failure prints the graph
as a program that runs against either framework.
"""
import os

import pytest

torch = pytest.importorskip("torch")

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

import tensorgrad as tg  # noqa: E402
import fuzz_graphs as fg  # noqa: E402
from fuzz_ops import NOT_FUZZED, OPS  # noqa: E402

EXAMPLES = int(os.environ.get("TENSORGRAD_FUZZ_EXAMPLES", 300))
SLOW_EXAMPLES = 5000
SEED = os.environ.get("TENSORGRAD_FUZZ_SEED")
# Two values of every shape, so an entry with distinct operands of one shape finds them.
POOL = [(), (2,), (4,), (3,), (2, 3), (3, 4), (2, 3, 4), (2, 3, 2), (3, 2, 2), (1, 2, 3, 4),
        (2, 2, 2, 2)] * 2


def fuzz(examples, **extra):
    """Hypothesis settings for a fuzz run: fixed examples unless TENSORGRAD_FUZZ_SEED is set."""
    chosen = settings(max_examples=examples, deadline=None, derandomize=SEED is None,
                      database=None if SEED is None else settings.default.database,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                             HealthCheck.data_too_large], **extra)
    return lambda test: chosen(seed(int(SEED))(test) if SEED else test)


@fuzz(EXAMPLES)
@given(fg.graphs())
def test_random_graphs_match_torch(graph):
    fg.check(graph)


@pytest.mark.slow
@fuzz(SLOW_EXAMPLES)
@given(fg.graphs())
def test_random_graphs_match_torch_long(graph):
    fg.check(graph)


def test_every_entry_matches_torch_and_every_primitive_is_fuzzed():
    """Each entry of the op table on its own (3 graphs), so a rarely drawn entry is still
    compared; together they must reach every differentiable primitive not in NOT_FUZZED."""
    reached = set()

    for op in OPS:
        @fuzz(3)
        @given(fg.graphs(ops=(op,), min_ops=1, max_ops=2, shapes=POOL))
        def entry(graph):
            reached.update(fg.check(graph))

        entry()
    differentiable = {name for name, p in tg.PRIMITIVES.items() if p.differentiable}
    missing = sorted(differentiable - reached - set(NOT_FUZZED))
    assert not missing, (f"differentiable primitives no entry in tests/fuzz/fuzz_ops.py reaches: "
                         f"{missing}; add an Op for each (or a reason to NOT_FUZZED)")
    stale = sorted(set(NOT_FUZZED) - set(tg.PRIMITIVES))
    assert not stale, f"NOT_FUZZED names primitives that do not exist: {stale}"


def test_graphs_have_fan_out_and_dead_branches():
    """The generator does what the fuzz relies on: values used twice and values unused."""
    counts = {"graphs": 0, "fan_out": 0, "dead": 0, "second_order": 0}

    @fuzz(100)
    @given(fg.graphs())
    def draw(graph):
        names = [f"x{i}" for i in range(len(graph.shapes))] + [n for n, _ in graph.steps]
        reads = [sum(fg._reads(src, n) for _, src in graph.steps) for n in names]
        counts["graphs"] += 1
        counts["fan_out"] += max(reads) > 1
        counts["dead"] += bool(graph.unused())
        counts["second_order"] += graph.second_order

    draw()
    n = counts["graphs"]
    assert counts["fan_out"] > n // 3 and counts["dead"] > n // 3, counts
    assert n // 10 < counts["second_order"] < n, counts


def _doubled(rule):
    def wrong(ctx, g):
        grads = rule(ctx, g)
        if type(grads) is not tuple:
            return None if grads is None else 2 * grads
        return tuple(None if x is None else 2 * x for x in grads)
    return wrong


@pytest.mark.parametrize("name", ["mul", "exp", "sum", "matmul", "getitem", "softmax",
                                  "layer_norm", "where"])
def test_an_injected_wrong_vjp_is_caught(monkeypatch, name):
    """The same comparison fails, naming a gradient, once one primitive's VJP returns 2 * g."""
    prim = tg.PRIMITIVES[name]
    monkeypatch.setattr(prim, "vjp", _doubled(prim.vjp))

    @fuzz(EXAMPLES, phases=[Phase.generate])
    @given(fg.graphs(ops=tuple(op for op in OPS if op.name in (name, "neg", "add", "sum"))))
    def run(graph):
        fg.check(graph)

    with pytest.raises(AssertionError, match="gradient|Hessian"):
        run()


def test_a_vjp_wrong_only_at_second_order_is_caught(monkeypatch):
    """tanh's VJP with its output detached is right at first order and wrong at second: only
    the Hessian-vector products can see it."""
    monkeypatch.setattr(tg.PRIMITIVES["tanh"], "vjp",
                        lambda ctx, g: g * (1 - ctx.out.detach() ** 2))

    @fuzz(EXAMPLES, phases=[Phase.generate])
    @given(fg.graphs(ops=tuple(op for op in OPS if op.name in ("tanh", "mul", "add", "sum"))))
    def run(graph):
        fg.check(graph)

    with pytest.raises(AssertionError, match="Hessian-vector product"):
        run()


def test_graph_prints_as_a_program():
    graph = fg.Graph(((2, 1), ()), 7, (("v0", "x0 * x1"), ("v1", "v0.sum(dim=0)"),
                                       ("v2", "x0.exp()")), second_order=True)
    text = repr(graph)
    assert "x0 = input((2, 1))" in text and "v1 = v0.sum(dim=0)" in text
    assert "output = v2  # unused: v1" in text
    fg.check(graph)
