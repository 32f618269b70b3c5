"""nn/attention.py. Attention and KVCache: parity with torch.nn.MultiheadAttention through a
renaming, grouped-query attention, causality, cached decoding equal to a full forward pass.
MultiheadAttention: PyTorch's module, against PyTorch's with the same weights (layouts, bool and
float masks, kdim/vdim, weights, gradients)."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.nn.attention import Attention, KVCache, MultiheadAttention
from tensorgrad.nn.masks import causal_mask
from tensorgrad.nn.positional import RotaryEmbedding

TORCH_NAMES = {"in_proj_weight": "qkv_proj.weight", "in_proj_bias": "qkv_proj.bias",
               "q_proj_weight": "q_proj.weight", "k_proj_weight": "k_proj.weight",
               "v_proj_weight": "v_proj.weight"}


def load_torch(ours, theirs):
    """Copy a torch.nn.MultiheadAttention's weights into an Attention (renaming, splitting
    in_proj_bias when the projections are separate)."""
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
    ours = Attention(E, H, fused=kind != "kdim", kdim=kdim, vdim=kdim)
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
    masks = dict(key_padding_mask=tg.tensor(padding), attn_mask=tg.tensor(allowed))
    memory = None if kind == "self" else tg.tensor(memory)
    out = ours(gx, memory, **masks)
    w = ours.attention_weights(gx, memory, **masks)
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
    ours = Attention(8, 2)
    load_torch(ours, theirs)
    x = np.random.default_rng(1).standard_normal((2, 4, 8)).astype(np.float32)
    _, ref_w = theirs(*(torch.tensor(x),) * 3)
    w = ours.attention_weights(tg.tensor(x)).mean(1)
    np.testing.assert_allclose(_np(w), ref_w.detach().numpy(), atol=1e-6)


@pytest.mark.parametrize("d, bias, expected", [(64, True, 4 * 64 ** 2 + 4 * 64),
                                               (64, False, 4 * 64 ** 2),
                                               (768, True, 2_362_368)])
def test_parameter_count_is_4d2_plus_4d(d, bias, expected):
    for fused in (True, False):
        assert Attention(d, 8, bias=bias, fused=fused).num_parameters() == expected


def test_fused_and_separate_projections_agree():
    fused = Attention(12, 3)
    separate = Attention(12, 3, fused=False)
    w, b = fused.qkv_proj.weight, fused.qkv_proj.bias
    separate.load_state_dict({
        **{f"{n}_proj.weight": w[12 * i:12 * (i + 1)] for i, n in enumerate("qkv")},
        **{f"{n}_proj.bias": b[12 * i:12 * (i + 1)] for i, n in enumerate("qkv")},
        "out_proj.weight": fused.out_proj.weight, "out_proj.bias": fused.out_proj.bias})
    x, memory = tg.randn(2, 3, 12), tg.randn(2, 5, 12)
    np.testing.assert_allclose(_np(fused(x)), _np(separate(x)), atol=1e-6)
    np.testing.assert_allclose(_np(fused(x, memory)), _np(separate(x, memory)), atol=1e-6)


def test_grouped_query_attention_equals_repeated_key_value_heads():
    """n_kv_heads=2 of 4 heads is ordinary attention whose key/value heads come in copies."""
    gqa = Attention(16, 4, n_kv_heads=2, fused=False)
    full = Attention(16, 4, fused=False)
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
    np.testing.assert_allclose(_np(gqa(x, is_causal=True)), _np(full(x, is_causal=True)),
                               atol=1e-6)


def test_causal_attention_leaks_nothing_from_the_future():
    attn = Attention(16, 4)
    x = tg.randn(1, 8, 16, requires_grad=True)
    out = attn(x, is_causal=True)
    t = 4
    changed = x.detach().clone()
    changed[:, t + 1:] = tg.randn(1, 8 - t - 1, 16)
    out2 = attn(changed, is_causal=True)
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
    attn = Attention(32, 4, **options).eval()
    x = tg.randn(2, 20, 32)
    full = attn(x, is_causal=True)
    cache, outs = KVCache(), []
    with tg.no_grad():
        outs.append(attn(x[:, :5], is_causal=True, cache=cache))  # a prompt of 5 tokens
        for t in range(5, 20):  # then one token at a time
            outs.append(attn(x[:, t:t + 1], is_causal=True, cache=cache))
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


@pytest.mark.parametrize("T", [1, 3])
def test_unrecorded_projection_gives_the_recorded_views(T):
    """With nothing to record (no_grad), the fused projection's q, k and v are taken on its
    array: the same values, shapes and strides as the ops' views, sharing its version counter;
    the cache hands back views of its buffers the same way."""
    attn = Attention(16, 4, n_kv_heads=2)
    x = tg.randn(2, T, 16)
    recorded = attn._project(x, None, None, None)
    assert all(t.requires_grad for t in recorded)
    with tg.no_grad():
        q, k, v = attn._project(x, None, None, None)
        cache = KVCache()
        key, value = cache.update(k, v)
    for got, expected in zip((q, k, v), recorded):
        assert got.shape == expected.shape and got.stride() == expected.stride()
        np.testing.assert_array_equal(_np(got), _np(expected))
        assert not got.requires_grad and got._version is q._version
    np.testing.assert_array_equal(_np(key), _np(k))
    assert key._version is cache._storage[0]._version
    assert value._version is cache._storage[1]._version


def test_cache_filled_with_grad_continues_in_place_under_no_grad():
    """A prompt cached with grad recording (a cat, no buffer), then decoding under no_grad:
    the first append copies what is cached into a new buffer and carries on in place."""
    keys = [tg.randn(1, 2, 3 if t == 0 else 1, 4) for t in range(20)]
    cache = KVCache()
    cache.update(keys[0], keys[0] + 1)
    with tg.no_grad():
        for k in keys[1:]:
            key, value = cache.update(k, k + 1)
    whole = tg.cat(keys, dim=-2)
    np.testing.assert_array_equal(_np(key), _np(whole))
    np.testing.assert_array_equal(_np(value), _np(whole + 1))
    assert len(cache) == 22 and cache._storage[0] is not None


def test_cross_attention_cache_projects_the_memory_once():
    attn = Attention(16, 2)
    x, memory = tg.randn(1, 4, 16), tg.randn(1, 6, 16)
    full = attn(x, memory)
    cache = KVCache()
    steps = [attn(x[:, t:t + 1], memory, cache=cache) for t in range(4)]
    assert len(cache) == 6  # the memory, stored once
    np.testing.assert_allclose(_np(tg.cat(steps, dim=1)), _np(full), atol=1e-6)


def test_explicit_bottom_right_causal_mask_equals_is_causal():
    attn = Attention(16, 2)
    x = tg.randn(2, 5, 16)
    np.testing.assert_allclose(_np(attn(x, is_causal=True)),
                               _np(attn(x, attn_mask=causal_mask(5))), atol=1e-6)


def test_attention_dropout_only_in_training():
    attn = Attention(16, 2, dropout=0.5)
    x = tg.randn(2, 6, 16)
    train_a, train_b = _np(attn(x)), _np(attn(x))
    assert not np.allclose(train_a, train_b)
    attn.eval()
    np.testing.assert_array_equal(_np(attn(x)), _np(attn(x)))


def test_weights_are_probabilities_and_float32():
    attn = Attention(16, 4)
    x, memory = tg.randn(2, 3, 16), tg.randn(2, 5, 16)
    out, w = attn(x, memory), attn.attention_weights(x, memory)
    assert out.dtype == w.dtype == tg.float32 and w.shape == (2, 4, 3, 5)
    np.testing.assert_allclose(_np(w).sum(-1), 1.0, atol=1e-6)
    causal = attn.attention_weights(x, is_causal=True)
    assert causal.shape == (2, 4, 3, 3) and not np.triu(_np(causal)[0, 0], 1).any()


def test_clear_errors():
    with pytest.raises(ValueError, match="divisible"):
        Attention(10, 3)
    with pytest.raises(ValueError, match="n_kv_heads"):
        Attention(12, 4, n_kv_heads=3)
    with pytest.raises(ValueError, match="fused=False"):
        Attention(8, 2, kdim=4)
    with pytest.raises(ValueError, match=r"Attention: expected query of shape \(B, T, 8"):
        Attention(8, 2)(tg.randn(2, 3, 6))


# --- MultiheadAttention: PyTorch's module -------------------------------------------------------
E, H, N, L, S = 16, 4, 3, 5, 6


def _torch_pair(torch, **options):
    """torch.nn.MultiheadAttention and ours with the same weights, copied through a strict
    load_state_dict of PyTorch's own state dict (so the parameter names are PyTorch's)."""
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(E, H, **options)
    with torch.no_grad():  # biases start at 0 in both: make them matter
        for p in theirs.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    ours = MultiheadAttention(E, H, **options)
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _masks(rng, kind, unbatched=False):
    """PyTorch-convention masks (True = not allowed) that leave every query a key to see."""
    masks = {}
    if kind.startswith("attn"):
        shape = (L, S) if kind.endswith("2d") else ((1 if unbatched else N) * H, L, S)
        blocked = rng.random(shape) < 0.4
        blocked[..., 0] = False
        masks["attn_mask"] = (blocked if "bool" in kind
                              else np.where(blocked, -np.inf, rng.standard_normal(shape)))
    if "padding" in kind:
        padding = np.zeros((N, S), dtype=bool)
        padding[1, -2:] = padding[2, -1] = True
        padding = padding[0] if unbatched else padding
        masks["key_padding_mask"] = (np.where(padding, -1e9, 0.0) if "float padding" in kind
                                     else padding)
    return {k: v.astype(np.float32) if v.dtype.kind == "f" else v for k, v in masks.items()}


# torch warns that mixing a bool and a float mask is deprecated; both libraries still add them.
@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")
@pytest.mark.parametrize("batch_first, masks, need_weights, average, options", [
    (True, "attn bool 2d + padding", True, True, {}),
    (False, "attn float 2d", False, True, {}),
    (True, "attn bool 3d", True, False, {}),
    (False, "attn float 3d + padding", False, True, {}),
    (False, "attn bool 2d + padding", True, False, dict(kdim=6, vdim=10)),
    (True, "float padding", True, True, dict(kdim=6, vdim=10, bias=False)),
    (True, "none", False, True, dict(bias=False)),
    (False, "attn bool 3d + padding", True, False, dict(add_bias_kv=True)),
    (True, "attn float 2d + float padding", False, True, dict(add_zero_attn=True)),
    (True, "attn bool 2d + padding", False, True, dict(add_bias_kv=True, add_zero_attn=True,
                                                       kdim=6, vdim=10)),
    (False, "none", True, True, dict(add_bias_kv=True, add_zero_attn=True)),
])
def test_multihead_attention_matches_torch(batch_first, masks, need_weights, average, options):
    """Outputs, weights and every gradient (inputs, parameters, float masks) equal PyTorch's."""
    torch = pytest.importorskip("torch")
    ours, theirs = _torch_pair(torch, batch_first=batch_first, **options)
    rng = np.random.default_rng(0)
    layout = (lambda n, t, e: (n, t, e)) if batch_first else (lambda n, t, e: (t, n, e))
    arrays = {"query": rng.standard_normal(layout(N, L, E)),
              "key": rng.standard_normal(layout(N, S, ours.kdim)),
              "value": rng.standard_normal(layout(N, S, ours.vdim))}
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}
    mask_arrays = _masks(rng, masks)
    kwargs = dict(need_weights=need_weights, average_attn_weights=average)
    ref_inputs = {k: torch.tensor(v, requires_grad=v.dtype.kind == "f")
                  for k, v in {**arrays, **mask_arrays}.items()}
    our_inputs = {k: tg.tensor(v, requires_grad=v.dtype.kind == "f")
                  for k, v in {**arrays, **mask_arrays}.items()}
    ref_out, ref_w = theirs(**ref_inputs, **kwargs)
    out, w = ours(**our_inputs, **kwargs)
    np.testing.assert_allclose(_np(out), ref_out.detach().numpy(), atol=1e-5)
    assert (w is None) == (ref_w is None)
    probe = rng.standard_normal(out.shape).astype(np.float32)
    ref_loss, loss = (ref_out * torch.tensor(probe)).sum(), (out * tg.tensor(probe)).sum()
    if need_weights:
        assert w.shape == tuple(ref_w.shape)
        np.testing.assert_allclose(_np(w), ref_w.detach().numpy(), atol=1e-6)
        ref_loss, loss = ref_loss + ref_w.square().sum(), loss + w.square().sum()
    ref_loss.backward()
    loss.backward()
    for name, t in ref_inputs.items():
        if t.requires_grad and t.grad is not None:
            np.testing.assert_allclose(_np(our_inputs[name].grad), t.grad.numpy(), atol=1e-5,
                                       err_msg=name)
    theirs_params = dict(theirs.named_parameters())
    assert sorted(n for n, _ in ours.named_parameters()) == sorted(theirs_params)
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(_np(p.grad), theirs_params[name].grad.numpy(), atol=1e-5,
                                   err_msg=name)


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_self_attention_and_causal_hint_match_torch(batch_first):
    """query is key is value (one packed projection), with is_causal and its mask."""
    torch = pytest.importorskip("torch")
    ours, theirs = _torch_pair(torch, batch_first=batch_first)
    x = np.random.default_rng(1).standard_normal((N, L, E) if batch_first else (L, N, E))
    x = x.astype(np.float32)
    blocked = np.triu(np.ones((L, L), dtype=bool), 1)  # True above the diagonal: the future
    tx, gx = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
    for need_weights in (False, True):
        ref, _ = theirs(tx, tx, tx, attn_mask=torch.tensor(blocked), is_causal=True,
                        need_weights=need_weights)
        out, _ = ours(gx, gx, gx, attn_mask=tg.tensor(blocked), is_causal=True,
                      need_weights=need_weights)
        np.testing.assert_allclose(_np(out), ref.detach().numpy(), atol=1e-5)
    ref.sum().backward()
    out.sum().backward()
    np.testing.assert_allclose(_np(gx.grad), tx.grad.numpy(), atol=1e-5)
    with pytest.raises(ValueError, match="is_causal=True .* needs attn_mask"):
        ours(gx, gx, gx, is_causal=True)


