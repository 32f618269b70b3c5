"""Positional information for attention, which on its own is blind to order: permuting the
input rows of self-attention just permutes its output rows. Five remedies:

- sinusoidal encodings added to the input (Vaswani et al., 2017), fixed, kept as a buffer;
- learned absolute encodings added to the input (BERT, GPT-2's `wpe`);
- rotary embeddings (RoPE, Su et al., 2021) that rotate queries and keys so that their dot
  product depends only on the distance i - j;
- ALiBi (Press et al., 2022): a per-head linear distance penalty added to the scores;
- T5's relative position bias (Raffel et al., 2020): a learned per-head score for each bucket
  of the distance j - i, exact for short distances and logarithmic up to a maximum.

Every module takes `positions`: an int offset (the input holds positions offset, offset+1, ...;
what decoding with a KV cache passes) or an integer Tensor of positions, (T,) or (B, T).
"""
import math

import tensorgrad as tg
from tensorgrad import Tensor

from . import init
from .module import Module, Parameter


def _positions(positions, length, device):
    """An int offset or a Tensor of positions -> an int64 Tensor (T,) or (B, T)."""
    if isinstance(positions, Tensor):
        if positions.dtype.kind not in "iu" or positions.ndim not in (1, 2) \
                or positions.shape[-1] != length:
            raise ValueError(f"positions must be an integer Tensor of shape ({length},) or "
                             f"(B, {length}), got {positions.dtype} of shape {positions.shape}")
        return positions
    return tg.arange(positions, positions + length, device=device)


# --- sinusoidal and learned absolute encodings ----------------------------------------------------
def sinusoidal_encoding(num_positions, dim, base=10000.0, device=None, dtype=tg.float32):
    """The (num_positions, dim) table of Vaswani et al.: PE[p, 2i] = sin(p / base^(2i/dim)) and
    PE[p, 2i+1] = cos(p / base^(2i/dim)), sines and cosines interleaved as in the paper.
    Computed in float64 and rounded once to `dtype`."""
    if dim % 2:
        raise ValueError(f"sinusoidal_encoding: dim must be even, got {dim}")
    pos = tg.arange(num_positions, dtype=tg.float64, device=device).unsqueeze(-1)  # (T, 1)
    freqs = (tg.arange(0, dim, 2, dtype=tg.float64, device=device) * (-math.log(base) / dim)).exp()
    angles = pos * freqs  # (T, 1) * (dim/2,) -> (T, dim/2)
    table = tg.stack([angles.sin(), angles.cos()], dim=-1)  # (T, dim/2, 2)
    return table.reshape(num_positions, dim).to(dtype)


class _AbsoluteEncoding(Module):
    """Adds row `p` of `self.table()` to the input at position p."""

    def forward(self, x, positions=0):
        """x: (B, T, dim) -> x + encoding of each position, same shape."""
        table, length = self.table(), x.shape[-2]
        if isinstance(positions, int):  # consecutive rows: a slice of the table, no gather
            bottom, top = positions, positions + length - 1
        else:
            positions = _positions(positions, length, x.device)
            bottom = int(positions.min().item()) if positions.numel() else 0
            top = int(positions.max().item()) if positions.numel() else 0
        if bottom < 0 or top >= table.shape[0] or x.shape[-1] != table.shape[1]:
            raise ValueError(f"{type(self).__name__}: input of shape {x.shape} at positions "
                             f"{bottom} to {top} does not fit a table of {table.shape[0]} "
                             f"positions x {table.shape[1]} features")
        if isinstance(positions, int):
            return x + table[positions:positions + length]  # (T, dim)
        return x + tg.embedding(positions, table)  # (T, dim) or (B, T, dim)


class SinusoidalPositionalEncoding(_AbsoluteEncoding):
    """Fixed sinusoidal encodings for up to max_len positions, added to the input. The table is
    a non-persistent buffer: it follows `.to()` but is recomputed rather than checkpointed."""

    def __init__(self, max_len, dim, base=10000.0, device=None, dtype=None):
        super().__init__()
        self.register_buffer("pe", sinusoidal_encoding(max_len, dim, base, device,
                                                       dtype or tg.float32), persistent=False)

    def table(self):
        return self.pe


