"""The fused attention primitive against its composite oracle (matmul -> softmax -> matmul), against
torch.nn.functional.scaled_dot_product_attention, and through gradcheck / gradgradcheck.

The registry case lives in test_ops.py's CASES table; the cases here cover the masking rules.
"""
import math

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.ops.attention import TILE

F64 = tg.float64


def composite(q, k, v, attn_mask=None, is_causal=False, scale=None):
    """The oracle: softmax(q k^T * scale + mask) v in plain tensorgrad ops."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = (q @ k.mT) * scale
    if is_causal:
        s = s.masked_fill(~tg.ones(s.shape[-2:], dtype=tg.bool, device=s.device).tril(),
                          float("-inf"))
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == tg.bool \
            else s + attn_mask
    return s.softmax(-1) @ v


def _inputs(device, q_shape, k_shape, v_shape, dtype=F64):
    return [tg.randn(*shape, dtype=dtype, device=device, requires_grad=True)
            for shape in (q_shape, k_shape, v_shape)]


def _grads(out, inputs, probe, retain_graph=None):
    return tg.grad(out, [x for x in inputs if x.requires_grad], probe, retain_graph=retain_graph)


# (q, k, v shapes, mask spec, is_causal): masks broadcast over batch and heads
CASES = [
    ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2), None, False),
    ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2), "bool", False),
    ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2), "float", False),
    ((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 4), None, True),
    ((1, 2, 3, 4), (1, 2, 6, 4), (1, 2, 6, 4), None, True),   # Tq < Tk: top-left
    ((1, 2, 6, 4), (1, 2, 3, 4), (1, 2, 3, 4), None, True),   # Tq > Tk
    ((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 4), "float", True),
    ((4, 3), (6, 3), (6, 2), "bool", False),                   # no batch dims
    ((2, 1, 4, 3), (3, 6, 3), (3, 6, 2), None, False),         # broadcast batch dims
]
# One query against a longer past (decoding with a KV cache): never tiled.
DECODING = [
    ((2, 3, 1, 5), (2, 3, 7, 5), (2, 3, 7, 2), None, False),
    ((2, 3, 1, 5), (2, 3, 7, 5), (2, 3, 7, 2), "bool", False),
    ((2, 3, 1, 5), (2, 3, 7, 5), (2, 3, 7, 2), None, True),  # top-left: it sees key 0 only
    ((2, 1, 1, 3), (3, 6, 3), (3, 6, 2), None, False),       # broadcast batch dims
]


def _mask(spec, q, k, device, dtype=F64):
    if spec is None:
        return None
    shape = (q.shape[-2], k.shape[-2]) if q.ndim == 2 else (1, q.shape[-3], q.shape[-2],
                                                            k.shape[-2])
    if spec == "bool":
        mask = tg.rand(*shape, device=device) > 0.3
        mask[..., 0] = True  # keep every row alive: the oracle gives NaN on a dead row
        return mask
    return tg.randn(*shape, dtype=dtype, device=device, requires_grad=True)


@pytest.mark.parametrize("shapes", CASES + DECODING)
def test_matches_the_composite_oracle(shapes, device):
    _check_against_the_oracle(shapes, device)


def _check_against_the_oracle(shapes, device):
    """Values and gradients (also of a float mask) equal the composite's; returns the output."""
    *dims, spec, causal = shapes
    q, k, v = _inputs(device, *dims)
    mask = _mask(spec, q, k, device)
    inputs = [q, k, v] + ([mask] if mask is not None and mask.requires_grad else [])
    out = tg.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
    ref = composite(q, k, v, attn_mask=mask, is_causal=causal)
    np.testing.assert_allclose(np.asarray(out.detach()), np.asarray(ref.detach()), atol=1e-12)
    probe = tg.randn(*out.shape, dtype=F64, device=device)
    for g, r in zip(_grads(out, inputs, probe, retain_graph=True), _grads(ref, inputs, probe)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), atol=1e-12)
    return out