@pytest.mark.parametrize("masks", ["attn bool 2d + padding", "attn float 3d"])
def test_multihead_attention_unbatched_matches_torch(masks):
    torch = pytest.importorskip("torch")
    ours, theirs = _torch_pair(torch)
    rng = np.random.default_rng(2)
    q, kv = (rng.standard_normal((t, E)).astype(np.float32) for t in (L, S))
    mask_arrays = _masks(rng, masks, unbatched=True)
    ref, ref_w = theirs(torch.tensor(q), torch.tensor(kv), torch.tensor(kv),
                        **{k: torch.tensor(v) for k, v in mask_arrays.items()},
                        average_attn_weights=False)
    out, w = ours(tg.tensor(q), tg.tensor(kv), tg.tensor(kv),
                  **{k: tg.tensor(v) for k, v in mask_arrays.items()}, average_attn_weights=False)
    assert out.shape == (L, E) and w.shape == (H, L, S)
    np.testing.assert_allclose(_np(out), ref.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(_np(w), ref_w.detach().numpy(), atol=1e-6)


def test_multihead_attention_masks_true_means_not_allowed():
    """The regression this module was rewritten for: a True in a bool mask hides that key."""
    mha = MultiheadAttention(E, H, batch_first=True)
    x, kv = tg.randn(1, 2, E), tg.randn(1, 3, E)
    hidden_last = tg.tensor([[False, False, True]])
    _, w = mha(x, kv, kv, key_padding_mask=hidden_last)
    assert (_np(w)[..., 2] == 0).all() and (_np(w)[..., :2] > 0).all()
    _, w = mha(x, kv, kv, attn_mask=tg.tensor([[True, False, False], [False, False, False]]))
    assert _np(w)[0, 0, 0] == 0 and (_np(w)[0, 1] > 0).all()


def test_multihead_attention_parameters_and_initialisation_follow_torch():
    same = MultiheadAttention(64, 4)
    assert [n for n, _ in same.named_parameters()] == [
        "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    assert same.q_proj_weight is None and same._qkv_same_embed_dim
    bound = np.sqrt(6 / (64 + 3 * 64))  # Xavier over the stacked (3E, E) weight
    w = _np(same.in_proj_weight)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert not _np(same.in_proj_bias).any() and not _np(same.out_proj.bias).any()
    other = MultiheadAttention(64, 4, kdim=8, vdim=12, bias=False)
    assert {n: tuple(p.shape) for n, p in other.named_parameters()} == {
        "q_proj_weight": (64, 64), "k_proj_weight": (64, 8), "v_proj_weight": (64, 12),
        "out_proj.weight": (64, 64)}
    assert other.in_proj_weight is None and other.in_proj_bias is None
    extra = MultiheadAttention(64, 4, add_bias_kv=True)
    assert extra.bias_k.shape == extra.bias_v.shape == (1, 1, 64)
    assert "bias_k" in extra.state_dict() and same.bias_k is None


def test_multihead_attention_dropout_only_in_training_and_weights_show_it():
    mha = MultiheadAttention(E, H, dropout=0.5, batch_first=True)
    x = tg.randn(2, 6, E)
    (a, wa), (b, _) = mha(x, x, x, average_attn_weights=False), mha(x, x, x)
    assert not np.allclose(_np(a), _np(b))
    assert (_np(wa) == 0).any()  # the weights returned are the dropped-out ones, as in PyTorch
    mha.eval()
    (a, wa), (b, _) = mha(x, x, x, average_attn_weights=False), mha(x, x, x)
    np.testing.assert_array_equal(_np(a), _np(b))
    np.testing.assert_allclose(_np(wa).sum(-1), 1.0, atol=1e-6)


def test_multihead_attention_errors_name_what_was_expected():
    with pytest.raises(ValueError, match=r"embed_dim \(10\) must be a positive multiple"):
        MultiheadAttention(10, 4)
    mha = MultiheadAttention(E, H, kdim=6)
    x, k = tg.randn(L, N, E), tg.randn(S, N, 6)
    with pytest.raises(ValueError, match="expected value with 16 features"):
        mha(x, k, k)
    with pytest.raises(ValueError, match=r"attn_mask of shape \(5, 6\) or \(12, 5, 6\)"):
        mha(x, k, tg.randn(S, N, E), attn_mask=tg.zeros(N, L, S, dtype=tg.bool))
    with pytest.raises(ValueError, match=r"key_padding_mask of shape \(3, 6\)"):
        mha(x, k, tg.randn(S, N, E), key_padding_mask=tg.zeros(S, N, dtype=tg.bool))
    with pytest.raises(TypeError, match="bool .* or float"):
        mha(x, k, tg.randn(S, N, E), key_padding_mask=tg.zeros(N, S, dtype=tg.int64))
    with pytest.raises(ValueError, match="all 3-D .* or all 2-D"):
        mha(x, k[0], k[0])


@pytest.mark.parametrize("fused", [True, False])
def test_head_dim_and_scale_follow_torch_sdpa(fused):
    """head_dim sets the heads' width apart from embed_dim (T5 v1.1: 6 heads of 64 in a 512
    model) and scale is SDPA's factor on the scores (T5: 1.0), with a float bias as the mask."""
    torch = pytest.importorskip("torch")
    attn = Attention(12, 3, head_dim=5, scale=1.0, fused=fused, bias=False)
    assert attn.out_proj.weight.shape == (12, 15) and attn.num_parameters() == 4 * 12 * 15
    x, bias = tg.randn(2, 4, 12), tg.randn(3, 4, 4)
    w = {name: torch.tensor(_np(p)) for name, p in attn.named_parameters()}
    tx = torch.tensor(_np(x))
    if fused:
        q, k, v = (tx @ w["qkv_proj.weight"].T).split(15, dim=-1)
    else:
        q, k, v = (tx @ w[f"{n}_proj.weight"].T for n in "qkv")
    q, k, v = (t.reshape(2, 4, 3, 5).transpose(1, 2) for t in (q, k, v))  # (B, H, T, D)
    out = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=torch.tensor(_np(bias)), is_causal=False, scale=1.0)
    expected = out.transpose(1, 2).reshape(2, 4, 15) @ w["out_proj.weight"].T
    np.testing.assert_allclose(_np(attn(x, attn_mask=bias)), expected.numpy(), atol=1e-5)
    weights = attn.attention_weights(x, attn_mask=bias)
    np.testing.assert_allclose(_np(weights.sum(-1)), np.ones((2, 3, 4)), atol=1e-6)


@pytest.mark.parametrize("grad", [False, True])
def test_cache_reorder_keeps_the_chosen_rows_and_decoding_continues(grad):
    """Beam search: rows (2, 0, 0) of a 3-row cache, then one more token, equals decoding
    those prompts from scratch."""
    attn = Attention(8, 2)
    prompts, token = tg.randn(3, 4, 8), tg.randn(3, 1, 8)
    with tg.set_grad_enabled(grad):
        cache = KVCache()
        attn(prompts, is_causal=True, cache=cache)
        rows = tg.tensor([2, 0, 0])
        cache.reorder(rows)
        out = attn(token, is_causal=True, cache=cache)
        full = attn(tg.cat([prompts[rows], token], dim=1), is_causal=True)
    assert len(cache) == 5 and cache.key.shape[0] == 3
    np.testing.assert_allclose(_np(out)[:, 0], _np(full)[:, -1], atol=1e-6)
