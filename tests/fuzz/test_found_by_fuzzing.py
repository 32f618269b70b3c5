"""Mismatches with PyTorch the fuzzer found, each kept as one graph through the same
comparison so it stays fixed: a fused primitive given one tensor in several slots under
create_graph (its composite's gradient was added once per slot) and flip/movedim on a 0-d
tensor. (scatter_add with an index smaller than src, the third, is in test_torch_semantics.py:
torch's own backward refuses it, so only the forward is compared.)"""
import pytest

pytest.importorskip("torch")

import fuzz_graphs as fg  # noqa: E402


def _case(shapes, *sources):
    steps = tuple((f"v{i}", src) for i, src in enumerate(sources))
    return pytest.param(fg.Graph(tuple(shapes), 0, steps, second_order=True), id=sources[-1])


CASES = [
    _case([()], "x0.flip((0,))"),
    _case([()], "x0.movedim(0, -1)"),
    _case([(2, 3)], "F.scaled_dot_product_attention(x0, x0, x0)"),
    _case([(1,)], "-(x0 ** 2)", "F.layer_norm(v0, v0.shape, v0, v0)"),
    _case([(3,)], "F.rms_norm(x0, x0.shape, x0)"),
    _case([(1, 1, 2)], "F.conv1d(x0, x0)"),
    _case([(2,)], "F.rms_norm(x0.movedim(0, 0), x0.shape, x0)"),  # a no-op view is x0 itself
]


@pytest.mark.parametrize("graph", CASES)
def test_found_by_fuzzing(graph):
    fg.check(graph)
