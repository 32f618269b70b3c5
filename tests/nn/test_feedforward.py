"""FeedForward: plain and gated variants against PyTorch, inner sizes, parameter counts."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.nn.feedforward import FeedForward, gated_hidden_dim

ACTIVATIONS = ["relu", "gelu", "gelu_tanh", "silu", "swiglu", "geglu", "geglu_tanh"]


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_matches_torch(activation):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    act = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu, "swiglu": F.silu, "geglu": F.gelu,
           "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
           "geglu_tanh": lambda x: F.gelu(x, approximate="tanh")}[activation]
    ffn = FeedForward(8, 12, activation)
    weights = {name: torch.tensor(np.asarray(p.detach()), requires_grad=True)
               for name, p in ffn.named_parameters()}

    def linear(name, x):
        return F.linear(x, weights[f"{name}.weight"], weights[f"{name}.bias"])

    x = np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32)
    tx = torch.tensor(x)
    hidden = act(linear("up_proj", tx)) if not ffn.gated else \
        act(linear("gate_proj", tx)) * linear("up_proj", tx)
    ref = linear("down_proj", hidden)
    out = ffn(tg.tensor(x))
    assert out.dtype == tg.float32
    np.testing.assert_allclose(np.asarray(out.detach()), ref.detach().numpy(), atol=1e-5)
    ref.sum().backward()
    out.sum().backward()
    for name, p in ffn.named_parameters():
        np.testing.assert_allclose(np.asarray(p.grad), weights[name].grad.numpy(), atol=1e-5)


def test_parameter_counts_match_the_closed_forms():
    d, d_ff = 48, 100
    assert FeedForward(d, d_ff).num_parameters() == 2 * d * d_ff + d_ff + d
    assert FeedForward(d, d_ff, bias=False).num_parameters() == 2 * d * d_ff
    assert FeedForward(d, d_ff, "swiglu").num_parameters() == 3 * d * d_ff + 2 * d_ff + d
    assert FeedForward(768).num_parameters() == 2 * 768 * 3072 + 3072 + 768  # GPT-2 small MLP


def test_inner_sizes():
    assert FeedForward(16).d_ff == 64  # 4 d
    assert gated_hidden_dim(4096) == 11008  # LLaMA-7B: 8/3 d rounded up to a multiple of 256
    assert gated_hidden_dim(8192, multiple_of=4096, ffn_dim_multiplier=1.3) == 28672  # LLaMA-2 70B
    assert FeedForward(96, activation="swiglu", multiple_of=32).d_ff == 256  # int(256.0) = 256
    assert FeedForward(100, activation="swiglu", multiple_of=32).d_ff == 288  # 266 -> 288


def test_unknown_activation_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown activation 'tanh'"):
        FeedForward(8, activation="tanh")


def test_hidden_dropout_only_in_training():
    ffn = FeedForward(8, 32, dropout=0.5)
    x = tg.randn(4, 8)
    assert not np.allclose(np.asarray(ffn(x).detach()), np.asarray(ffn(x).detach()))
    ffn.eval()
    np.testing.assert_array_equal(np.asarray(ffn(x).detach()), np.asarray(ffn(x).detach()))
