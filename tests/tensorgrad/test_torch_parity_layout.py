"""Broadcasting helpers, block_diag and searchsorted / bucketize against PyTorch (ops/shape.py,
layout.py, sort.py)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402
from torch_parity import FAST, check, seeds, values  # noqa: E402

import tensorgrad as tg  # noqa: E402


# --- broadcasting, block_diag, searchsorted / bucketize ----------------------------------------
@FAST
@given(shapes_=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3,
                                                 min_side=0, max_side=3), seed=seeds)
def test_broadcast_tensors_and_shapes(shapes_, seed):
    arrays = values(seed, *shapes_.input_shapes)
    check(tg.broadcast_tensors, torch.broadcast_tensors, *arrays, seed=seed)
    assert tg.broadcast_shapes(*shapes_.input_shapes) == \
        tuple(torch.broadcast_shapes(*shapes_.input_shapes))
    assert tg.broadcast_shapes(3, (2, 1)) == tuple(torch.broadcast_shapes(3, (2, 1)))


def test_broadcast_errors():
    with pytest.raises(RuntimeError, match="broadcast_shapes: .*size 3 against 2"):
        tg.broadcast_shapes((2, 3), (2,))
    with pytest.raises(RuntimeError, match="broadcast_shapes"):
        tg.broadcast_tensors(tg.zeros(2, 3), tg.zeros(4))


@pytest.mark.parametrize("shapes_", [
    [(2, 3), (1,), ()], [(0, 2), (3, 0)], [(2, 2)], [(1, 4), (3, 3), (2,)],
])
def test_block_diag(shapes_):
    arrays = values(4, *shapes_) if len(shapes_) > 1 else [values(4, *shapes_)]
    check(tg.block_diag, torch.block_diag, *arrays)
    mixed = tg.block_diag(tg.tensor([[1, 2]]), tg.tensor([0.5]))
    want = torch.block_diag(torch.tensor([[1, 2]]), torch.tensor([0.5]))
    assert str(mixed.dtype) == str(want.dtype).replace("torch.", "")
    np.testing.assert_array_equal(np.asarray(mixed), want.numpy())
    # an empty 1-D block is a (1, 0) row: torch's forward agrees, its backward (2.x) reads the
    # next block's gradient one row too early, so only values and our gradient are checked here
    empty, block = tg.zeros(0), tg.ones(2, 1, requires_grad=True)
    out = tg.block_diag(empty, block)
    np.testing.assert_array_equal(np.asarray(out),
                                  torch.block_diag(torch.zeros(0), torch.ones(2, 1)).numpy())
    out.backward(tg.arange(3.0).reshape(3, 1))
    assert block.grad.tolist() == [[1.0], [2.0]]
    with pytest.raises(RuntimeError, match="block_diag: input 0 must have 2 or fewer"):
        tg.block_diag(tg.zeros(1, 1, 1))


def _search_inputs(seed, batch, k, m):
    rng = np.random.default_rng(seed)
    # values tie with the sequence and may be NaN (inserted last); sequences hold no NaN, where
    # torch's binary search gives positions that depend on where it probes
    grid = np.array([-1.0, 0.0, 0.5, 2.0])
    seq = np.sort(rng.choice(grid, batch + (k,)), axis=-1)
    return seq, rng.choice(np.append(grid, np.nan), batch + (m,))


@pytest.mark.parametrize("how", [{}, {"right": True}, {"side": "right"}, {"side": "left"},
                                 {"out_int32": True}])
@FAST
@given(batch=st.sampled_from([(), (2,), (2, 3)]), k=st.integers(0, 4), m=st.integers(0, 4),
       seed=seeds, flat=st.booleans())
def test_searchsorted(how, batch, k, m, seed, flat):
    seq, v = _search_inputs(seed, batch, k, m)
    if flat:  # one 1-D sequence for values of any shape
        seq = seq.reshape(-1)[: k] if seq.size else np.zeros(0)
        seq = np.sort(seq)
    ours = tg.searchsorted(tg.tensor(seq), tg.tensor(v), **how)
    theirs = torch.searchsorted(torch.tensor(seq), torch.tensor(v), **how)
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())
    if seq.ndim == 1:
        for scalar in (0.5, -3.0, 9):
            s_ours = tg.searchsorted(tg.tensor(seq), scalar, **how)
            s_theirs = torch.searchsorted(torch.tensor(seq), scalar, **how)
            assert s_ours.shape == () and s_ours.item() == s_theirs.item()
        ours = tg.bucketize(tg.tensor(v), tg.tensor(seq), right=bool(how.get("right")))
        theirs = torch.bucketize(torch.tensor(v), torch.tensor(seq), right=bool(how.get("right")))
        np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())


def test_searchsorted_sorter_and_errors():
    seq = np.array([[3.0, 1.0, 2.0], [0.0, -1.0, 5.0]])
    order = np.argsort(seq, -1)
    v = np.array([[2.0, 2.5], [4.0, -2.0]])
    for right in (False, True):
        ours = tg.searchsorted(tg.tensor(seq), tg.tensor(v), right=right, sorter=tg.tensor(order))
        theirs = torch.searchsorted(torch.tensor(seq), torch.tensor(v), right=right,
                                    sorter=torch.tensor(order))
        np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())
    ints = tg.searchsorted(tg.tensor([1, 3, 5]), tg.tensor([[3, 4]]))
    assert ints.tolist() == torch.searchsorted(torch.tensor([1, 3, 5]),
                                               torch.tensor([[3, 4]])).tolist()
    with pytest.raises(RuntimeError, match="searchsorted: side='left' contradicts right=True"):
        tg.searchsorted(tg.tensor([1.0]), tg.tensor([1.0]), right=True, side="left")
    with pytest.raises(RuntimeError, match="searchsorted: an N-D sorted_sequence"):
        tg.searchsorted(tg.zeros(2, 3), tg.zeros(3, 1))
    with pytest.raises(RuntimeError, match="bucketize: boundaries must be 1-D"):
        tg.bucketize(tg.zeros(2), tg.zeros(2, 2))
