"""nn/attention_patterns.py: every sparse pattern equals dense attention with its bool mask
(values and gradients, float64, causal and not, padding, GQA, ALiBi, rotary through
nn.Attention); the masks are the published patterns; the blocked computation never builds the
(T, T) matrix (peak memory under tracemalloc). Decoding and linear attention:
test_attention_patterns_decoding.py."""
import tracemalloc

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad.nn.attention import Attention
from tensorgrad.nn.attention_patterns import (
    BigBird, LinearAttention, SlidingWindow, Strided, make_pattern,
)
from tensorgrad.nn.positional import RotaryEmbedding, alibi_bias, alibi_slopes

# Lengths that are not multiples of the blocks, so the last block is partial.
PATTERNS = {
    "window": SlidingWindow(4),
    "window+global": SlidingWindow(5, global_tokens=3, block_size=8),
    "window+global positions": SlidingWindow(3, global_tokens=[0, 10, 36]),
    "bigbird": BigBird(block_size=4, random_blocks=2),
    "bigbird 2 global": BigBird(block_size=5, global_blocks=2, random_blocks=1, seed=3),
    "strided": Strided(5),
    "strided reach": Strided(4, reach=12, column_block=3),
}


def _qkv(device, T=37, hq=2, hk=2, E=8, B=2):
    make = lambda h: tg.randn(B, h, T, E, dtype=tg.float64, device=device,  # noqa: E731
                              requires_grad=True)
    return make(hq), make(hk), make(hk)


def _max_error(out, ref, inputs):
    g = tg.randn(*out.shape, dtype=out.dtype, device=out.device)
    ours = tg.grad((out * g).sum(), inputs, allow_unused=True)
    theirs = tg.grad((ref * g).sum(), inputs, allow_unused=True)
    errors = [np.abs(out.detach().numpy() - ref.detach().numpy()).max()]
    errors += [np.abs(a.numpy() - b.numpy()).max() for a, b in zip(ours, theirs)]
    return max(errors)


@pytest.mark.parametrize("name", list(PATTERNS))
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("gqa,padded", [(False, False), (True, True)])
def test_equals_dense_attention_with_its_mask(device, name, causal, gqa, padded):
    pattern = PATTERNS[name]
    T = 37
    q, k, v = _qkv(device, T, hq=4 if gqa else 2)
    padding = None
    mask = pattern.mask(T, causal, device=device)
    if padded:  # the first sequence ends 9 tokens early: whole windows of padding
        padding = tg.arange(T, device=device) >= tg.tensor([[T - 9], [T]], device=device)
        mask = mask & ~padding.unsqueeze(1).unsqueeze(1)
    out = pattern(q, k, v, key_padding_mask=padding, is_causal=causal, enable_gqa=gqa)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)
    assert _max_error(out, ref, [q, k, v]) < 1e-6


@pytest.mark.parametrize("name", ["window+global", "bigbird", "strided"])
@pytest.mark.parametrize("causal", [False, True])
def test_alibi_equals_dense_attention_with_its_bias(device, name, causal):
    pattern = PATTERNS[name]
    alibi = type(pattern).__new__(type(pattern))
    alibi.__dict__.update(pattern.__dict__, alibi=True, _layouts={})
    T, H = 37, 4
    q, k, v = _qkv(device, T, hq=H)
    slopes = alibi_slopes(H, device=device, dtype=tg.float64)
    bias = tg.where(pattern.mask(T, causal, device=device), 0.0, float("-inf")).to(tg.float64)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=bias + alibi_bias(slopes, T),
                                         enable_gqa=True)
    out = alibi(q, k, v, is_causal=causal, enable_gqa=True)
    assert _max_error(out, ref, [q, k, v]) < 1e-6


