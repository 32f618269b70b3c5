"""T5: parameter count, T5's particulars (RMS norm, unscaled attention, the shared relative
bias, v1.0's tied and rescaled head, v1.1's gated FFN and own head, shift_right, -100 labels),
and Hugging Face checkpoints of both versions both ways (padded inputs, hidden states, logits,
loss, gradients)."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.models.t5 import (
    T5Config, T5EncoderModel, T5ForConditionalGeneration, hf_names, shift_right,
)


def _np(t):
    return np.asarray(t.detach())


# --- sizes ---------------------------------------------------------------------------------------
def test_t5_small_parameter_count_and_summary():
    model = T5ForConditionalGeneration(T5Config.t5_small())
    assert model.num_parameters() == 60_506_624
    summary = model.summary()
    assert summary.splitlines()[-1].split()[-1] == "60,506,624"
    assert "tied to shared" in summary and "lm_head.weight" not in model.state_dict()
    assert set(model.hf_parameter_names().values()) == set(model.state_dict())


def test_presets_follow_the_released_shapes():
    v11 = T5Config.t5_v1_1_small()
    assert (v11.num_layers, v11.num_heads, v11.d_ff, v11.activation) == (8, 6, 1024,
                                                                        "geglu_tanh")
    assert not v11.tie_word_embeddings
    base = T5Config.t5_base()
    assert (base.d_model, base.num_layers, base.num_heads) == (768, 12, 12)
    with pytest.raises(ValueError, match="feed_forward_proj"):
        T5Config(feed_forward_proj="swish")


# --- T5's particulars -----------------------------------------------------------------------------
def test_layer_norm_is_rms_without_bias_or_mean_subtraction():
    model = T5ForConditionalGeneration(T5Config.tiny())
    norm = model.encoder.blocks[0].attn_norm
    assert isinstance(norm, nn.RMSNorm) and norm.eps == 1e-6
    assert [name for name, _ in norm.named_parameters()] == ["weight"]
    x = tg.randn(2, 3, 32) + 5.0  # a mean far from 0 is kept, not subtracted
    expected = _np(x) / np.sqrt((_np(x) ** 2).mean(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(_np(norm(x)), expected, rtol=1e-5)


def test_attention_scores_are_not_scaled_and_projections_have_no_bias():
    model = T5ForConditionalGeneration(T5Config.tiny())
    attn = model.decoder.blocks[1].cross_attn
    assert attn.scale == 1.0 and attn.q_proj.bias is None and attn.out_proj.bias is None
    # the 1/sqrt(d_kv) lives in the query's initialisation: std (d_model d_kv)^-0.5
    big = T5ForConditionalGeneration(T5Config.tiny(d_model=256, d_kv=64))
    std = float(big.encoder.blocks[0].self_attn.q_proj.weight.std())
    assert std == pytest.approx((256 * 64) ** -0.5, rel=0.05)


def test_relative_bias_is_computed_once_per_stack_and_shared():
    model = T5ForConditionalGeneration(T5Config.tiny())
    names = [n for n in model.state_dict() if "relative" in n]
    assert names == ["encoder.relative_bias.weight", "decoder.relative_bias.weight"]
    assert model.encoder.relative_bias.bidirectional
    assert not model.decoder.relative_bias.bidirectional
    ids = tg.tensor([[5, 6, 7, 8]])
    logits = model(ids, decoder_input_ids=ids).logits
    logits.sum().backward()  # every block's scores reach the one table
    assert float(model.encoder.relative_bias.weight.grad.abs().sum()) > 0


def test_decoder_is_causal_and_encoder_padding_is_ignored():
    model = T5ForConditionalGeneration(T5Config.tiny()).eval()
    src = tg.tensor([[5, 6, 7, 9, 9]])
    mask = tg.tensor([[1, 1, 1, 0, 0]])
    dec = tg.tensor([[0, 4, 5, 6]])
    base = model(src, mask, decoder_input_ids=dec).logits
    other_pad = model(tg.tensor([[5, 6, 7, 3, 2]]), mask, decoder_input_ids=dec).logits
    short = model(src[:, :3], decoder_input_ids=dec).logits
    np.testing.assert_allclose(_np(base), _np(other_pad), atol=1e-5)
    np.testing.assert_allclose(_np(base), _np(short), atol=1e-5)
    changed = model(src, mask, decoder_input_ids=tg.tensor([[0, 4, 5, 11]])).logits
    np.testing.assert_allclose(_np(base)[:, :3], _np(changed)[:, :3], atol=1e-5)


def test_shift_right_and_loss_ignore_minus_100():
    labels = tg.tensor([[7, 8, 1, -100], [9, 1, -100, -100]])
    np.testing.assert_array_equal(_np(shift_right(labels, 0, 0)),
                                  [[0, 7, 8, 1], [0, 9, 1, 0]])
    model = T5ForConditionalGeneration(T5Config.tiny())
    src = tg.tensor([[4, 5, 6], [6, 5, 4]])
    out = model(src, labels=labels)
    logits, loss = out.logits, out.loss
    assert out[0] is loss and out[1] is logits  # by position as Hugging Face: the loss first
    logp = _np(logits.log_softmax(-1))
    keep = [(0, 0, 7), (0, 1, 8), (0, 2, 1), (1, 0, 9), (1, 1, 1)]
    assert float(loss) == pytest.approx(-np.mean([logp[b, t, y] for b, t, y in keep]), rel=1e-5)


def test_v1_0_head_is_tied_and_rescaled_v1_1_head_is_its_own():
    tied = T5ForConditionalGeneration(T5Config.tiny()).eval()
    hidden = tg.randn(1, 2, 32)
    np.testing.assert_allclose(_np(tied.lm_logits(hidden)),
                               _np(hidden) * 32 ** -0.5 @ _np(tied.shared.weight).T, rtol=1e-5)
    untied = T5ForConditionalGeneration(T5Config.tiny(feed_forward_proj="gated-gelu",
                                                      tie_word_embeddings=False))
    assert untied.lm_head.weight.shape == (128, 32)
    np.testing.assert_allclose(_np(untied.lm_logits(hidden)),
                               _np(hidden) @ _np(untied.lm_head.weight).T, rtol=1e-5)
    assert untied.encoder.blocks[0].ffn.gated
    assert untied.num_parameters() - tied.num_parameters() \
        == 128 * 32 + 4 * 32 * 64  # the head and 4 gates


def test_runs_in_float64():
    model = T5ForConditionalGeneration(T5Config.tiny(), dtype=tg.float64)
    out = model(tg.tensor([[4, 5]]), labels=tg.tensor([[6, 1]]))
    logits, loss = out.logits, out.loss
    assert logits.dtype == tg.float64 and loss.dtype == tg.float64


# --- Hugging Face checkpoints, both versions ------------------------------------------------
HF_CONFIGS = {
    "v1.0": dict(feed_forward_proj="relu"),
    "v1.1": dict(feed_forward_proj="gated-gelu", tie_word_embeddings=False),
}


@pytest.fixture(scope="module", params=sorted(HF_CONFIGS))
def hf_t5(request, tmp_path_factory):
    """A small random transformers T5 (6 heads of 8 in a 40-wide model: the heads' width differs
    from d_model, as in v1.1) with every norm weight and the relative biases perturbed, saved."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.T5Config(
        vocab_size=96, d_model=40, d_kv=8, d_ff=56, num_layers=2, num_decoder_layers=3,
        num_heads=6, relative_attention_num_buckets=12, relative_attention_max_distance=16,
        dropout_rate=0.0, decoder_start_token_id=0, **HF_CONFIGS[request.param])
    hf = transformers.T5ForConditionalGeneration(config).eval()
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if "layer_norm" in name or "relative_attention_bias" in name:
                p.normal_(0.5, 0.5)
    path = tmp_path_factory.mktemp(f"t5-{request.param}")
    hf.save_pretrained(path)
    return request.param, hf, path


