"""nn/pytorch_transformer.py: nn.Transformer, TransformerEncoder(Layer) and
TransformerDecoder(Layer) against PyTorch's on the same weights (its state dict loaded
strictly): outputs and the gradients of the inputs and every parameter, in float64, in eval
mode and in train mode with dropout=0, with every mask."""
import itertools
import warnings

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad import nn

torch = pytest.importorskip("torch")

E, H, FF = 8, 2, 12


def pair(rng, shape, grad=True):
    x = rng.standard_normal(shape)
    return tg.tensor(x, requires_grad=grad), torch.tensor(x, requires_grad=grad)


def masks(rng, kind, L, S, N):
    """(attn_mask, key_padding_mask) pairs for ours and torch's, of one kind."""
    if kind == "none":
        return (None, None), (None, None)
    if kind == "causal_float":
        m = torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=torch.float64)
        return (tg.tensor(m.numpy()), None), (m, None)
    blocked = rng.random((L, S)) < 0.3
    blocked[:, 0] = False  # every query sees a key
    padding = np.zeros((N, S), bool)
    padding[0, S - 1:] = True
    if kind == "bool":
        return (tg.tensor(blocked), tg.tensor(padding)), (torch.tensor(blocked),
                                                         torch.tensor(padding))
    additive = np.where(blocked, -1e9, rng.standard_normal((L, S)) * 0.1)
    return (tg.tensor(additive), None), (torch.tensor(additive), None)


def check(ours, theirs, ours_in, theirs_in, ours_out, theirs_out, rng, atol=1e-9):
    np.testing.assert_allclose(ours_out.detach().numpy(), theirs_out.detach().numpy(), atol=atol)
    probe = rng.standard_normal(tuple(theirs_out.shape))
    (ours_out * tg.tensor(probe)).sum().backward()
    (theirs_out * torch.tensor(probe)).sum().backward()
    for o, t in zip(ours_in, theirs_in):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), atol=atol)
    ours_params = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(ours_params[name].grad.numpy(), p.grad.numpy(), atol=atol,
                                   err_msg=name)


ACTIVATIONS = {"relu": ("relu", "relu"), "gelu": ("gelu", "gelu"),
               "callable": (F.silu, torch.nn.functional.silu)}
# every combination of the layouts, masks and modes; activation and bias take turns
LAYER_FLAGS = [(norm_first, batch_first, list(ACTIVATIONS)[i % 3], i % 2 == 0, mask, mode)
               for i, (norm_first, batch_first, mask, mode) in enumerate(itertools.product(
                   [False, True], [False, True], ["none", "bool", "float", "causal_float"],
                   ["eval", "train"]))]


@pytest.mark.parametrize("norm_first, batch_first, activation, bias, mask, mode", LAYER_FLAGS)
def test_encoder_layer_matches_torch(norm_first, batch_first, activation, bias, mask, mode):
    rng = np.random.default_rng(len(str((norm_first, batch_first, activation, bias, mask))))
    ours_act, theirs_act = ACTIVATIONS[activation]
    options = dict(dim_feedforward=FF, dropout=0.0, norm_first=norm_first,
                   batch_first=batch_first, bias=bias)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.nn.TransformerEncoderLayer(E, H, activation=theirs_act, **options).double()
    ours = nn.TransformerEncoderLayer(E, H, activation=ours_act, dtype=tg.float64, **options)
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()},
                         strict=True)
    getattr(ours, mode)()
    getattr(theirs, mode)()
    L, N = 5, 3
    x, tx = pair(rng, (N, L, E) if batch_first else (L, N, E))
    (attn, padding), (tattn, tpadding) = masks(rng, mask, L, L, N)
    causal = mask == "causal_float"
    out = ours(x, src_mask=attn, src_key_padding_mask=padding, is_causal=causal)
    tout = theirs(tx, src_mask=tattn, src_key_padding_mask=tpadding, is_causal=causal)
    check(ours, theirs, [x], [tx], out, tout, rng)


@pytest.mark.parametrize("norm_first, batch_first, mask", list(itertools.product(
    [False, True], [False, True], ["none", "bool", "float"])))
