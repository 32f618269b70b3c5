"""nn/rnn.py and nn/utils/rnn.py: RNN, LSTM, GRU, their cells and packed sequences against
PyTorch's on the same weights (its state dict loaded strictly): outputs, last states and the
gradients of the input, the initial states and every parameter, in float64."""
import itertools
import zlib

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn.utils import rnn as rnn_utils

torch = pytest.importorskip("torch")

KINDS = {  # name -> (class name, extra arguments)
    "rnn_tanh": ("RNN", {}), "rnn_relu": ("RNN", {"nonlinearity": "relu"}),
    "lstm": ("LSTM", {}), "lstm_proj": ("LSTM", {"proj_size": 3}), "gru": ("GRU", {}),
}


def twins(kind, input_size, hidden_size, **options):
    """A torch module in float64 and ours with its state dict, loaded strictly."""
    cls, extra = KINDS[kind]
    theirs = getattr(torch.nn, cls)(input_size, hidden_size, **extra, **options).double()
    ours = getattr(nn, cls)(input_size, hidden_size, **extra, **options, dtype=tg.float64)
    ours.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()}, strict=True)
    return ours, theirs


def leaf_pair(array):
    return tg.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)


def states_of(kind, result):
    """The tensors a layer or cell returns, flattened: output and h_n (and c_n)."""
    out, last = result
    return [out, *last] if kind.startswith("lstm") else [out, last]


def assert_backward_matches(ours_outs, theirs_outs, ours_leaves, theirs_leaves, ours, theirs,
                            rng, atol=1e-10):
    """Values match; then one random probe per output, backward, and every gradient matches."""
    loss_ours = loss_theirs = 0
    for o, t in zip(ours_outs, theirs_outs):
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), atol=atol)
        probe = rng.standard_normal(tuple(t.shape))
        loss_ours = loss_ours + (o * tg.tensor(probe)).sum()
        loss_theirs = loss_theirs + (t * torch.tensor(probe)).sum()
    loss_ours.backward()
    loss_theirs.backward()
    for i, (o, t) in enumerate(zip(ours_leaves, theirs_leaves)):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), atol=atol, err_msg=f"leaf {i}")
    ours_params = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(ours_params[name].grad.numpy(), p.grad.numpy(), atol=atol,
                                   err_msg=name)


def initial_states(kind, rng, layers, N, hidden, out_size):
    sizes = [out_size, hidden] if kind.startswith("lstm") else [out_size]
    shape = (layers,) if N is None else (layers, N)
    return [leaf_pair(rng.standard_normal((*shape, size))) for size in sizes]


FLAGS = list(itertools.product([1, 2], [False, True], [False, True], [False, True],
                               [False, True]))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("num_layers, bidirectional, batch_first, bias, with_hx", FLAGS)
def test_layers_match_torch(kind, num_layers, bidirectional, batch_first, bias, with_hx):
    rng = np.random.default_rng(zlib.crc32(repr((kind, num_layers, bidirectional, batch_first,
                                                 bias, with_hx)).encode()))
    L, N, C, H = (int(n) for n in rng.integers(1, 6, size=4))
    H += 3  # above proj_size
    ours, theirs = twins(kind, C, H, num_layers=num_layers, bidirectional=bidirectional,
                         batch_first=batch_first, bias=bias)
    x, tx = leaf_pair(rng.standard_normal((N, L, C) if batch_first else (L, N, C)))
    leaves, theirs_leaves, args, targs = [x], [tx], [x], [tx]
    if with_hx:
        states = initial_states(kind, rng, num_layers * (1 + bidirectional), N, H,
                                ours.proj_size or H)
        leaves += [o for o, _ in states]
        theirs_leaves += [t for _, t in states]
        hx = tuple(o for o, _ in states) if kind.startswith("lstm") else states[0][0]
        thx = tuple(t for _, t in states) if kind.startswith("lstm") else states[0][1]
        args, targs = [x, hx], [tx, thx]
    assert_backward_matches(states_of(kind, ours(*args)), states_of(kind, theirs(*targs)),
                            leaves, theirs_leaves, ours, theirs, rng)


@pytest.mark.parametrize("kind", KINDS)
def test_unbatched_input_matches_torch(kind):
    rng = np.random.default_rng(1)
    ours, theirs = twins(kind, 3, 5, num_layers=2, bidirectional=True)
    x, tx = leaf_pair(rng.standard_normal((4, 3)))  # (L, C)
    states = initial_states(kind, rng, 4, None, 5, ours.proj_size or 5)
    hx = tuple(o for o, _ in states) if kind.startswith("lstm") else states[0][0]
    thx = tuple(t for _, t in states) if kind.startswith("lstm") else states[0][1]
    assert_backward_matches(states_of(kind, ours(x, hx)), states_of(kind, theirs(tx, thx)),
                            [x] + [o for o, _ in states], [tx] + [t for _, t in states],
                            ours, theirs, rng)