class LearnedPositionalEncoding(_AbsoluteEncoding):
    """A learned (max_len, dim) table added to the input, initialised N(0, 0.02^2) as in GPT-2
    and BERT. Its parameter `weight` maps onto GPT-2's `wpe.weight` and BERT's
    `position_embeddings.weight`."""

    def __init__(self, max_len, dim, device=None, dtype=None):
        super().__init__()
        self.weight = Parameter(tg.empty(max_len, dim, device=device, dtype=dtype))
        init.normal_(self.weight, 0.0, 0.02)

    def table(self):
        return self.weight


# --- rotary embeddings -----------------------------------------------------------------------
def rotate_half(x):
    """(x1, x2) -> (-x2, x1) on the two halves of the last dimension."""
    half = x.shape[-1] // 2
    return tg.cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rotary(x, cos, sin, interleaved=False):
    """Rotate feature pairs of x by the angles whose cosines and sines are given.

    x: (..., T, D); cos, sin: (..., T, R/2) broadcastable, R <= D the rotated features (the rest
    pass unchanged, GPT-NeoX's partial rotary). Pairs are (i, i + R/2) by default, the GPT-NeoX /
    Hugging Face LLaMA "rotate half" layout; interleaved=True pairs (2i, 2i + 1), the layout of
    the RoFormer paper, GPT-J and Meta's LLaMA checkpoints.
    """
    rotated = 2 * cos.shape[-1]
    if rotated > x.shape[-1]:
        raise ValueError(f"apply_rotary: {rotated} rotated features do not fit input of shape "
                         f"{x.shape}")
    rest = x[..., rotated:] if rotated < x.shape[-1] else None
    x = x[..., :rotated] if rest is not None else x
    if interleaved:
        pairs = x.reshape(x.shape[:-1] + (rotated // 2, 2))  # (..., T, R/2, 2)
        x0, x1 = pairs[..., 0], pairs[..., 1]
        out = tg.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).reshape(x.shape)
    else:
        out = x * tg.cat([cos, cos], dim=-1) + rotate_half(x) * tg.cat([sin, sin], dim=-1)
    return out if rest is None else tg.cat([out, rest], dim=-1)


class RotaryEmbedding(Module):
    """RoPE: rotates each query and key feature pair (see `apply_rotary` for the layout) by
    angle position * base^(-2i/dim), so that q_i . k_j depends on positions only through i - j.

    dim: how many features of each head to rotate (the head size, or less for partial rotary).
    Holds only `inv_freq` (dim/2,), a non-persistent buffer; angles are computed per call in
    float64 and rounded once to the input's dtype.
    """

    def __init__(self, dim, base=10000.0, interleaved=False, device=None):
        super().__init__()
        if dim % 2:
            raise ValueError(f"RotaryEmbedding: dim must be even, got {dim}")
        self.dim, self.base, self.interleaved = dim, base, interleaved
        exponents = tg.arange(0, dim, 2, dtype=tg.float64, device=device) * (1.0 / dim)
        self.register_buffer("inv_freq", (exponents * -math.log(base)).exp(), persistent=False)

    def forward(self, q, k, positions=0):
        """q: (B, Hq, T, D), k: (B, Hk, T, D) -> both rotated, same shapes."""
        if q.shape[-2] != k.shape[-2]:
            raise ValueError(f"RotaryEmbedding: q and k must cover the same positions, got "
                             f"shapes {q.shape} and {k.shape}")
        positions = _positions(positions, q.shape[-2], q.device)
        angles = positions.to(tg.float64).unsqueeze(-1) * self.inv_freq  # (..., T, dim/2)
        if angles.ndim == 3:
            angles = angles.unsqueeze(1)  # (B, T, dim/2) -> (B, 1, T, dim/2): every head
        cos, sin = angles.cos().to(q.dtype), angles.sin().to(q.dtype)
        return (apply_rotary(q, cos, sin, self.interleaved),
                apply_rotary(k, cos, sin, self.interleaved))

    def extra_repr(self):
        return f"dim={self.dim}, base={self.base}, interleaved={self.interleaved}"


# --- ALiBi --------------------------------------------------------------------------------------
def alibi_slopes(num_heads, device=None, dtype=tg.float32):
    """The per-head slopes of ALiBi, (num_heads,): for n heads a power of 2, the geometric
    sequence 2^(-8/n), 2^(-16/n), ..., 2^(-8); otherwise the slopes for the power of 2 just
    below n, then every other slope for twice that, as the paper's reference code does."""
    def geometric(n):
        return [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]

    below = 2 ** int(math.floor(math.log2(num_heads)))
    slopes = geometric(below) + geometric(2 * below)[0::2][:num_heads - below]
    return tg.tensor(slopes, dtype=dtype, device=device)


def alibi_bias(slopes, query_len, key_len=None):
    """The additive ALiBi bias (H, Tq, Tk) = -slope_h * |i - j|, to pass as attn_mask.

    slopes: (H,), e.g. `alibi_slopes(H)` (a learnable Parameter works too: the bias is
    differentiable). With key_len > query_len the queries are the last positions, as in
    decoding with a KV cache. On the causal part (j <= i) this is the paper's m * (j - i); the
    |i - j| form also serves bidirectional encoders.
    """
    key_len = query_len if key_len is None else key_len
    rows = tg.arange(key_len - query_len, key_len, device=slopes.device).unsqueeze(-1)
    distance = (rows - tg.arange(key_len, device=slopes.device)).abs().to(slopes.dtype)  # (Tq, Tk)
    return -slopes.reshape(-1, 1, 1) * distance  # (H, 1, 1) * (Tq, Tk) -> (H, Tq, Tk)


# --- T5's bucketed relative position bias -------------------------------------------------------
def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32,
                             max_distance=128):
    """T5's bucket (int64, same shape) for each relative position j - i (key minus query).

    Bidirectional: half of the buckets for keys after the query, half for keys at or before it;
    causal (bidirectional=False): keys after the query all fall in bucket 0 (they are masked
    anyway). Within a half, the first half of its buckets holds distances 0, 1, ... exactly and
    the rest cover distances up to max_distance on a log scale; farther ones share the last
    bucket. The log is taken in float32, as Mesh TensorFlow and Hugging Face do, so the
    boundaries land on the same integers.
    """
    buckets = 0
    if bidirectional:
        num_buckets //= 2
        buckets = (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)
    exact = num_buckets // 2
    # clamp(min=1): the log of 0 is never used (those distances are exact) but must stay finite
    scaled = (distance.clamp(min=1).to(tg.float32) / exact).log() / math.log(max_distance / exact)
    far = (exact + (scaled * (num_buckets - exact)).long()).clamp(max=num_buckets - 1)
    return buckets + tg.where(distance < exact, distance, far)


