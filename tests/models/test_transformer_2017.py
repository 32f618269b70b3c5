"""The original Transformer (2017): the base model's parameter table, post-LN blocks, the shared
and scaled embedding tied to the output, sinusoidal positions, label smoothing, padding."""
import math

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad.models.transformer import Seq2SeqTransformer, TransformerConfig, shift_right


def _np(t):
    return np.asarray(t.detach())


def test_base_parameter_count_and_breakdown():
    model = Seq2SeqTransformer(TransformerConfig.base())
    assert model.num_parameters() == 63_082_496
    rows = {line[:30].strip(): line.split()[-1] for line in model.summary().splitlines()}
    d, ff, V = 512, 2048, 37000
    attn, ffn = 4 * d * d + 4 * d, 2 * d * ff + ff + d
    assert rows["shared embedding"] == f"{V * d:,}"
    assert rows["encoder: 6 blocks"] == f"{6 * (attn + ffn + 4 * d):,}"
    assert rows["decoder: 6 blocks"] == f"{6 * (2 * attn + ffn + 6 * d):,}"
    assert rows["total"] == "63,082,496"
    assert "positional.pe" not in model.state_dict()  # fixed, not a parameter


def test_blocks_are_post_ln_and_the_embedding_is_shared_and_tied():
    model = Seq2SeqTransformer(TransformerConfig.tiny()).eval()
    assert not model.encoder[0].norm_first and not model.decoder[0].norm_first
    assert model.decoder[0].has_cross_attention
    assert [n for n in model.state_dict() if "embed" in n] == ["embed.weight"]
    hidden = tg.randn(1, 3, 32)
    np.testing.assert_allclose(_np(model.lm_logits(hidden)),
                               _np(hidden) @ _np(model.embed.weight).T, rtol=1e-5)
    ids = tg.tensor([[3, 4]])
    expected = _np(model.embed.weight)[[3, 4]] * math.sqrt(32) + _np(model.positional.pe)[:2]
    np.testing.assert_allclose(_np(model._embed(ids)), expected[None], rtol=1e-5)


def test_loss_is_label_smoothed_cross_entropy_ignoring_minus_100():
    model = Seq2SeqTransformer(TransformerConfig.tiny())
    src = tg.tensor([[5, 6, 7], [8, 9, 10]])
    labels = tg.tensor([[11, 12, 2], [13, 2, -100]])
    logits, loss = model(src, labels=labels)
    expected = F.cross_entropy(logits.reshape(6, -1), labels.reshape(6), label_smoothing=0.1)
    assert float(loss) == pytest.approx(float(expected), rel=1e-6)
    np.testing.assert_array_equal(_np(shift_right(labels, 1, 0)), [[1, 11, 12], [1, 13, 2]])


def test_source_padding_and_future_targets_are_invisible():
    model = Seq2SeqTransformer(TransformerConfig.tiny()).eval()
    dec = tg.tensor([[1, 5, 6]])
    base, _ = model(tg.tensor([[5, 6, 0, 0]]), tg.tensor([[1, 1, 0, 0]]), decoder_input_ids=dec)
    short, _ = model(tg.tensor([[5, 6]]), decoder_input_ids=dec)
    np.testing.assert_allclose(_np(base), _np(short), atol=1e-5)
    later, _ = model(tg.tensor([[5, 6]]), decoder_input_ids=tg.tensor([[1, 5, 9]]))
    np.testing.assert_allclose(_np(short)[:, :2], _np(later)[:, :2], atol=1e-5)


def test_runs_in_float64():
    model = Seq2SeqTransformer(TransformerConfig.tiny(), dtype=tg.float64)
    logits, loss = model(tg.tensor([[4, 5]]), labels=tg.tensor([[6, 2]]))
    assert logits.dtype == tg.float64 and loss.dtype == tg.float64