@pytest.mark.parametrize("kind", ["lstm", "lstm_proj", "gru", "rnn_tanh"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_packed_sequences_match_torch(kind, batch_first):
    rng = np.random.default_rng(2)
    lengths = [3, 5, 1, 5, 2]  # unsorted, with a tie
    ours, theirs = twins(kind, 4, 6, num_layers=2, bidirectional=True, batch_first=batch_first)
    x, tx = leaf_pair(rng.standard_normal((5, 5, 4)))
    states = initial_states(kind, rng, 4, 5, 6, ours.proj_size or 6)
    hx = tuple(o for o, _ in states) if kind.startswith("lstm") else states[0][0]
    thx = tuple(t for _, t in states) if kind.startswith("lstm") else states[0][1]
    packed = rnn_utils.pack_padded_sequence(x, lengths, batch_first, enforce_sorted=False)
    tpacked = torch.nn.utils.rnn.pack_padded_sequence(tx, torch.tensor(lengths), batch_first,
                                                      enforce_sorted=False)
    out, last = ours(packed, hx)
    tout, tlast = theirs(tpacked, thx)
    assert isinstance(out, rnn_utils.PackedSequence)
    padded, out_lengths = rnn_utils.pad_packed_sequence(out, batch_first, padding_value=-1.0)
    tpadded, tout_lengths = torch.nn.utils.rnn.pad_packed_sequence(tout, batch_first,
                                                                   padding_value=-1.0)
    assert out_lengths.tolist() == tout_lengths.tolist() == lengths
    assert_backward_matches(states_of(kind, (padded, last)), states_of(kind, (tpadded, tlast)),
                            [x] + [o for o, _ in states], [tx] + [t for _, t in states],
                            ours, theirs, rng)


def test_pack_and_pad_equal_torch():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3, 2))  # (T, B, *)
    for lengths, enforce in (([4, 2, 1], True), ([1, 4, 3], False)):
        ours = rnn_utils.pack_padded_sequence(tg.tensor(x), lengths, enforce_sorted=enforce)
        theirs = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(x), lengths,
                                                         enforce_sorted=enforce)
        np.testing.assert_array_equal(ours.data.numpy(), theirs.data.numpy())
        assert ours.batch_sizes.tolist() == theirs.batch_sizes.tolist()
        for a, b in ((ours.sorted_indices, theirs.sorted_indices),
                     (ours.unsorted_indices, theirs.unsorted_indices)):
            assert (a is None and b is None) or a.tolist() == b.tolist()
        padded, _ = rnn_utils.pad_packed_sequence(ours, batch_first=True, total_length=6)
        tpadded, _ = torch.nn.utils.rnn.pad_packed_sequence(theirs, batch_first=True,
                                                            total_length=6)
        np.testing.assert_array_equal(padded.numpy(), tpadded.numpy())
    sequences = [rng.standard_normal((n, 2)) for n in (2, 4, 1)]
    for batch_first, side in itertools.product([False, True], ["right", "left"]):
        ours = rnn_utils.pad_sequence([tg.tensor(s) for s in sequences], batch_first, 7.0, side)
        theirs = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in sequences],
                                                 batch_first, 7.0, side)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    packed = rnn_utils.pack_sequence([tg.tensor(s) for s in sequences], enforce_sorted=False)
    tpacked = torch.nn.utils.rnn.pack_sequence([torch.tensor(s) for s in sequences],
                                               enforce_sorted=False)
    np.testing.assert_array_equal(packed.data.numpy(), tpacked.data.numpy())


@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("bias, batched, with_hx", list(itertools.product([False, True],
                                                                          repeat=3)))
def test_cells_match_torch(cls, bias, batched, with_hx):
    rng = np.random.default_rng(4)
    theirs = getattr(torch.nn, cls)(3, 4, bias=bias).double()
    ours = getattr(nn, cls)(3, 4, bias=bias, dtype=tg.float64)
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()},
                         strict=True)
    shape = (2,) if batched else ()
    x, tx = leaf_pair(rng.standard_normal((*shape, 3)))
    leaves = [x, tx]
    args, targs = [x], [tx]
    if with_hx:
        pairs = [leaf_pair(rng.standard_normal((*shape, 4)))
                 for _ in range(2 if cls == "LSTMCell" else 1)]
        leaves = [x, tx] + [p for pair in pairs for p in pair]
        args.append(tuple(o for o, _ in pairs) if cls == "LSTMCell" else pairs[0][0])
        targs.append(tuple(t for _, t in pairs) if cls == "LSTMCell" else pairs[0][1])
    out, tout = ours(*args), theirs(*targs)
    outs = list(out) if cls == "LSTMCell" else [out]
    touts = list(tout) if cls == "LSTMCell" else [tout]
    assert_backward_matches(outs, touts, leaves[::2], leaves[1::2], ours, theirs, rng)


