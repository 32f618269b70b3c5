"""ViT: the parameter count, the patch embedding as a convolution and as a matmul, Hugging Face
checkpoints both ways (hidden states, attentions, logits, loss, gradients, interpolated
positions), and the errors."""
import json

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.models.vit import (
    PatchEmbeddings, ViTConfig, ViTForImageClassification, ViTModel, _canonical_hf_name, patchify,
)


def test_vit_base_parameter_count_and_summary():
    model = ViTForImageClassification(ViTConfig.vit_base_patch16_224(num_labels=1000))
    assert model.num_parameters() == 86_567_656
    summary = model.summary()
    assert "86,567,656" in summary and "12 encoder blocks" in summary
    assert ViTModel(ViTConfig.tiny(), add_pooling_layer=False).num_parameters() \
        == ViTForImageClassification(ViTConfig.tiny(num_labels=0)).num_parameters()


def test_config_round_trip_and_errors():
    config = ViTConfig.digits()
    assert ViTConfig.from_hf(json.loads(json.dumps(config.to_hf()))) == config
    assert ViTConfig.from_hf({"num_labels": 7}).num_labels == 7
    assert ViTConfig.from_hf({"id2label": {"0": "a", "1": "b", "2": "c"}}).num_labels == 3
    with pytest.raises(ValueError, match="divisible by num_attention_heads"):
        ViTConfig(hidden_size=30, num_attention_heads=4)
    with pytest.raises(ValueError, match="multiple of patch_size"):
        ViTConfig(image_size=30, patch_size=16)
    with pytest.raises(ValueError, match="hidden_act"):
        ViTConfig(hidden_act="quick_gelu")
    with pytest.raises(ValueError, match="model_type"):
        ViTConfig.from_hf({"model_type": "deit"})


def test_patch_embedding_convolution_equals_reshape_and_matmul():
    embed = PatchEmbeddings(3, 8, 4, dtype=tg.float64)
    x = tg.randn(2, 3, 13, 9, dtype=tg.float64, requires_grad=True)  # partial patches dropped
    conv = embed(x)
    assert conv.shape == (2, 3 * 2, 8)
    matmul = embed.as_matmul(x)
    np.testing.assert_allclose(matmul.detach().numpy(), conv.detach().numpy(), atol=1e-12)
    weights = tg.randn(*conv.shape, dtype=tg.float64)
    grads = [tg.autograd.grad((out * weights).sum(), [x, embed.projection.weight])
             for out in (conv, matmul)]
    for a, b in zip(*grads):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)
    # patch (row 1, column 0) of image 0 is rows 4..7, columns 0..3, flattened (C, p, p)
    np.testing.assert_array_equal(patchify(x, 4)[0, 2].detach().numpy(),
                                  x[0, :, 4:8, 0:4].detach().numpy().reshape(-1))