def test_decoder_layer_matches_torch(norm_first, batch_first, mask):
    rng = np.random.default_rng(7)
    options = dict(dim_feedforward=FF, dropout=0.0, norm_first=norm_first,
                   batch_first=batch_first)
    theirs = torch.nn.TransformerDecoderLayer(E, H, **options).double()
    ours = nn.TransformerDecoderLayer(E, H, dtype=tg.float64, **options)
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()},
                         strict=True)
    T, S, N = 4, 6, 2
    layout = (lambda L: (N, L, E)) if batch_first else (lambda L: (L, N, E))
    (x, tx), (m, tm) = pair(rng, layout(T)), pair(rng, layout(S))
    causal = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    (mem_attn, mem_padding), (tmem_attn, tmem_padding) = masks(rng, mask, T, S, N)
    out = ours(x, m, tgt_mask=tg.tensor(causal.numpy()), memory_mask=mem_attn,
               memory_key_padding_mask=mem_padding, tgt_is_causal=True)
    tout = theirs(tx, tm, tgt_mask=causal, memory_mask=tmem_attn,
                  memory_key_padding_mask=tmem_padding, tgt_is_causal=True)
    check(ours, theirs, [x, m], [tx, tm], out, tout, rng)


@pytest.mark.parametrize("batch_first, norm_first",
                         list(itertools.product([False, True], repeat=2)))
def test_transformer_matches_torch(batch_first, norm_first):
    rng = np.random.default_rng(8)
    options = dict(d_model=E, nhead=H, num_encoder_layers=2, num_decoder_layers=2,
                   dim_feedforward=FF, dropout=0.0, batch_first=batch_first,
                   norm_first=norm_first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.nn.Transformer(**options).double()
    ours = nn.Transformer(**options, dtype=tg.float64)
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()},
                         strict=True)
    S, T, N = 5, 4, 3
    layout = (lambda L: (N, L, E)) if batch_first else (lambda L: (L, N, E))
    (src, tsrc), (tgt, ttgt) = pair(rng, layout(S)), pair(rng, layout(T))
    padding = np.zeros((N, S), bool)
    padding[1, 3:] = True
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(T, dtype=tg.float64)
    ttgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    np.testing.assert_array_equal(tgt_mask.numpy(), ttgt_mask.numpy())
    out = ours(src, tgt, tgt_mask=tgt_mask, src_key_padding_mask=tg.tensor(padding),
               memory_key_padding_mask=tg.tensor(padding))
    tout = theirs(tsrc, ttgt, tgt_mask=ttgt_mask, src_key_padding_mask=torch.tensor(padding),
                  memory_key_padding_mask=torch.tensor(padding))
    check(ours, theirs, [src, tgt], [tsrc, ttgt], out, tout, rng)


def test_encoder_stack_with_norm_unbatched_and_causal_detection():
    rng = np.random.default_rng(9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        layer = torch.nn.TransformerEncoderLayer(E, H, FF, dropout=0.0).double()
        theirs = torch.nn.TransformerEncoder(layer, 2, torch.nn.LayerNorm(E).double(),
                                             enable_nested_tensor=False)
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF, dropout=0.0,
                                                            dtype=tg.float64), 2,
                                 nn.LayerNorm(E, dtype=tg.float64), enable_nested_tensor=False)
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()},
                         strict=True)
    assert [k for k in ours.state_dict()] == [k for k in theirs.state_dict()]
    x, tx = pair(rng, (5, E))  # unbatched (S, E)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    out = ours(x, mask=tg.tensor(mask.numpy()))  # is_causal=None: read off the mask
    tout = theirs(tx, mask=mask)
    check(ours, theirs, [x], [tx], out, tout, rng)


def test_initialisation_names_and_errors():
    model = nn.Transformer(E, H, 1, 1, FF)
    weight = model.encoder.layers[0].linear1.weight.detach().numpy()
    bound = np.sqrt(6 / (E + FF))  # Xavier-uniform over every matrix
    assert np.abs(weight).max() <= bound and np.abs(weight).max() > 0.8 * bound
    with pytest.raises(RuntimeError, match="activation should be relu/gelu"):
        nn.TransformerEncoderLayer(E, H, activation="swish")
    with pytest.raises(RuntimeError, match="batch number of src and tgt"):
        model(tg.randn(3, 2, E), tg.randn(3, 4, E))
    with pytest.raises(RuntimeError, match="d_model"):
        model(tg.randn(3, 2, E + 1), tg.randn(3, 2, E))