@pytest.mark.parametrize("name", ["window+global", "bigbird", "strided"])
def test_attention_module_with_rotary_and_gqa(device, name):
    """nn.Attention(pattern=...) is the module with the pattern's mask as attn_mask."""
    E, H, T = 16, 4, 29
    rotary = RotaryEmbedding(E // H, device=device)
    sparse = Attention(E, H, n_kv_heads=2, rotary=rotary, pattern=PATTERNS[name],
                       device=device, dtype=tg.float64)
    dense = Attention(E, H, n_kv_heads=2, rotary=rotary, device=device, dtype=tg.float64)
    dense.load_state_dict(sparse.state_dict())
    x = tg.randn(2, T, E, dtype=tg.float64, device=device, requires_grad=True)
    mask = PATTERNS[name].mask(T, True, device=device)
    out = sparse(x, is_causal=True)
    ref = dense(x, attn_mask=mask, is_causal=True)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-6)
    g = tg.randn(*out.shape, dtype=out.dtype, device=device)
    grads = tg.grad((out * g).sum(), [x] + list(sparse.parameters()))
    refs = tg.grad((ref * g).sum(), [x] + list(dense.parameters()))
    assert max(np.abs(a.numpy() - b.numpy()).max() for a, b in zip(grads, refs)) < 1e-6


@pytest.mark.parametrize("name", ["window+global", "bigbird", "strided", "linear"])
def test_weights_are_the_ones_forward_uses(name):
    pattern = PATTERNS.get(name) or LinearAttention(chunk_size=4)
    q, k, v = _qkv("cpu", 19, hq=4)
    padding = tg.arange(19) >= tg.tensor([[15], [19]])
    mask = ~padding.unsqueeze(1).unsqueeze(1)
    weights = pattern.weights(q, k, mask, is_causal=True, enable_gqa=True)  # (B, H, T, T)
    out = pattern(q, k, v, key_padding_mask=padding, is_causal=True, enable_gqa=True)
    np.testing.assert_allclose((weights @ v.repeat_interleave(2, dim=1)).detach().numpy(),
                               out.detach().numpy(), atol=1e-10)
    if name != "linear":
        allowed = pattern.mask(19, True).numpy() & mask.numpy()
        assert not (weights.detach().numpy() * ~allowed).any()
    attn = Attention(8, 4, pattern=pattern)
    x = tg.randn(2, 19, 8)
    with tg.no_grad():
        rows = attn.attention_weights(x, is_causal=True).sum(-1)
    np.testing.assert_allclose(rows.numpy(), 1.0, atol=1e-5)


def test_attention_module_refuses_a_dense_mask_with_a_pattern():
    attn = Attention(8, 2, pattern=SlidingWindow(2))
    with pytest.raises(ValueError, match="pattern.*attn_mask"):
        attn(tg.randn(1, 5, 8), attn_mask=tg.ones(5, 5, dtype=tg.bool_))


def test_second_order_gradients():
    """Composites all the way: gradients of gradients come for free."""
    pattern = SlidingWindow(2, global_tokens=1, block_size=4)
    q, k, v = (tg.randn(1, 1, 9, 3, dtype=tg.float64, requires_grad=True) for _ in range(3))
    assert tg.gradgradcheck(lambda a, b, c: pattern(a, b, c, is_causal=True), (q, k, v))


# --- the masks themselves --------------------------------------------------------------------
def _dense(rule, T):
    return np.array([[rule(i, j) for j in range(T)] for i in range(T)])


def test_sliding_window_mask_is_longformer():
    w, glob, T = 2, [0, 7], 11
    expected = _dense(lambda i, j: abs(i - j) <= w or i in glob or j in glob, T)
    mask = SlidingWindow(w, global_tokens=glob).mask(T).numpy()
    np.testing.assert_array_equal(mask, expected)
    causal = SlidingWindow(w, global_tokens=glob).mask(T, causal=True).numpy()
    np.testing.assert_array_equal(causal, expected & np.tri(T, dtype=bool))


