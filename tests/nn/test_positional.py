"""Positional encodings: sinusoidal, learned, rotary (RoPE) and ALiBi; each one breaks the
permutation equivariance of self-attention, which without them holds exactly."""
import math

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.nn import positional as P
from tensorgrad.nn.attention import Attention
from tensorgrad.nn.positional import RelativePositionBias, relative_position_bucket


def test_sinusoidal_table_follows_the_paper(device):
    table = np.asarray(P.sinusoidal_encoding(6, 8, device=device))
    assert table.dtype == np.float32 and table.shape == (6, 8)
    pos, i = np.arange(6)[:, None], np.arange(4)[None, :]
    angle = pos / 10000.0 ** (2 * i / 8)
    np.testing.assert_allclose(table[:, 0::2], np.sin(angle), atol=1e-7)
    np.testing.assert_allclose(table[:, 1::2], np.cos(angle), atol=1e-7)
    with pytest.raises(ValueError, match="even"):
        P.sinusoidal_encoding(4, 7)


def test_sinusoidal_module_is_a_fixed_buffer(device):
    pe = P.SinusoidalPositionalEncoding(16, 8, device=device)
    assert list(pe.parameters()) == [] and "pe" not in pe.state_dict()
    x = tg.randn(2, 5, 8, device=device)
    np.testing.assert_allclose(np.asarray(pe(x, positions=3) - x)[1],
                               np.asarray(P.sinusoidal_encoding(16, 8))[3:8], atol=1e-5)
    with pytest.raises(ValueError, match="SinusoidalPositionalEncoding"):
        pe(tg.randn(1, 5, 8, device=device), positions=12)


def test_learned_encoding_adds_trainable_rows(device):
    pe = P.LearnedPositionalEncoding(10, 4, device=device)
    assert [n for n, _ in pe.named_parameters()] == ["weight"]
    assert abs(float(np.asarray(pe.weight.detach()).std()) - 0.02) < 0.01
    x = tg.zeros(2, 3, 4, device=device)
    positions = tg.tensor([[0, 1, 2], [5, 6, 7]], device=device)  # per sequence, (B, T)
    out = pe(x, positions)
    np.testing.assert_array_equal(np.asarray(out.detach())[1], np.asarray(pe.weight.detach())[5:8])
    out.sum().backward()
    assert np.asarray(pe.weight.grad)[[0, 1, 2, 5, 6, 7]].min() == 1.0
    assert np.asarray(pe.weight.grad)[[3, 4, 8, 9]].max() == 0.0


def _rotary_scores(rope, q_vec, k_vec, length):
    """Score between the same query vector placed at i and the same key vector placed at j."""
    q = tg.tensor(np.tile(q_vec, (1, 1, length, 1)))
    k = tg.tensor(np.tile(k_vec, (1, 1, length, 1)))
    q, k = rope(q, k)
    return np.asarray((q @ k.mT)[0, 0])  # (T, T)


@pytest.mark.parametrize("interleaved", [False, True])
def test_rope_score_depends_only_on_distance(interleaved):
    rng = np.random.default_rng(0)
    q_vec, k_vec = rng.standard_normal(8), rng.standard_normal(8)
    scores = _rotary_scores(P.RotaryEmbedding(8, interleaved=interleaved), q_vec, k_vec, 12)
    for d in range(-11, 12):
        diagonal = np.diagonal(scores, offset=-d)  # entries with i - j = d
        np.testing.assert_allclose(diagonal, diagonal[0], rtol=1e-10, atol=1e-10)
    assert not np.allclose(np.diagonal(scores, 0)[0], np.diagonal(scores, -3)[0])


def test_rope_rotates_without_changing_norms_and_keeps_unrotated_features():
    q, k = tg.randn(2, 3, 5, 8, dtype=tg.float64), tg.randn(2, 1, 5, 8, dtype=tg.float64)
    full_q, _ = P.RotaryEmbedding(8)(q, k, positions=7)
    np.testing.assert_allclose(np.asarray(full_q.norm(dim=-1)), np.asarray(q.norm(dim=-1)))
    partial_q, partial_k = P.RotaryEmbedding(4)(q, k)  # GPT-NeoX partial rotary
    np.testing.assert_array_equal(np.asarray(partial_q)[..., 4:], np.asarray(q)[..., 4:])
    assert partial_k.shape == k.shape and full_q.dtype == tg.float64


def test_interleaved_and_rotate_half_layouts_are_a_permutation_apart():
    q = tg.randn(1, 2, 6, 8, dtype=tg.float64)
    half, _ = P.RotaryEmbedding(8)(q, q)
    # feature pair (i, i + 4) in the "rotate half" layout is pair (2i, 2i + 1) when interleaved
    order = np.array([0, 4, 1, 5, 2, 6, 3, 7])
    inter, _ = P.RotaryEmbedding(8, interleaved=True)(q[..., order], q[..., order])
    np.testing.assert_allclose(np.asarray(inter), np.asarray(half)[..., order], atol=1e-12)


def test_rope_matches_hugging_face_llama():
    torch = pytest.importorskip("torch")
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    config = llama.LlamaConfig(hidden_size=32, num_attention_heads=2, rope_theta=500.0)
    positions = torch.tensor([[3, 4, 5, 9], [0, 1, 2, 3]])
    q, k = torch.randn(2, 2, 4, 16), torch.randn(2, 1, 4, 16)
    cos, sin = llama.LlamaRotaryEmbedding(config)(q, positions)
    ref_q, ref_k = llama.apply_rotary_pos_emb(q, k, cos, sin)
    ours_q, ours_k = P.RotaryEmbedding(16, base=500.0)(tg.tensor(q.numpy()), tg.tensor(k.numpy()),
                                                       tg.tensor(positions.numpy()))
    np.testing.assert_allclose(np.asarray(ours_q), ref_q.numpy(), atol=1e-5)
    np.testing.assert_allclose(np.asarray(ours_k), ref_k.numpy(), atol=1e-5)