def test_one_query_reads_cache_views_in_place(device):
    """Decoding attends over views of a KV cache's buffer (keys strided by its capacity): the
    one-query path gives the composite's values and gradients."""
    buffer = tg.randn(2, 3, 16, 5, dtype=F64, device=device)
    q = tg.randn(2, 3, 1, 5, dtype=F64, device=device, requires_grad=True)
    keys, values = buffer[:, :, :9], buffer[:, :, 4:13] * 1.0
    out = tg.scaled_dot_product_attention(q, keys, values)
    ref = composite(q, keys, values)
    np.testing.assert_allclose(np.asarray(out.detach()), np.asarray(ref.detach()), atol=1e-12)
    probe = tg.randn(*out.shape, dtype=F64, device=device)
    np.testing.assert_allclose(np.asarray(tg.grad(out, [q], probe)[0]),
                               np.asarray(tg.grad(ref, [q], probe)[0]), atol=1e-12)


def test_matches_torch(device):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    gqa_case = ((2, 4, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3), "bool", "gqa")
    for *dims, spec, causal in CASES + DECODING + [gqa_case]:
        gqa = causal == "gqa"
        q, k, v = _inputs(device, *dims, dtype=tg.float32)
        mask = _mask(spec, q, k, device, tg.float32)
        kwargs = dict(is_causal=bool(causal) and not gqa, scale=0.3)
        out = tg.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa, **kwargs)
        assert out.dtype == tg.float32
        tq, tk, tv = (torch.tensor(np.asarray(x.detach()), requires_grad=True) for x in (q, k, v))
        tmask = None if mask is None else torch.tensor(np.asarray(mask.detach()),
                                                       requires_grad=mask.requires_grad)
        folded = tmask
        if causal and tmask is not None and not gqa:  # torch refuses both; fold them together
            folded = tmask + torch.ones(tq.shape[-2], tk.shape[-2]).tril().log()
            kwargs["is_causal"] = False
        ref = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=folded, enable_gqa=gqa,
                                             **kwargs)
        np.testing.assert_allclose(np.asarray(out.detach()), ref.detach().numpy(), atol=1e-5)
        probe = np.random.default_rng(0).standard_normal(out.shape).astype(np.float32)
        ref.backward(torch.tensor(probe))
        inputs = [q, k, v] + ([mask] if mask is not None and mask.requires_grad else [])
        grads = _grads(out, inputs, tg.tensor(probe, device=device))
        for g, x in zip(grads, [tq, tk, tv, tmask]):
            np.testing.assert_allclose(np.asarray(g), x.grad.numpy(), atol=1e-5)


def seeded_dropout_attention(q, k, v):
    tg.manual_seed(3)  # one dropout mask for every call, so finite differences see one function
    return tg.scaled_dot_product_attention(q, k, v, dropout_p=0.4)


GRAD_CASES = {
    "plain": lambda q, k, v: tg.scaled_dot_product_attention(q, k, v),
    "causal": lambda q, k, v: tg.scaled_dot_product_attention(q, k, v, is_causal=True),
    "bool mask": lambda q, k, v: tg.scaled_dot_product_attention(
        q, k, v, attn_mask=tg.tensor([[True, False, True, True], [False, True, True, False],
                                      [True, True, False, False]], device=q.device)),
    "fully masked row": lambda q, k, v: tg.scaled_dot_product_attention(
        q, k, v, attn_mask=tg.tensor([[True] * 4, [False] * 4, [True, False] * 2],
                                     device=q.device)),
    "gqa": lambda q, k, v: tg.scaled_dot_product_attention(
        q, k[:, :1], v[:, :1], enable_gqa=True, scale=0.7),
    "dropout": seeded_dropout_attention,
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck_and_gradgradcheck(name, device):
    q, k, v = _inputs(device, (1, 2, 3, 2), (1, 2, 4, 2), (1, 2, 4, 3))
    assert tg.gradcheck(GRAD_CASES[name], [q, k, v])
    assert tg.gradgradcheck(GRAD_CASES[name], [q, k, v])


def test_gradients_reach_a_learned_bias(device):
    """T5 learns its relative bias and ALiBi slopes can be learned: the float mask gets a
    gradient, summed over the dims it was broadcast along, to second order."""
    q, k, v = _inputs(device, (2, 2, 3, 2), (2, 2, 4, 2), (2, 2, 4, 2))
    bias = tg.randn(2, 1, 4, dtype=F64, device=device, requires_grad=True)  # (H, 1, Tk)

    def fn(q, k, v, bias):
        return tg.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=True)
    assert tg.gradcheck(fn, [q, k, v, bias])
    assert tg.gradgradcheck(fn, [q, k, v, bias])
    assert tg.grad(fn(q, k, v, bias).sum(), bias)[0].shape == bias.shape


