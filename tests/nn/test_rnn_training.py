"""A character-level LSTM and GRU trained as examples/pytorch/char_rnn.py trains them (embedding,
two recurrent layers, linear head, cross_entropy, clip_grad_norm_, Adam), on tensorgrad and on
PyTorch from the same weights on the same batches, in float64: every step's loss, gradient norm
and weights agree, and so do the eval-mode outputs under no_grad. The frameworks draw different
random numbers, so this is what says a gap between their seeded runs is noise, not semantics."""
import textwrap

import numpy as np
import pytest

import tensorgrad as tg

torch = pytest.importorskip("torch")

SEQ, BATCH, EMBED, HIDDEN, STEPS, MAX_NORM = 16, 4, 8, 16, 40, 0.5


def char_model(lib, vocab, cell, dropout, **options):
    """The example's model, written once for either framework's nn."""
    class CharRNN(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = lib.nn.Embedding(vocab, EMBED, **options)
            rnn = lib.nn.LSTM if cell == "lstm" else lib.nn.GRU
            self.rnn = rnn(EMBED, HIDDEN, num_layers=2, batch_first=True, dropout=dropout,
                           **options)
            self.head = lib.nn.Linear(HIDDEN, vocab, **options)

        def forward(self, x):
            return self.head(self.rnn(self.embed(x))[0])
    return CharRNN()


def training_step(lib, model, optimizer, window):
    """One step of the example's loop; returns the loss and the norm clip_grad_norm_ saw."""
    x, y = lib.tensor(window[:, :-1]), lib.tensor(window[:, 1:])
    logits = model(x)
    loss = lib.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    norm = lib.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
    optimizer.step()
    return loss.item(), float(norm)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_char_rnn_training_matches_torch_step_by_step(cell):
    with open(textwrap.__file__, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    data = np.array([chars.index(c) for c in text])
    rng = np.random.default_rng(0)
    windows = [np.stack([data[s:s + SEQ + 1] for s in rng.integers(0, len(data) - SEQ - 1, BATCH)])
               for _ in range(STEPS)]
    torch.manual_seed(0)
    theirs = char_model(torch, len(chars), cell, dropout=0.3).double()
    ours = char_model(tg, len(chars), cell, dropout=0.3, dtype=tg.float64)
    ours.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()}, strict=True)
    ours.rnn.dropout = theirs.rnn.dropout = 0.0  # the two cannot draw the same masks
    opt_ours = tg.optim.Adam(ours.parameters(), lr=1e-2)
    opt_theirs = torch.optim.Adam(theirs.parameters(), lr=1e-2)
    norms = []
    for step, window in enumerate(windows):
        loss_ours, norm_ours = training_step(tg, ours, opt_ours, window)
        loss_theirs, norm_theirs = training_step(torch, theirs, opt_theirs, window)
        np.testing.assert_allclose([loss_ours, norm_ours], [loss_theirs, norm_theirs],
                                   rtol=1e-9, err_msg=f"step {step}: loss, gradient norm")
        norms.append(norm_theirs)
    assert min(norms) < MAX_NORM < max(norms)  # some steps were clipped and some were not
    assert loss_theirs < np.log(len(chars)) - 1  # it learned, so the steps were not trivial
    ours_params = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(ours_params[name].detach().numpy(), p.detach().numpy(),
                                   atol=1e-9, err_msg=name)
    ours.rnn.dropout = theirs.rnn.dropout = 0.3
    ours.eval()
    theirs.eval()
    x = windows[0][:, :-1]
    with tg.no_grad(), torch.no_grad():
        evaluated = ours(tg.tensor(x))
        np.testing.assert_allclose(evaluated.numpy(), theirs(torch.tensor(x)).numpy(), atol=1e-9)
        ours.train()
        assert not np.allclose(ours(tg.tensor(x)).numpy(), evaluated.numpy())  # dropout is back