def test_strided_mask_is_the_sparse_transformers():
    s, T = 3, 13
    expected = _dense(lambda i, j: 0 <= i - j < s or (i - j >= 0 and (i - j) % s == 0), T)
    np.testing.assert_array_equal(Strided(s).mask(T, causal=True).numpy(), expected)
    reach = _dense(lambda i, j: abs(i - j) < s or ((i - j) % s == 0 and abs(i - j) <= 6), T)
    np.testing.assert_array_equal(Strided(s, reach=6).mask(T).numpy(), reach)


def test_bigbird_mask_has_window_global_and_random_blocks():
    b, T = 4, 40
    pattern = BigBird(block_size=b, global_blocks=1, random_blocks=2)
    mask = pattern.mask(T).numpy().reshape(T // b, b, T // b, b)
    blocks = mask.all(axis=(1, 3))
    assert (mask.any(axis=(1, 3)) == blocks).all()  # block-level: a block is seen whole
    table = pattern.random_blocks(T // b, False).numpy()
    for i in range(T // b):
        seen = set(np.flatnonzero(blocks[i]))
        if i == 0:
            assert seen == set(range(T // b))  # a global block sees everything
            continue
        expected = {0} | {j for j in (i - 1, i, i + 1) if 0 <= j < T // b} | set(table[i])
        assert seen == expected and len(set(table[i]) - {i - 1, i, i + 1, 0}) == 2
    causal = BigBird(block_size=b, random_blocks=2).random_blocks(T // b, True).numpy()
    assert all(j < i - 1 for i, row in enumerate(causal) for j in row if j >= 0)


def test_make_pattern_resolves_config_values():
    assert make_pattern("dense") is None and make_pattern(None) is None
    assert isinstance(make_pattern("sliding_window"), SlidingWindow)
    assert isinstance(make_pattern("linear"), LinearAttention)
    window = SlidingWindow(8)
    assert make_pattern(window) is window
    with pytest.raises(ValueError, match="unknown 'sparse'.*bigbird"):
        make_pattern("sparse")


# --- cost: the blocked patterns never build the (T, T) matrix ----------------------------------
@pytest.mark.parametrize("pattern", [SlidingWindow(32, global_tokens=2), BigBird(block_size=32),
                                     Strided(32, reach=256)], ids=repr)
def test_peak_memory_stays_far_below_the_dense_matrix(pattern):
    """At T = 4096 one float64 (T, T) matrix is 128 MiB; forward and backward together stay
    under 64 MiB, half of it (NumPy reports its allocations to tracemalloc)."""
    T, E = 4096, 16
    q, k, v = (tg.randn(1, 1, T, E, dtype=tg.float64, requires_grad=True) for _ in range(3))
    budget, dense_matrix = 64 * 2**20, T * T * 8
    pattern(q[..., :64, :], k[..., :64, :], v[..., :64, :]).sum().backward()  # compile kernels
    q.grad = k.grad = v.grad = None
    tracemalloc.start()
    try:
        pattern(q, k, v, is_causal=True).sum().backward()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < budget < dense_matrix, f"peak {peak / 2**20:.1f} MiB"  # measured: 15-38
    assert q.grad.shape == q.shape and k.grad is not None and v.grad is not None


def test_dropout_drops_probabilities_without_bias():
    """Dropout on the merged probabilities: outputs change, and their mean over many draws is
    the output without dropout (each kept probability is scaled by 1 / (1 - p))."""
    pattern = SlidingWindow(2, global_tokens=1, block_size=4)
    q, k, v = (tg.randn(1, 1, 9, 3, dtype=tg.float64) for _ in range(3))
    plain = pattern(q, k, v).numpy()
    draws = np.stack([pattern(q, k, v, dropout_p=0.3).numpy() for _ in range(400)])
    assert np.abs(draws[0] - plain).max() > 1e-3
    np.testing.assert_allclose(draws.mean(0), plain, atol=0.15)