def test_fully_masked_rows_output_zero_and_pass_no_gradient(device):
    q, k, v = _inputs(device, (2, 4, 3), (2, 5, 3), (2, 5, 3))
    mask = tg.ones(2, 4, 5, dtype=tg.bool, device=device)
    mask[0, 1] = False
    zeros = tg.zeros(2, 4, 5, dtype=F64, device=device)
    # bool, additive -inf, and Hugging Face's additive finfo.min
    for m in (mask, tg.where(mask, zeros, float("-inf")),
              tg.where(mask, zeros, float(np.finfo(np.float64).min))):
        out = tg.scaled_dot_product_attention(q, k, v, attn_mask=m)
        assert np.all(np.asarray(out.detach())[0, 1] == 0)
        live = composite(q[1:], k[1:], v[1:], attn_mask=mask[1:])
        np.testing.assert_allclose(np.asarray(out.detach())[1:], np.asarray(live.detach()))
        gq, gk, gv = tg.grad(out.sum(), [q, k, v])
        assert np.all(np.asarray(gq)[0, 1] == 0)
        assert all(np.isfinite(np.asarray(g)).all() for g in (gq, gk, gv))
    weights = tg.attention_weights(q, k, attn_mask=mask)
    assert np.all(np.asarray(weights.detach())[0, 1] == 0)


def test_attention_weights_are_the_softmax(device):
    q, k, _ = _inputs(device, (2, 2, 3, 4), (2, 1, 5, 4), (1, 1))
    mask = tg.randn(3, 5, dtype=F64, device=device)
    w = tg.attention_weights(q, k, attn_mask=mask, is_causal=True, enable_gqa=True)
    s = (q @ k.mT) / 2.0 + mask
    s = s.masked_fill(~tg.ones(3, 5, dtype=tg.bool, device=device).tril(), float("-inf"))
    np.testing.assert_allclose(np.asarray(w.detach()), np.asarray(s.softmax(-1).detach()),
                               atol=1e-12)
    assert w.shape == (2, 2, 3, 5)


def test_dropout_drops_probabilities_and_rescales():
    q, k, v = _inputs("cpu", (1, 1, 64, 4), (1, 1, 64, 4), (1, 1, 64, 4))
    v = tg.ones(1, 1, 64, 4, dtype=F64)  # output = row sums of the dropped probabilities
    out = np.asarray(tg.scaled_dot_product_attention(q, k, v, dropout_p=0.5).detach())
    assert not np.allclose(out, 1.0)
    assert abs(out.mean() - 1.0) < 0.1  # 1 / (1 - p) scaling keeps the expectation
    with pytest.raises(ValueError, match="dropout_p"):
        tg.scaled_dot_product_attention(q, k, v, dropout_p=1.0)


def _took_tiles(out):
    """Whether attention took the tiled path: it keeps one log-sum-exp per query row, where the
    whole-matrix path keeps the (..., Tq, Tk) probabilities (every key is > 1 here)."""
    return out.grad_fn.extra.shape[-1] == 1