def test_parameter_names_shapes_and_initialisation_follow_torch():
    for kind in KINDS:
        ours, theirs = twins(kind, 3, 8, num_layers=2, bidirectional=True)
        fresh = getattr(nn, KINDS[kind][0])(3, 8, num_layers=2, bidirectional=True,
                                            **KINDS[kind][1])
        assert [(k, tuple(v.shape)) for k, v in fresh.state_dict().items()] == \
            [(k, tuple(v.shape)) for k, v in theirs.state_dict().items()]
        values = np.concatenate([p.detach().numpy().ravel() for p in fresh.parameters()])
        bound = 1 / np.sqrt(8)
        assert values.min() >= -bound and values.max() <= bound
        assert values.min() < -0.9 * bound and values.max() > 0.9 * bound


def test_dropout_acts_between_layers_in_training_only():
    ours, theirs = twins("lstm", 3, 6, num_layers=2, dropout=0.5)
    x = np.random.default_rng(5).standard_normal((4, 2, 3))
    ours.eval()
    theirs.eval()
    np.testing.assert_allclose(ours(tg.tensor(x))[0].detach().numpy(),
                               theirs(torch.tensor(x))[0].detach().numpy(), atol=1e-12)
    ours.train()
    trained = ours(tg.tensor(x))[0].detach().numpy()
    assert not np.allclose(trained, ours.eval()(tg.tensor(x))[0].detach().numpy())
    with pytest.warns(UserWarning, match="num_layers=1"):
        nn.GRU(3, 4, dropout=0.2)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_dropout_in_training_is_torchs_on_the_same_mask(kind, monkeypatch):
    # PyTorch documents dropout=p as dropout on each layer's output but the last: here its two
    # stacked one-layer modules, the first's output times the mask ours drew
    rng = np.random.default_rng(7)
    masks = []

    def dropout(x, p, training=True, inplace=False):
        masks.append((rng.random(tuple(x.shape)) >= p) / (1 - p))
        return x * tg.tensor(masks[-1])
    monkeypatch.setattr(nn.functional, "dropout", dropout)
    ours, _ = twins(kind, 3, 5, num_layers=2, dropout=0.3)
    first, second = (getattr(torch.nn, KINDS[kind][0])(size, 5).double() for size in (3, 5))
    for name, p in ours.named_parameters():
        layer = first if name.endswith("l0") else second
        getattr(layer, name[:-1] + "0").data = torch.tensor(p.detach().numpy())
    x = rng.standard_normal((4, 2, 3))
    out = ours(tg.tensor(x))[0].detach().numpy()
    assert len(masks) == 1
    expected = second(first(torch.tensor(x))[0] * torch.tensor(masks[0]).reshape(4, 2, 5))[0]
    np.testing.assert_allclose(out, expected.detach().numpy(), atol=1e-12)


def test_gradients_are_right_to_second_order():
    gru = nn.GRU(2, 3, bidirectional=True, dtype=tg.float64)
    x = tg.tensor(np.random.default_rng(6).standard_normal((3, 2, 2)), requires_grad=True)
    packed = lambda x: rnn_utils.pack_padded_sequence(x, [3, 2], enforce_sorted=True)  # noqa: E731
    assert tg.gradcheck(lambda x: gru(packed(x))[1], [x])
    cell = nn.LSTMCell(2, 3, dtype=tg.float64)
    assert tg.gradgradcheck(lambda x: cell(x[0])[1], [x])


def test_errors_say_what_was_expected():
    lstm = nn.LSTM(3, 5)
    with pytest.raises(RuntimeError, match="Expected 3, got 4"):
        lstm(tg.randn(2, 1, 4))
    with pytest.raises(ValueError, match="2-D .* or 3-D"):
        lstm(tg.randn(2, 1, 1, 3))
    with pytest.raises(RuntimeError, match=r"expected hidden size \(1, 2, 5\)"):
        lstm(tg.randn(4, 2, 3), (tg.zeros(1, 3, 5), tg.zeros(1, 3, 5)))
    with pytest.raises(ValueError, match="proj_size"):
        nn.LSTM(3, 5, proj_size=-1)
    with pytest.raises(ValueError, match="proj_size"):
        nn.LSTM(3, 5, proj_size=5)
    with pytest.raises(ValueError, match="dropout"):
        nn.RNN(3, 5, dropout=2)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(3, 5, nonlinearity="gelu")
    with pytest.raises(RuntimeError, match="inconsistent input_size"):
        nn.GRUCell(3, 4)(tg.randn(2, 5))
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        rnn_utils.pack_padded_sequence(tg.randn(3, 2, 1), [1, 3])
