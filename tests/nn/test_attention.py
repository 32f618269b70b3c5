"""MultiheadAttention and KVCache: parity with torch.nn.MultiheadAttention, grouped-query
attention, causality, and cached decoding equal to a full forward pass."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.nn.attention import KVCache, MultiheadAttention
from tensorgrad.nn.masks import causal_mask
from tensorgrad.nn.positional import RotaryEmbedding

TORCH_NAMES = {"in_proj_weight": "qkv_proj.weight", "in_proj_bias": "qkv_proj.bias",
               "q_proj_weight": "q_proj.weight", "k_proj_weight": "k_proj.weight",
               "v_proj_weight": "v_proj.weight"}


def load_torch(ours, theirs):
    """Copy a torch.nn.MultiheadAttention's weights into ours (renaming, splitting in_proj_bias
    when the projections are separate)."""
    state = {}
    for name, value in theirs.state_dict().items():
        value = tg.tensor(value.detach().numpy())
        if name == "in_proj_bias" and not ours.fused:
            for part, chunk in zip("qkv", value.split(ours._split_sizes())):
                state[f"{part}_proj.bias"] = chunk
        else:
            state[TORCH_NAMES.get(name, name)] = value
    ours.load_state_dict(state)


def _np(t):
    return np.asarray(t.detach())


@pytest.mark.parametrize("kind", ["self", "cross", "kdim"])
def test_matches_torch_multihead_attention(kind):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    E, H, B, Tq, Tk = 16, 4, 2, 5, 7
    kdim = 6 if kind == "kdim" else None
    theirs = torch.nn.MultiheadAttention(E, H, batch_first=True, kdim=kdim, vdim=kdim)
    ours = MultiheadAttention(E, H, fused=kind != "kdim", kdim=kdim, vdim=kdim)
    load_torch(ours, theirs)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((B, Tq, E)).astype(np.float32)
    memory = rng.standard_normal((B, Tk, kdim or E)).astype(np.float32)
    if kind == "self":
        memory, Tk = x, Tq
    padding = np.zeros((B, Tk), dtype=bool)
    padding[1, -2:] = True
    allowed = rng.random((Tq, Tk)) > 0.3
    allowed[:, 0] = True
    tx = torch.tensor(x, requires_grad=True)
    tm = tx if kind == "self" else torch.tensor(memory)
    # torch's bool attn_mask is True where attention is NOT allowed: the opposite of ours
    ref, ref_w = theirs(tx, tm, tm, key_padding_mask=torch.tensor(padding),
                        attn_mask=torch.tensor(~allowed), average_attn_weights=False)
    gx = tg.tensor(x, requires_grad=True)
    out, w = ours(gx, None if kind == "self" else tg.tensor(memory),
                  key_padding_mask=tg.tensor(padding), attn_mask=tg.tensor(allowed),
                  need_weights=True, average_attn_weights=False)
    np.testing.assert_allclose(_np(out), ref.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(_np(w), ref_w.detach().numpy(), atol=1e-6)
    probe = rng.standard_normal(out.shape).astype(np.float32)
    ref.backward(torch.tensor(probe))
    out.backward(tg.tensor(probe))
    np.testing.assert_allclose(_np(gx.grad), tx.grad.numpy(), atol=1e-5)
    theirs_grads = {TORCH_NAMES.get(n, n): p.grad.numpy() for n, p in theirs.named_parameters()}
    for name, p in ours.named_parameters():
        if name in theirs_grads:
            np.testing.assert_allclose(_np(p.grad), theirs_grads[name], atol=1e-5)


def test_head_averaged_weights_match_torch():
    torch = pytest.importorskip("torch")
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    ours = MultiheadAttention(8, 2)
    load_torch(ours, theirs)
    x = np.random.default_rng(1).standard_normal((2, 4, 8)).astype(np.float32)
    _, ref_w = theirs(*(torch.tensor(x),) * 3)
    _, w = ours(tg.tensor(x), need_weights=True)
    np.testing.assert_allclose(_np(w), ref_w.detach().numpy(), atol=1e-6)
    assert ours(tg.tensor(x))[1] is None


@pytest.mark.parametrize("d, bias, expected", [(64, True, 4 * 64 ** 2 + 4 * 64),
                                               (64, False, 4 * 64 ** 2),
                                               (768, True, 2_362_368)])
def test_parameter_count_is_4d2_plus_4d(d, bias, expected):
    for fused in (True, False):
        assert MultiheadAttention(d, 8, bias=bias, fused=fused).num_parameters() == expected


def test_fused_and_separate_projections_agree():
    fused = MultiheadAttention(12, 3)
    separate = MultiheadAttention(12, 3, fused=False)
    w, b = fused.qkv_proj.weight, fused.qkv_proj.bias
    separate.load_state_dict({
        **{f"{n}_proj.weight": w[12 * i:12 * (i + 1)] for i, n in enumerate("qkv")},
        **{f"{n}_proj.bias": b[12 * i:12 * (i + 1)] for i, n in enumerate("qkv")},
        "out_proj.weight": fused.out_proj.weight, "out_proj.bias": fused.out_proj.bias})
    x, memory = tg.randn(2, 3, 12), tg.randn(2, 5, 12)
    np.testing.assert_allclose(_np(fused(x)[0]), _np(separate(x)[0]), atol=1e-6)
    np.testing.assert_allclose(_np(fused(x, memory)[0]), _np(separate(x, memory)[0]), atol=1e-6)


def test_grouped_query_attention_equals_repeated_key_value_heads():
    """n_kv_heads=2 of 4 heads is ordinary attention whose key/value heads come in copies."""
    gqa = MultiheadAttention(16, 4, n_kv_heads=2, fused=False)
    full = MultiheadAttention(16, 4, fused=False)
    assert gqa.k_proj.weight.shape == (8, 16)
    assert gqa.num_parameters() == 2 * (16 * 16 + 16) + 2 * (8 * 16 + 8)
    state = gqa.state_dict()
    for name in ("k_proj", "v_proj"):  # head h reads kv head h // 2
        for part in ("weight", "bias"):
            rows = state[f"{name}.{part}"].reshape((2, 1, 4) + state[f"{name}.{part}"].shape[1:])
            state[f"{name}.{part}"] = rows.expand((2, 2, 4) + rows.shape[3:]).reshape(
                (16,) + rows.shape[3:])
    full.load_state_dict(state)
    x = tg.randn(2, 5, 16)
    np.testing.assert_allclose(_np(gqa(x, is_causal=True)[0]), _np(full(x, is_causal=True)[0]),
                               atol=1e-6)


def test_causal_attention_leaks_nothing_from_the_future():
    attn = MultiheadAttention(16, 4)
    x = tg.randn(1, 8, 16, requires_grad=True)
    out, _ = attn(x, is_causal=True)
    t = 4
    changed = x.detach().clone()
    changed[:, t + 1:] = tg.randn(1, 8 - t - 1, 16)
    out2, _ = attn(changed, is_causal=True)
    np.testing.assert_array_equal(_np(out)[:, :t + 1], _np(out2)[:, :t + 1])
    assert not np.allclose(_np(out)[:, t + 1:], _np(out2)[:, t + 1:])
    grad, = tg.grad(out[:, :t + 1].sum(), x)
    assert np.all(_np(grad)[:, t + 1:] == 0)  # no gradient from later positions to earlier outputs
    assert np.all(np.abs(_np(grad)[:, :t + 1]).sum(-1) > 0)


@pytest.mark.parametrize("options", [dict(), dict(n_kv_heads=2, fused=False, bias=False),
                                     dict(rotary=True)])
def test_cached_decoding_of_20_tokens_equals_the_full_forward(options):
    options = dict(options)
    if options.pop("rotary", False):
        options["rotary"] = RotaryEmbedding(8)
    attn = MultiheadAttention(32, 4, **options).eval()
    x = tg.randn(2, 20, 32)
    full, _ = attn(x, is_causal=True)
    cache, outs = KVCache(), []
    with tg.no_grad():
        outs.append(attn(x[:, :5], is_causal=True, cache=cache)[0])  # a prompt of 5 tokens
        for t in range(5, 20):  # then one token at a time
            outs.append(attn(x[:, t:t + 1], is_causal=True, cache=cache)[0])
    assert len(cache) == 20 and cache.key.shape == (2, attn.n_kv_heads, 20, 8)
    np.testing.assert_allclose(_np(tg.cat(outs, dim=1)), _np(full), atol=1e-5)
    cache.reset()
    assert len(cache) == 0


def test_cache_appends_in_place_under_no_grad_and_by_cat_with_grad():
    keys = [tg.randn(2, 3, 1 if t else 5, 4) for t in range(30)]  # a 5-token prompt, 29 steps
    cache = KVCache()
    with tg.no_grad():
        first = cache.update(keys[0], keys[0] * 2)[0]
        views = [first]
        for k in keys[1:]:
            views.append(cache.update(k, k * 2)[0])
    whole = tg.cat(keys, dim=-2)
    np.testing.assert_array_equal(_np(cache.key), _np(whole))
    np.testing.assert_array_equal(_np(cache.value), _np(whole * 2))
    np.testing.assert_array_equal(_np(first), _np(keys[0]))  # earlier views keep their tokens
    buffer = cache._storage[0]
    assert buffer.shape[-2] < 2 * 34 + 1 and cache.key.shape[-2] == 34  # grown by doubling
    k = tg.randn(2, 3, 1, 4, requires_grad=True)
    key, _ = cache.update(k, k)  # grad mode: a differentiable cat of the views and k
    key.sum().backward()
    np.testing.assert_array_equal(_np(k.grad), np.ones((2, 3, 1, 4)))
    assert cache._storage == [None, None] and len(cache) == 35


def test_cross_attention_cache_projects_the_memory_once():
    attn = MultiheadAttention(16, 2)
    x, memory = tg.randn(1, 4, 16), tg.randn(1, 6, 16)
    full, _ = attn(x, memory)
    cache = KVCache()
    steps = [attn(x[:, t:t + 1], memory, cache=cache)[0] for t in range(4)]
    assert len(cache) == 6  # the memory, stored once
    np.testing.assert_allclose(_np(tg.cat(steps, dim=1)), _np(full), atol=1e-6)


def test_explicit_bottom_right_causal_mask_equals_is_causal():
    attn = MultiheadAttention(16, 2)
    x = tg.randn(2, 5, 16)
    np.testing.assert_allclose(_np(attn(x, is_causal=True)[0]),
                               _np(attn(x, attn_mask=causal_mask(5))[0]), atol=1e-6)


def test_attention_dropout_only_in_training():
    attn = MultiheadAttention(16, 2, dropout=0.5)
    x = tg.randn(2, 6, 16)
    train_a, train_b = _np(attn(x)[0]), _np(attn(x)[0])
    assert not np.allclose(train_a, train_b)
    attn.eval()
    np.testing.assert_array_equal(_np(attn(x)[0]), _np(attn(x)[0]))


def test_weights_are_probabilities_and_float32():
    attn = MultiheadAttention(16, 4)
    out, w = attn(tg.randn(2, 3, 16), tg.randn(2, 5, 16), need_weights=True,
                  average_attn_weights=False)
    assert out.dtype == tg.float32 and w.shape == (2, 4, 3, 5)
    np.testing.assert_allclose(_np(w).sum(-1), 1.0, atol=1e-6)


def test_clear_errors():
    with pytest.raises(ValueError, match="divisible"):
        MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="n_kv_heads"):
        MultiheadAttention(12, 4, n_kv_heads=3)
    with pytest.raises(ValueError, match="fused=False"):
        MultiheadAttention(8, 2, kdim=4)
    with pytest.raises(ValueError, match=r"MultiheadAttention: expected query of shape \(B, T, 8"):
        MultiheadAttention(8, 2)(tg.randn(2, 3, 6))