def _saved_sizes(node):
    """The size of every array the node keeps for its VJP: saved inputs, output, extras, attrs."""
    arrays = [t.data for t in node.saved if t is not None] + [node.out_data]
    extra = node.extra if isinstance(node.extra, (tuple, list)) else [node.extra]
    arrays += [a for a in extra if a is not None]
    arrays += [a for a in node.attrs.values() if hasattr(a, "shape")]
    return [int(np.asarray(a).size) for a in arrays]


def test_saves_no_score_matrix_beyond_one_tile():
    """Past one tile of queries and keys the graph keeps q, k, v, the (..., Tq, Ev) output and
    one log-sum-exp per query row: nothing of the (Tq, Tk) scores' size."""
    tq, tk = TILE + 40, TILE + 70
    q, k, v = _inputs("cpu", (1, tq, 8), (1, tk, 8), (1, tk, 4))
    node = tg.scaled_dot_product_attention(q, k, v, is_causal=True).grad_fn
    assert node.name == "scaled_dot_product_attention"
    assert [t.shape for t in node.saved if t is not None] == [q.shape, k.shape, v.shape]
    assert node.out_data.shape == (1, tq, 4)
    assert max(_saved_sizes(node)) < tq * tk
    assert node.extra.shape == (1, tq, 1)  # the rows' log-sum-exps


def test_short_inputs_keep_their_probabilities():
    """The stated exception: within one tile the forward's (..., Tq, Tk) probabilities are kept
    for the VJP (rebuilding them would cost a matmul and an exp more); under no_grad nothing is."""
    q, k, v = _inputs("cpu", (1, 64, 8), (1, 96, 8), (1, 96, 4))
    node = tg.scaled_dot_product_attention(q, k, v, is_causal=True).grad_fn
    assert node.extra.shape == (1, 64, 96)
    with tg.no_grad():
        assert tg.scaled_dot_product_attention(q, k, v, is_causal=True).grad_fn is None


@pytest.mark.parametrize("args, error", [
    (dict(q=(2, 4, 3), k=(2, 5, 4), v=(2, 5, 4)), "expected query"),
    (dict(q=(2, 4, 3), k=(2, 5, 3), v=(2, 6, 3)), "expected query"),
    (dict(q=(2, 4, 3), k=(3, 5, 3), v=(3, 5, 3)), "batch dimensions"),
    (dict(q=(1, 4, 2, 3), k=(1, 3, 5, 3), v=(1, 3, 5, 3), enable_gqa=True), "grouped-query"),
    (dict(q=(3,), k=(5, 3), v=(5, 3)), r"\(\.\.\., T, E\)"),
    (dict(q=(2, 4, 3), k=(2, 5, 3), v=(2, 5, 3), attn_mask=(4, 4)), "does not broadcast"),
    (dict(q=(2, 4, 3), k=(2, 5, 3), v=(2, 5, 3), attn_mask=(3, 4, 5)), "does not broadcast"),
])
def test_clear_errors(args, error):
    q, k, v = (tg.randn(*args.pop(name)) for name in ("q", "k", "v"))
    if "attn_mask" in args:
        args["attn_mask"] = tg.randn(*args["attn_mask"])
    with pytest.raises(ValueError, match=error) as info:
        tg.scaled_dot_product_attention(q, k, v, **args)
    assert "scaled_dot_product_attention" in str(info.value)


def test_type_errors():
    q = tg.randn(2, 3)
    with pytest.raises(TypeError, match="attn_mask must be bool"):
        tg.scaled_dot_product_attention(q, q, q, attn_mask=tg.ones(2, 2, dtype=tg.int64))
    with pytest.raises(TypeError, match="share a dtype"):
        tg.scaled_dot_product_attention(q, q.double(), q)
    with pytest.raises(TypeError, match="floating point"):
        tg.scaled_dot_product_attention(q.long(), q, q)


