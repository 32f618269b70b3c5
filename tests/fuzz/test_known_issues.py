"""Mismatches with PyTorch the fuzzer found and the engine has not fixed yet, each one graph
through the same comparison, as a strict xfail: when a fix lands the case passes, the strict
xfail fails, and the flag in fuzz_params.py that keeps the fuzzer away from it can be switched on
(then delete the case here).
"""
import pytest

pytest.importorskip("torch")

import fuzz_graphs as fg  # noqa: E402


def _case(reason, shapes, *sources):
    steps = tuple((f"v{i}", src) for i, src in enumerate(sources))
    graph = fg.Graph(tuple(shapes), 0, steps, second_order=True)
    return pytest.param(graph, marks=pytest.mark.xfail(strict=True, reason=reason),
                        id=sources[-1])


ZERO_D = ("issue 13 item 4: flip and movedim with a dim on a 0-d tensor fail (PyTorch takes "
          "dim 0 / -1); fuzz_params.ZERO_D_FLIP_MOVEDIM")
SCATTER = ("found by the fuzzer: scatter_add refuses an index smaller than src, which PyTorch "
           "allows (index.size(d) <= src.size(d)); fuzz_params.SCATTER_PART_OF_SRC")
COMPOSITE = ("found by the fuzzer: with create_graph=True a fused primitive given one tensor in "
             "several slots returns its whole gradient once per slot (autograd._composite_vjp); "
             "fuzz_params.COMPOSITE_FAN_OUT")

CASES = [
    _case(ZERO_D, [()], "x0.flip((0,))"),
    _case(ZERO_D, [()], "x0.movedim(0, -1)"),
    _case(SCATTER, [(3,), (4,)], "x0.scatter_add(0, T.tensor([0, 2]), x1)"),
    _case(SCATTER, [(2, 3), (2, 3)], "x0.scatter_add(1, T.tensor([[0], [2]]), x1)"),
    _case(COMPOSITE, [(2, 3)], "F.scaled_dot_product_attention(x0, x0, x0)"),
    _case(COMPOSITE, [(1,)], "-(x0 ** 2)", "F.layer_norm(v0, v0.shape, v0, v0)"),
    _case(COMPOSITE, [(3,)], "F.rms_norm(x0, x0.shape, x0)"),
    _case(COMPOSITE, [(1, 1, 2)], "F.conv1d(x0, x0)"),
    # the same through a no-op view: tensorgrad's movedim(0, 0) returns x0 itself
    _case(COMPOSITE, [(2,)], "F.rms_norm(x0.movedim(0, 0), x0.shape, x0)"),
]


@pytest.mark.parametrize("graph", CASES)
def test_known_mismatch(graph):
    fg.check(graph)