# --- Hugging Face checkpoints --------------------------------------------------------------------
@pytest.fixture(scope="module")
def hf_vit(tmp_path_factory):
    """Small random ViTModel and ViTForImageClassification checkpoints. Every parameter,
    LayerNorms and biases included, is moved off its initial value, so a wrong mapping shows."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                    intermediate_size=64, image_size=16, patch_size=4,
                                    num_labels=5, attn_implementation="eager")
    models = {}
    for name, cls in (("base", transformers.ViTModel),
                      ("classifier", transformers.ViTForImageClassification)):
        hf = cls(config).eval()
        with torch.no_grad():
            for p in hf.parameters():
                p.add_(torch.randn_like(p) * 0.3)
        path = tmp_path_factory.mktemp(name)
        hf.save_pretrained(path)
        models[name] = path, hf
    return models


def _pixels(shape=(3, 3, 16, 16), seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _close(ours, theirs, atol=1e-4):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=atol,
                               rtol=1e-4)


def test_base_model_matches_transformers(hf_vit):
    torch = pytest.importorskip("torch")
    path, hf = hf_vit["base"]
    model = ViTModel.from_pretrained(path)
    assert not model.training and model.pooler is not None
    x = _pixels()
    with torch.no_grad():
        theirs = hf(torch.from_numpy(x), output_hidden_states=True, output_attentions=True)
    with tg.no_grad():
        ours = model(tg.tensor(x), output_hidden_states=True, output_attentions=True)
    _close(ours.last_hidden_state, theirs.last_hidden_state)
    _close(ours.pooler_output, theirs.pooler_output)
    assert len(ours.hidden_states) == len(theirs.hidden_states) == 3
    for a, b in zip(ours.hidden_states + ours.attentions,
                    theirs.hidden_states + theirs.attentions):
        _close(a, b)


def test_interpolated_positions_match_transformers(hf_vit):
    """Another image size: the 4x4 grid of positions resized bicubically to 6x5."""
    torch = pytest.importorskip("torch")
    path, hf = hf_vit["base"]
    model = ViTModel.from_pretrained(path)
    x = _pixels((2, 3, 24, 20), seed=1)
    with torch.no_grad():
        expected = hf(torch.from_numpy(x), interpolate_pos_encoding=True).last_hidden_state
    out = model(tg.tensor(x), interpolate_pos_encoding=True).last_hidden_state
    assert out.shape == (2, 1 + 6 * 5, 32)
    _close(out, expected)
    out.sum().backward()  # the interpolation is differentiable
    assert model.embeddings.position_embeddings.grad.abs().sum().item() > 0
    with pytest.raises(ValueError, match="interpolate_pos_encoding=True"):
        model(tg.tensor(x))


def test_classifier_logits_loss_and_gradients_match_transformers(hf_vit):
    torch = pytest.importorskip("torch")
    path, hf = hf_vit["classifier"]
    model = ViTForImageClassification.from_pretrained(path)
    x, labels = _pixels(seed=2), np.array([0, 3, 4])
    hf.zero_grad()
    theirs = hf(torch.from_numpy(x), labels=torch.from_numpy(labels))
    theirs.loss.backward()
    out = model(tg.tensor(x), labels=tg.tensor(labels))
    logits, loss = out.logits, out.loss
    loss.backward()
    _close(logits, theirs.logits)
    assert loss.item() == pytest.approx(theirs.loss.item(), abs=1e-4)
    names = model.hf_parameter_names()
    ours = dict(model.named_parameters())
    checked = set()
    for hf_name, p in hf.named_parameters():  # every gradient, through the renaming table
        name = names[_canonical_hf_name(hf_name)]
        np.testing.assert_allclose(ours[name].grad.numpy(), p.grad.numpy(), atol=1e-5,
                                   rtol=1e-4, err_msg=name)
        checked.add(name)
    assert checked == set(ours)
    assert {"vit.embeddings.cls_token", "vit.embeddings.patch_embeddings.projection.weight",
            "vit.embeddings.position_embeddings"} <= checked


def test_parameter_names_are_the_checkpoint_names(hf_vit):
    from safetensors import safe_open

    for name, cls in (("base", ViTModel), ("classifier", ViTForImageClassification)):
        path, _ = hf_vit[name]
        with safe_open(str(path / "model.safetensors"), "np") as f:
            assert set(cls.from_pretrained(path).hf_parameter_names()) == set(f.keys())


def test_heads_are_left_out_or_kept_fresh_across_checkpoint_kinds(hf_vit):
    torch = pytest.importorskip("torch")
    x = _pixels(seed=3)
    base_path, base_hf = hf_vit["base"]
    with pytest.warns(UserWarning, match="classifier.weight"):
        classifier = ViTForImageClassification.from_pretrained(base_path)
    with torch.no_grad():
        expected = base_hf(torch.from_numpy(x)).last_hidden_state
    with tg.no_grad():
        _close(classifier.vit(tg.tensor(x)).last_hidden_state, expected)
    path, _ = hf_vit["classifier"]
    with pytest.warns(UserWarning, match="pooler.dense"):
        ViTModel.from_pretrained(path)  # the head is left out; the pooler stays fresh


@pytest.mark.parametrize("qkv_bias", [True, False])
def test_save_pretrained_loads_in_transformers(tmp_path, qkv_bias):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    model = ViTForImageClassification(ViTConfig.tiny(qkv_bias=qkv_bias)).eval()
    model.save_pretrained(tmp_path)
    hf = transformers.ViTForImageClassification.from_pretrained(tmp_path).eval()
    x = _pixels((2, 3, 8, 8), seed=4)
    with torch.no_grad():
        expected = hf(torch.from_numpy(x)).logits
    with tg.no_grad():
        logits = model(tg.tensor(x)).logits
    _close(logits, expected, atol=1e-5)
    again = ViTForImageClassification.from_pretrained(tmp_path)
    for (name, a), b in zip(model.state_dict().items(), again.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


def test_from_pretrained_rejects_a_different_model(tmp_path):
    ViTModel(ViTConfig.tiny()).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 1}))
    with pytest.raises(ValueError, match="does not"):
        ViTModel.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 3}))
    with pytest.raises(ValueError, match="lacks"):
        ViTModel.from_pretrained(tmp_path)


def test_input_errors_float64_and_losses():
    model = ViTForImageClassification(ViTConfig.tiny(), dtype=tg.float64)
    out = model(tg.randn(2, 3, 8, 8), labels=tg.tensor([0, 2]))
    logits, loss = out.logits, out.loss
    assert out[0] is loss and out[1] is logits  # by position as Hugging Face: the loss first
    assert logits.dtype == tg.float64 and loss.dtype == tg.float64
    with pytest.raises(ValueError, match=r"expected pixel_values of shape \(B, 3, H, W\)"):
        model(tg.randn(2, 1, 8, 8))
    regression = ViTForImageClassification(ViTConfig.tiny(num_labels=1))
    loss = regression(tg.randn(2, 3, 8, 8), labels=tg.tensor([0.5, -1.0])).loss
    assert loss.shape == ()
    multi = ViTForImageClassification(ViTConfig.tiny())
    loss = multi(tg.randn(2, 3, 8, 8), labels=tg.tensor([[1.0, 0, 1], [0, 0, 1]])).loss
    assert loss.item() > 0