def _inputs(torch):
    src = [[5, 17, 33, 8, 1, 0, 0], [44, 3, 90, 12, 61, 7, 1]]
    src_mask = [[1, 1, 1, 1, 1, 0, 0], [1] * 7]
    labels = [[13, 27, 2, 1, -100], [8, 64, 31, 50, 1]]
    as_tg = [tg.tensor(x) for x in (src, src_mask, labels)]
    as_torch = [torch.tensor(x) for x in (src, src_mask, labels)]
    return as_tg, as_torch


def test_outputs_loss_and_gradients_match_transformers(hf_t5):
    import torch
    version, hf, path = hf_t5
    ours = T5ForConditionalGeneration.from_pretrained(path)
    assert ours.config.tie_word_embeddings == (version == "v1.0")
    (src, mask, labels), (t_src, t_mask, t_labels) = _inputs(torch)
    out = hf(input_ids=t_src, attention_mask=t_mask, labels=t_labels, output_hidden_states=True)
    out.loss.backward()
    encoded = ours.encode(src, mask)
    np.testing.assert_allclose(_np(encoded), out.encoder_last_hidden_state.detach().numpy(),
                               atol=1e-4)
    decoded = ours.decode(shift_right(labels), encoded, mask)
    np.testing.assert_allclose(_np(decoded), out.decoder_hidden_states[-1].detach().numpy(),
                               atol=1e-4)
    out = ours(src, mask, labels=labels)
    logits, loss = out.logits, out.loss
    np.testing.assert_allclose(_np(logits), out.logits.detach().numpy(), atol=1e-4)
    assert float(loss) == pytest.approx(out.loss.item(), abs=1e-5)
    loss.backward()
    grads = {name: p.grad for name, p in ours.named_parameters()}
    if version == "v1.1":  # transformers 5 ties the head it loads: its grad is both of ours
        grads["shared.weight"] = grads["shared.weight"] + grads.pop("lm_head.weight")
    hf_params = dict(hf.named_parameters())
    for theirs, name in ours.hf_parameter_names().items():
        if name in grads and theirs in hf_params:
            np.testing.assert_allclose(_np(grads[name]), hf_params[theirs].grad.numpy(),
                                       atol=1e-4, err_msg=theirs)