def test_alibi_slopes():
    np.testing.assert_allclose(np.asarray(P.alibi_slopes(8)), [2.0 ** -i for i in range(1, 9)])
    eight, sixteen = [2.0 ** -i for i in range(1, 9)], [2.0 ** (-i / 2) for i in range(1, 17)]
    np.testing.assert_allclose(np.asarray(P.alibi_slopes(12)), eight + sixteen[0::2][:4])
    assert P.alibi_slopes(12).dtype == tg.float32


def test_alibi_bias_penalises_distance_and_learns_its_slopes():
    slopes = tg.tensor([0.5, 0.25], requires_grad=True)
    bias = P.alibi_bias(slopes, 2, 4)  # queries at positions 2 and 3
    assert bias.shape == (2, 2, 4)
    np.testing.assert_allclose(np.asarray(bias.detach())[0],
                               [[-1.0, -0.5, 0.0, -0.5], [-1.5, -1.0, -0.5, 0.0]])
    np.testing.assert_allclose(np.asarray(tg.grad(bias.sum(), slopes)[0]), [-10.0, -10.0])


# --- order: attention alone cannot see it, every encoding can ----------------------------------
D, H, T = 16, 2, 6


def _self_attention(encoding):
    """x (1, T, D) -> self-attention output, with the named positional encoding."""
    rotary = P.RotaryEmbedding(D // H) if encoding == "rotary" else None
    attn = Attention(D, H, rotary=rotary)
    sinusoidal = P.SinusoidalPositionalEncoding(T, D)
    learned = P.LearnedPositionalEncoding(T, D)
    with tg.no_grad():
        learned.weight.mul_(50.0)  # make the learned rows matter at this tiny scale

    def run(x):
        if encoding == "sinusoidal":
            x = sinusoidal(x)
        elif encoding == "learned":
            x = learned(x)
        mask = P.alibi_bias(P.alibi_slopes(H), T) if encoding == "alibi" else None
        return attn(x, attn_mask=mask)
    return run


@pytest.mark.parametrize("encoding", [None, "sinusoidal", "learned", "rotary", "alibi"])
def test_permutation_equivariance_holds_only_without_positions(encoding):
    run = _self_attention(encoding)
    x = tg.randn(1, T, D)
    perm = np.random.default_rng(1).permutation(T)
    permuted_then_attended = np.asarray(run(x[:, perm]).detach())
    attended_then_permuted = np.asarray(run(x).detach())[:, perm]
    equal = np.allclose(permuted_then_attended, attended_then_permuted, atol=1e-5)
    assert equal == (encoding is None)


def test_learned_encoding_at_an_offset_reads_consecutive_rows():
    pe = P.LearnedPositionalEncoding(10, 4)
    x = tg.randn(2, 3, 4)
    by_offset = pe(x, 5)  # what decoding with a KV cache passes: rows 5, 6, 7
    by_tensor = pe(x, tg.arange(5, 8))
    np.testing.assert_array_equal(np.asarray(by_offset.detach()), np.asarray(by_tensor.detach()))
    for bad in (8, -1):  # past the table, before it
        with pytest.raises(ValueError, match="does not fit a table of 10 positions"):
            pe(x, bad)


def test_positions_must_match_the_sequence():
    with pytest.raises(ValueError, match=r"shape \(4,\) or \(B, 4\)"):
        P.RotaryEmbedding(4)(tg.randn(1, 1, 4, 4), tg.randn(1, 1, 4, 4), tg.arange(3))
    assert math.isclose(float(P.alibi_slopes(1)[0]), 2.0 ** -8)


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets, max_distance", [(32, 128), (8, 20), (33, 7)])
def test_t5_relative_position_buckets_match_hugging_face(bidirectional, num_buckets,
                                                         max_distance):
    torch = pytest.importorskip("torch")
    T5Attention = pytest.importorskip("transformers.models.t5.modeling_t5").T5Attention
    relative = np.arange(-400, 401)
    expected = T5Attention._relative_position_bucket(
        torch.tensor(relative), bidirectional, num_buckets, max_distance).numpy()
    ours = relative_position_bucket(tg.tensor(relative), bidirectional, num_buckets, max_distance)
    np.testing.assert_array_equal(np.asarray(ours), expected)


def test_relative_position_bias_looks_up_one_learned_score_per_head_and_bucket():
    bias = RelativePositionBias(num_heads=3, num_buckets=8, max_distance=16)
    table = bias(5)  # (H, Tq, Tk)
    assert table.shape == (3, 5, 5)
    w = np.asarray(bias.weight.detach())
    # bidirectional with 8 buckets: 0..1 exact before, 4..5 exact after the query
    np.testing.assert_allclose(np.asarray(table.detach())[:, 2, 2], w[0])
    np.testing.assert_allclose(np.asarray(table.detach())[:, 2, 1], w[1])
    np.testing.assert_allclose(np.asarray(table.detach())[:, 2, 3], w[5])
    # the last 2 queries of 7 keys (decoding with a cache) see the last rows of the full table
    full, tail = bias(7), bias(2, 7)
    np.testing.assert_allclose(np.asarray(tail.detach()), np.asarray(full.detach())[:, 5:])
    table.sum().backward()  # 25 entries per head, each adding 1 to the bucket it reads
    assert float(bias.weight.grad.sum()) == 3 * 25
