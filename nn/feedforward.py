"""The position-wise feed-forward network of a Transformer block, plain or gated.

Plain (Vaswani et al., 2017): down_proj(act(up_proj(x))) with act ReLU, GELU (erf or GPT-2's
tanh form) or SiLU. Gated (Shazeer, 2020, "GLU Variants Improve Transformer"):
down_proj(act(gate_proj(x)) * up_proj(x)), SwiGLU (act = SiLU, LLaMA) or GeGLU (act = GELU;
"geglu_tanh" with GELU's tanh form, as T5 v1.1 and Gemma use).

Parameter names follow LLaMA's (`gate_proj`, `up_proj`, `down_proj`), so Hugging Face
checkpoints map by renaming: GPT-2 mlp.c_fc -> up_proj, mlp.c_proj -> down_proj (transposed);
BERT intermediate.dense -> up_proj, output.dense -> down_proj; T5 wi / wi_0 -> up_proj /
gate_proj, wo -> down_proj.
"""
import tensorgrad as tg

from .layers import Dropout, Linear
from .module import Module

_ACTIVATIONS = {
    "relu": tg.relu,
    "gelu": tg.gelu,
    "gelu_tanh": lambda x: tg.gelu(x, approximate="tanh"),
    "silu": tg.silu,
}
_GATED = {"swiglu": "silu", "geglu": "gelu", "geglu_tanh": "gelu_tanh"}


def gated_hidden_dim(d_model, multiple_of=256, ffn_dim_multiplier=None):
    """LLaMA's inner size for a gated FFN: 2/3 of 4 d_model, so that three matrices cost what
    two of a 4 d_model FFN do, times an optional ffn_dim_multiplier, rounded UP to a multiple of
    multiple_of (hardware-friendly). d_model=4096 -> int(2 * 16384 / 3) = 10922 -> 11008."""
    hidden = int(2 * 4 * d_model / 3)
    if ffn_dim_multiplier is not None:
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * -(-hidden // multiple_of)


class FeedForward(Module):
    """x: (*, d_model) -> (*, d_model).

    activation: "relu", "gelu", "gelu_tanh", "silu", or gated "swiglu", "geglu", "geglu_tanh".
    d_ff: the inner size; default 4 d_model, or `gated_hidden_dim(d_model, multiple_of)` for the
        gated variants (LLaMA's 8/3 d_model rounded up to a multiple of multiple_of).
    bias: biases on the projections (GPT-2, BERT: yes; LLaMA, T5: no).
    dropout: on the hidden activations (T5's placement; the block adds residual dropout).
    Parameters: plain 2 d_model d_ff (+ d_ff + d_model biases), gated 3 d_model d_ff (+ biases).
    """

    def __init__(self, d_model, d_ff=None, activation="gelu", bias=True, dropout=0.0,
                 multiple_of=256, device=None, dtype=None):
        super().__init__()
        if activation not in _ACTIVATIONS and activation not in _GATED:
            raise ValueError(f"FeedForward: unknown activation {activation!r}; expected one of "
                             f"{sorted(_ACTIVATIONS) + sorted(_GATED)}")
        self.activation, self.gated = activation, activation in _GATED
        if d_ff is None:
            d_ff = gated_hidden_dim(d_model, multiple_of) if self.gated else 4 * d_model
        self.d_model, self.d_ff = d_model, d_ff
        options = dict(bias=bias, device=device, dtype=dtype)
        if self.gated:
            self.gate_proj = Linear(d_model, d_ff, **options)
        self.up_proj = Linear(d_model, d_ff, **options)
        self.down_proj = Linear(d_ff, d_model, **options)
        self.dropout = Dropout(dropout)

    def forward(self, x):
        if self.gated:
            hidden = _ACTIVATIONS[_GATED[self.activation]](self.gate_proj(x)) * self.up_proj(x)
        else:
            hidden = _ACTIVATIONS[self.activation](self.up_proj(x))  # (*, d_ff)
        return self.down_proj(self.dropout(hidden))

    def extra_repr(self):
        return f"d_model={self.d_model}, d_ff={self.d_ff}, activation={self.activation!r}"