def test_saved_checkpoint_loads_in_transformers_and_agrees(hf_t5, tmp_path):
    import torch
    import transformers
    version, hf, path = hf_t5
    ours = T5ForConditionalGeneration.from_pretrained(path)
    ours.save_pretrained(tmp_path)
    again = transformers.T5ForConditionalGeneration.from_pretrained(tmp_path).eval()
    (src, mask, labels), (t_src, t_mask, t_labels) = _inputs(torch)
    with torch.no_grad():
        expected = again(input_ids=t_src, attention_mask=t_mask, labels=t_labels).logits
    np.testing.assert_allclose(_np(ours(src, mask, labels=labels).logits), expected.numpy(),
                               atol=1e-4)


def test_encoder_model_matches_transformers(hf_t5, tmp_path):
    import torch
    import transformers
    _, hf, path = hf_t5
    ours = T5EncoderModel.from_pretrained(path)
    assert "decoder" not in " ".join(ours.state_dict())
    (src, mask, _), (t_src, t_mask, _) = _inputs(torch)
    with torch.no_grad():
        expected = hf.encoder(input_ids=t_src, attention_mask=t_mask).last_hidden_state
    out = ours(src, mask)
    assert out[0] is out.last_hidden_state  # as HF: the first field, not the first row
    np.testing.assert_allclose(_np(out.last_hidden_state), expected.numpy(), atol=1e-4)
    ours.save_pretrained(tmp_path)
    back = transformers.T5EncoderModel.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        again = back(input_ids=t_src, attention_mask=t_mask).last_hidden_state
    np.testing.assert_allclose(again.numpy(), expected.numpy(), atol=1e-5)


def test_unknown_checkpoint_tensors_are_an_error(tmp_path):
    from tensorgrad.models import hub
    T5ForConditionalGeneration(T5Config.tiny()).save_pretrained(tmp_path)
    config, state = hub.read_folder(tmp_path)
    assert set(state) == set(hf_names(T5Config.tiny())) - {"lm_head.weight"}
    state["encoder.block.0.layer.0.SelfAttention.q.bias"] = tg.zeros(32)
    hub.write_folder(tmp_path, config, state)
    with pytest.raises(ValueError, match="SelfAttention.q.bias"):
        T5ForConditionalGeneration.from_pretrained(tmp_path)
