"""Mask helpers: causal and padding masks, bool <-> additive, merging; padding never attended."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.nn import masks


def test_causal_mask_is_the_lower_triangle(device):
    mask = masks.causal_mask(4, device=device)
    assert mask.dtype == tg.bool and mask.shape == (4, 4)
    np.testing.assert_array_equal(np.asarray(mask), np.tril(np.ones((4, 4), dtype=bool)))


def test_causal_mask_aligns_queries_with_the_last_keys():
    bias = pytest.importorskip("torch.nn.attention.bias")
    expected = bias.causal_lower_right(3, 7)._materialize()
    np.testing.assert_array_equal(np.asarray(masks.causal_mask(3, 7)), expected.numpy())
    assert np.asarray(masks.causal_mask(1, 5)).all()  # the newest query sees every key
    with pytest.raises(ValueError, match="query_len <= key_len"):
        masks.causal_mask(5, 3)


def test_additive_form_has_minus_infinity_above_the_diagonal():
    additive = np.asarray(masks.to_additive(masks.causal_mask(3)))
    assert additive.dtype == np.float32
    np.testing.assert_array_equal(additive, np.triu(np.full((3, 3), -np.inf), 1))
    np.testing.assert_array_equal(np.asarray(masks.to_bool(masks.to_additive(
        masks.causal_mask(3)))), np.tril(np.ones((3, 3), dtype=bool)))


def test_to_bool_treats_the_lowest_float_as_masked():
    hf = tg.tensor([[0.0, float(np.finfo(np.float32).min)], [-1.5, float("-inf")]])
    np.testing.assert_array_equal(np.asarray(masks.to_bool(hf)), [[True, False], [True, False]])
    with pytest.raises(TypeError, match="to_bool"):
        masks.to_bool(masks.causal_mask(2))
    with pytest.raises(TypeError, match="to_additive"):
        masks.to_additive(hf)


def test_padding_masks_from_lengths_and_attention_mask(device):
    from_lengths = masks.padding_mask([3, 1, 4], device=device)
    expected = [[False] * 3 + [True], [False] + [True] * 3, [False] * 4]
    np.testing.assert_array_equal(np.asarray(from_lengths), expected)
    lengths = tg.tensor([2, 1], device=device)
    np.testing.assert_array_equal(np.asarray(masks.padding_mask(lengths, max_len=3)),
                                  [[False, False, True], [False, True, True]])
    hf = tg.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]], device=device)
    np.testing.assert_array_equal(np.asarray(masks.padding_mask_from_attention_mask(hf)),
                                  expected)
    with pytest.raises(ValueError, match="max_len"):
        masks.padding_mask([5], max_len=3)


def test_padded_keys_are_never_attended(device):
    pad = masks.padding_mask([2, 4], max_len=4, device=device)
    attn = masks.key_padding_mask(pad)
    assert attn.shape == (2, 1, 1, 4)
    q, k, v = (tg.randn(2, 3, 4, 8, device=device) for _ in range(3))
    weights = np.asarray(tg.attention_weights(q, k, attn_mask=attn))
    assert np.all(weights[0, ..., 2:] == 0)
    out = tg.scaled_dot_product_attention(q, k, v, attn_mask=attn)
    k2, v2 = k.clone(), v.clone()
    k2[0, :, 2:] = 100.0  # whatever sits in the padding changes nothing
    v2[0, :, 2:] = -100.0
    again = tg.scaled_dot_product_attention(q, k2, v2, attn_mask=attn)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(again))


def test_merge_masks():
    causal = masks.causal_mask(3)
    pad = masks.key_padding_mask(masks.padding_mask([2, 3]))
    both = masks.merge_masks(causal, None, pad)
    assert both.dtype == tg.bool and both.shape == (2, 1, 3, 3)
    np.testing.assert_array_equal(np.asarray(both)[0, 0], [[1, 0, 0], [1, 1, 0], [1, 1, 0]])
    bias = tg.randn(3, 3, requires_grad=True)
    mixed = masks.merge_masks(causal, bias, dtype=tg.float32)
    assert mixed.dtype == tg.float32
    np.testing.assert_array_equal(np.isinf(np.asarray(mixed.detach())), ~np.asarray(causal))
    assert tg.grad(mixed.masked_fill(~causal, 0.0).sum(), bias)[0] is not None
    assert masks.merge_masks(None, None) is None


def test_key_padding_mask_needs_batch_by_keys():
    with pytest.raises(ValueError, match=r"\(B, Tk\)"):
        masks.key_padding_mask(tg.ones(2, 3, 4, dtype=tg.bool))
