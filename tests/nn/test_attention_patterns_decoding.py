"""nn/attention_patterns.py and attention_caches.py: linear attention equals its quadratic
form; cached decoding equals the uncached forward for every pattern (the rolling window cache
keeps only the window, linear attention's state is O(1)); GPTConfig selects a pattern."""
import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad.models.gpt import GPT, GPTConfig
from tensorgrad.nn.attention import Attention
from tensorgrad.nn.attention_caches import LinearAttentionState, RollingKVCache
from tensorgrad.nn.attention_patterns import (
    BigBird, LinearAttention, SlidingWindow, Strided,
)
from tensorgrad.nn.positional import RotaryEmbedding


def _quadratic(q, k, v, causal, padding=None, eps=1e-6):
    """phi(Q) phi(K)^T (masked) V, normalised: the form linear attention must equal."""
    groups = q.shape[1] // k.shape[1]
    fq, fk = F.elu(q) + 1, (F.elu(k) + 1).repeat_interleave(groups, dim=1)
    scores = fq @ fk.mT  # (B, H, T, T)
    if causal:
        scores = scores.tril()
    if padding is not None:
        scores = scores * (~padding).to(q.dtype).unsqueeze(1).unsqueeze(1)
    return (scores @ v.repeat_interleave(groups, dim=1)) / (scores.sum(-1, keepdim=True) + eps)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("gqa,padded", [(False, False), (True, True)])
def test_linear_attention_equals_its_quadratic_form(device, causal, gqa, padded):
    T = 23
    q = tg.randn(2, 4 if gqa else 2, T, 8, dtype=tg.float64, device=device, requires_grad=True)
    k, v = (tg.randn(2, 2, T, 8, dtype=tg.float64, device=device, requires_grad=True)
            for _ in range(2))
    padding = tg.arange(T, device=device) >= tg.tensor([[T - 5], [T]], device=device) \
        if padded else None
    pattern = LinearAttention(chunk_size=5)  # chunks that do not divide T
    out = pattern(q, k, v, key_padding_mask=padding, is_causal=causal, enable_gqa=gqa)
    ref = _quadratic(q, k, v, causal, padding)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-10)
    g = tg.randn(*out.shape, dtype=tg.float64, device=device)
    for a, b in zip(tg.grad((out * g).sum(), [q, k, v]), tg.grad((ref * g).sum(), [q, k, v])):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-10)


def test_linear_attention_refuses_dropout_and_other_caches():
    q = tg.randn(1, 1, 4, 2)
    with pytest.raises(ValueError, match="dropout"):
        LinearAttention()(q, q, q, dropout_p=0.1)
    with pytest.raises(TypeError, match="LinearAttentionState"):
        LinearAttention()(q, q, q, cache=RollingKVCache(2))


def _decode(attn, x, cache, prompt):
    """The prompt in one call, then one token at a time."""
    with tg.no_grad():
        outs = [attn(x[:, :prompt], is_causal=True, cache=cache)]
        outs += [attn(x[:, t:t + 1], is_causal=True, cache=cache)
                 for t in range(prompt, x.shape[1])]
    return tg.cat(outs, dim=1)


@pytest.mark.parametrize("pattern", [
    SlidingWindow(4), SlidingWindow(3, global_tokens=2, block_size=4),
    SlidingWindow(3, global_tokens=2, alibi=True), BigBird(block_size=4, random_blocks=1),
    Strided(3), Strided(3, reach=7), LinearAttention(chunk_size=4)], ids=repr)
def test_cached_decoding_equals_the_full_forward(pattern):
    E, H, T = 16, 4, 21
    attn = Attention(E, H, n_kv_heads=2, rotary=RotaryEmbedding(E // H), pattern=pattern,
                     dtype=tg.float64)
    x = tg.randn(2, T, E, dtype=tg.float64)
    with tg.no_grad():
        full = attn(x, is_causal=True)
    cache = pattern.make_cache()
    np.testing.assert_allclose(_decode(attn, x, cache, prompt=6).numpy(), full.numpy(),
                               atol=1e-10)
    assert len(cache) == T


def test_rolling_cache_keeps_only_the_window_and_the_global_tokens():
    window, glob, T = 5, 2, 30
    cache = SlidingWindow(window, global_tokens=glob).make_cache()
    assert isinstance(cache, RollingKVCache)
    attn = Attention(8, 2, pattern=SlidingWindow(window, global_tokens=glob), dtype=tg.float64)
    _decode(attn, tg.randn(1, T, 8, dtype=tg.float64), cache, prompt=9)
    assert cache.key.shape == (1, 2, glob + window, 4)
    assert cache.positions.tolist() == [0, 1] + list(range(T - window, T))
    with pytest.raises(ValueError, match="count"):
        SlidingWindow(3, global_tokens=[0, 5]).make_cache()


def test_linear_attention_state_is_constant_size():
    cache = LinearAttention().make_cache()
    attn = Attention(8, 2, pattern=LinearAttention(), dtype=tg.float64)
    _decode(attn, tg.randn(3, 17, 8, dtype=tg.float64), cache, prompt=4)
    S, z = cache.state
    assert isinstance(cache, LinearAttentionState) and len(cache) == 17
    assert S.shape == (3, 2, 4, 4) and z.shape == (3, 2, 4)


def test_padded_prompt_decodes_like_the_full_forward():
    """A key padding mask covering cached and new keys, as GPT passes it."""
    pattern = SlidingWindow(3, global_tokens=1)
    attn = Attention(8, 2, pattern=pattern, dtype=tg.float64)
    x = tg.randn(2, 12, 8, dtype=tg.float64)
    padding = tg.arange(12) < tg.tensor([[3], [0]])  # left padding in the first sequence
    with tg.no_grad():
        full = attn(x, key_padding_mask=padding, is_causal=True)
        cache = pattern.make_cache()
        outs = [attn(x[:, :5], key_padding_mask=padding[:, :5], is_causal=True, cache=cache)]
        for t in range(5, 12):
            outs.append(attn(x[:, t:t + 1], key_padding_mask=padding[:, :t + 1], is_causal=True,
                             cache=cache))
    np.testing.assert_allclose(tg.cat(outs, dim=1).numpy()[:, 3:], full.numpy()[:, 3:],
                               atol=1e-10)


@pytest.mark.parametrize("attention", ["sliding_window", "bigbird", "strided", "linear"])
def test_gpt_config_selects_a_pattern(attention):
    model = GPT(GPTConfig.tiny(attention=attention)).eval()
    assert all(block.self_attn.pattern is model.pattern for block in model.blocks)
    ids = tg.randint(0, 64, (2, 20))
    with tg.no_grad():
        full, _ = model(ids)
        cache = model.make_cache()
        steps = [model(ids[:, :7], cache=cache)[0]]
        steps += [model(ids[:, t:t + 1], cache=cache)[0] for t in range(7, 20)]
    np.testing.assert_allclose(tg.cat(steps, dim=1).numpy(), full.numpy(), atol=1e-5)
    logits, loss = model(ids, targets=ids)
    loss.backward()
    assert model.wte.weight.grad is not None


def test_gpt_with_a_pattern_has_no_hugging_face_checkpoint(tmp_path):
    model = GPT(GPTConfig.tiny(attention=SlidingWindow(4)))
    with pytest.raises(ValueError, match="only dense attention"):
        model.save_pretrained(tmp_path)