# --- the tiled (online-softmax) path, forced at small sizes -------------------------------------
@pytest.fixture
def tiled(monkeypatch):
    """Blocks of 2 queries x 3 keys, so small shapes cross several blocks both ways, ragged
    last ones included, and a block's first query and first key differ (the causal offset)."""
    from tensorgrad.ops import attention
    monkeypatch.setattr(attention, "TILE", 2)
    monkeypatch.setattr(attention, "KEY_TILE", 3)


@pytest.mark.parametrize("shapes", CASES)
def test_tiled_path_matches_the_composite_oracle(shapes, tiled):
    assert _took_tiles(_check_against_the_oracle(shapes, "cpu"))


@pytest.mark.parametrize("name", sorted(set(GRAD_CASES) - {"dropout"}))
def test_tiled_path_gradcheck_and_gradgradcheck(name, tiled):
    q, k, v = _inputs("cpu", (1, 2, 3, 2), (1, 2, 4, 2), (1, 2, 4, 3))
    assert tg.gradcheck(GRAD_CASES[name], [q, k, v])
    assert tg.gradgradcheck(GRAD_CASES[name], [q, k, v])


def test_tiled_path_learned_bias_and_dead_rows(tiled):
    q, k, v = _inputs("cpu", (2, 5, 3), (2, 5, 3), (2, 5, 2))
    bias = tg.randn(5, 5, dtype=F64, requires_grad=True)
    mask = tg.ones(5, 5, dtype=tg.bool)
    mask[3] = False

    def fn(q, k, v, bias):
        return tg.scaled_dot_product_attention(q, k, v, attn_mask=bias.masked_fill(
            ~mask, float("-inf")), is_causal=True)
    out = fn(q, k, v, bias)
    assert _took_tiles(out)
    assert tg.gradcheck(fn, [q, k, v, bias])
    assert np.all(np.asarray(out.detach())[:, 3] == 0)


def _peak_bytes(T):
    """Peak traced memory of one causal forward + backward at length T (1 head, dim 8)."""
    import tracemalloc
    q, k, v = (tg.randn(1, 1, T, 8, requires_grad=True) for _ in range(3))
    tracemalloc.start()
    out = tg.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert _took_tiles(out)
    out.backward(tg.ones_like(out))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, (q, k, v, out)


def test_long_sequences_take_the_tiled_path_with_linear_memory():
    """Doubling T doubles the peak (TILE-row blocks), and at T = 4096 the peak stays below
    the size of ONE float32 score matrix (64 MiB), which the untiled path needs several of."""
    small, _ = _peak_bytes(2048)
    large, (q, k, v, out) = _peak_bytes(4096)
    assert large < 2.5 * small, f"{small / 2**20:.1f} MiB -> {large / 2**20:.1f} MiB"
    assert large < 4096 * 4096 * 4, f"peak {large / 2**20:.1f} MiB"
    head = slice(0, 64)  # the first rows only see the first keys: check them against the oracle
    ref = composite(q[..., head, :], k[..., head, :], v[..., head, :], is_causal=True)
    np.testing.assert_allclose(np.asarray(out.detach())[..., head, :], np.asarray(ref.detach()),
                               atol=1e-5)


def test_inference_skips_the_backward_statistics_but_not_the_values(device):
    # Under no_grad the primitive keeps nothing for a backward (decoding pays for none); the
    # output is the one a recorded call gives.
    q, k, v = _inputs(device, (2, 3, 1, 5), (2, 3, 7, 5), (2, 3, 7, 2))
    recorded = tg.scaled_dot_product_attention(q, k, v)
    assert recorded.grad_fn.extra is not None
    with tg.no_grad():
        inferred = tg.scaled_dot_product_attention(q, k, v)
    assert inferred.grad_fn is None
    np.testing.assert_array_equal(np.asarray(inferred), np.asarray(recorded.detach()))