class RelativePositionBias(Module):
    """T5's learned relative position bias: the additive attention mask (H, Tq, Tk) whose entry
    for query i and key j is weight[bucket(j - i), h] (see `relative_position_bucket`).

    T5 computes it once per stack, in the first block, and every block reuses it; the encoder's
    is bidirectional, the decoder's causal. Parameter `weight` (num_buckets, num_heads): Hugging
    Face's `relative_attention_bias.weight`, initialised N(0, 1) like an Embedding.
    """

    def __init__(self, num_heads, num_buckets=32, max_distance=128, bidirectional=True,
                 device=None, dtype=None):
        super().__init__()
        self.num_heads, self.num_buckets = num_heads, num_buckets
        self.max_distance, self.bidirectional = max_distance, bidirectional
        self.weight = Parameter(tg.empty(num_buckets, num_heads, device=device, dtype=dtype))
        init.normal_(self.weight)

    def forward(self, query_len, key_len=None):
        """The bias (H, Tq, Tk). With key_len > query_len the queries are the last query_len
        positions, as when decoding with a KV cache."""
        key_len = query_len if key_len is None else key_len
        device = self.weight.device
        with tg.no_grad():
            rows = tg.arange(key_len - query_len, key_len, device=device).unsqueeze(-1)
            relative = tg.arange(key_len, device=device) - rows  # j - i: (Tq, Tk)
            buckets = relative_position_bucket(relative, self.bidirectional, self.num_buckets,
                                               self.max_distance)
        return tg.embedding(buckets, self.weight).permute(2, 0, 1)  # (Tq, Tk, H) -> (H, Tq, Tk)

    def extra_repr(self):
        return (f"num_heads={self.num_heads}, num_buckets={self.num_buckets}, "
                f"max_distance={self.max_distance}, bidirectional={self.bidirectional}")
