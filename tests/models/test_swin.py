"""Swin: the parameter count, the window helpers (partition, relative positions, shift mask),
patch merging, Hugging Face checkpoints both ways (padded grids, shifted windows, absolute
positions; hidden states, attentions, logits, loss, gradients), training-mode pieces, errors."""
import json

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.models.swin import (
    SwinConfig, SwinForImageClassification, SwinModel, _canonical_hf_name,
)
from tensorgrad.models.swin_windows import (
    relative_position_index, shifted_window_mask, window_partition, window_reverse,
)


def test_swin_tiny_parameter_count_and_summary():
    model = SwinForImageClassification(SwinConfig.swin_tiny_patch4_window7_224(num_labels=1000))
    assert model.num_parameters() == 28_288_354
    assert "stage 3: 6 blocks + merging" in model.summary()
    # the relative position index is a buffer rebuilt from the window, not a checkpoint tensor
    assert not any("index" in name for name in model.state_dict())


def test_config_round_trip_and_errors():
    config = SwinConfig.digits()
    assert SwinConfig.from_hf(json.loads(json.dumps(config.to_hf()))) == config
    with pytest.raises(ValueError, match="same number of stages"):
        SwinConfig(depths=[2, 2], num_heads=[2])
    with pytest.raises(ValueError, match="not divisible"):
        SwinConfig(embed_dim=10, depths=[1], num_heads=[3])
    with pytest.raises(ValueError, match="model_type"):
        SwinConfig.from_hf({"model_type": "swinv2"})


def test_window_partition_and_reverse():
    x = tg.arange(2 * 4 * 6 * 3).reshape(2, 4, 6, 3)
    windows = window_partition(x, 2)  # (2 * 2 * 3, 4, 3)
    assert windows.shape == (12, 4, 3)
    # window 1 of image 0 is rows 0-1, columns 2-3, row-major inside
    np.testing.assert_array_equal(windows[1].numpy(), x[0, 0:2, 2:4].numpy().reshape(4, 3))
    np.testing.assert_array_equal(window_reverse(windows, 2, 4, 6).numpy(), x.numpy())


def test_relative_position_index_and_shift_mask():
    index = relative_position_index(2).numpy()  # offsets (dy, dx) in a 3 x 3 table
    assert index.shape == (4, 4) and index[0, 0] == 4 == index[3, 3]  # (0, 0): the centre
    assert index[0, 3] == 0 and index[3, 0] == 8  # (-1, -1) and (+1, +1)
    # a 2 x 2 window read from the table of a 3 x 3 one: the same offsets, a 5 x 5 table
    assert relative_position_index(2, 3)[0, 0].item() == 12
    mask = shifted_window_mask(4, 4, 2, 1, tg.float32).numpy()  # 4 windows of 4 tokens
    assert mask.shape == (4, 4, 4)
    assert (mask[0] == 0).all()  # the top-left window holds no rolled-in tokens
    last = mask[3]  # bottom-right: 4 tokens from 4 different regions
    assert (np.diag(last) == 0).all() and (last[~np.eye(4, dtype=bool)] == -100).all()


# --- Hugging Face checkpoints --------------------------------------------------------------------
@pytest.fixture(scope="module")
def hf_swin(tmp_path_factory):
    """A random SwinForImageClassification whose grids need padding (28 px in 2 px patches:
    14 x 14 in 4 x 4 windows, then 7 x 7, then 4 x 4, one unshifted window), with absolute
    positions, every parameter moved off its initial value."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.SwinConfig(image_size=28, patch_size=2, embed_dim=16,
                                     depths=[2, 2, 1], num_heads=[2, 2, 4], window_size=4,
                                     num_labels=5, use_absolute_embeddings=True,
                                     attn_implementation="eager")
    hf = transformers.SwinForImageClassification(config).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    path = tmp_path_factory.mktemp("swin")
    hf.save_pretrained(path)
    return path, hf


def _pixels(shape=(2, 3, 28, 28), seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _close(ours, theirs, atol=1e-4):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=atol,
                               rtol=1e-4)


def test_model_matches_transformers(hf_swin):
    torch = pytest.importorskip("torch")
    path, hf = hf_swin
    model = SwinForImageClassification.from_pretrained(path)
    x, labels = _pixels(), np.array([0, 3])
    hf.zero_grad()
    theirs = hf(torch.from_numpy(x), labels=torch.from_numpy(labels), output_hidden_states=True,
                output_attentions=True)
    theirs.loss.backward()
    out = model(tg.tensor(x), labels=tg.tensor(labels))
    logits, loss = out.logits, out.loss
    loss.backward()
    _close(logits, theirs.logits)
    assert loss.item() == pytest.approx(theirs.loss.item(), abs=1e-4)
    with tg.no_grad():
        ours = model.swin(tg.tensor(x), output_hidden_states=True, output_attentions=True)
    base = hf.swin(torch.from_numpy(x))
    _close(ours.last_hidden_state, base.last_hidden_state)
    _close(ours.pooler_output, base.pooler_output)
    assert len(ours.hidden_states) == len(theirs.hidden_states) == 4
    assert len(ours.attentions) == len(theirs.attentions) == 3
    for a, b in zip(ours.hidden_states + ours.attentions,
                    theirs.hidden_states + theirs.attentions):
        _close(a, b)
    names = model.hf_parameter_names()
    params = dict(model.named_parameters())
    checked = set()
    for hf_name, p in hf.named_parameters():  # every gradient, through the renaming table
        name = names[_canonical_hf_name(hf_name)]
        np.testing.assert_allclose(params[name].grad.numpy(), p.grad.numpy(), atol=1e-5,
                                   rtol=1e-4, err_msg=name)
        checked.add(name)
    assert checked == set(params)


def test_parameter_names_are_the_checkpoint_names(hf_swin):
    from safetensors import safe_open

    path, _ = hf_swin
    with safe_open(str(path / "model.safetensors"), "np") as f:
        saved = set(f.keys())
    assert set(SwinForImageClassification.from_pretrained(path).hf_parameter_names()) == saved
    with pytest.warns(UserWarning, match="classifier"):  # and a base-model checkpoint
        SwinForImageClassification.from_pretrained(_base_folder(path))


def _base_folder(path):
    """The classifier checkpoint saved again as a SwinModel (no head)."""
    base = SwinModel.from_pretrained(path)
    folder = path.parent / (path.name + "_base")
    base.save_pretrained(folder)
    return folder


def test_save_pretrained_loads_in_transformers(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    model = SwinForImageClassification(SwinConfig.tiny(qkv_bias=False)).eval()
    model.save_pretrained(tmp_path)
    hf = transformers.SwinForImageClassification.from_pretrained(tmp_path).eval()
    x = _pixels((2, 3, 16, 16), seed=4)
    with torch.no_grad():
        expected = hf(torch.from_numpy(x)).logits
    with tg.no_grad():
        logits = model(tg.tensor(x)).logits
    _close(logits, expected, atol=1e-5)
    again = SwinForImageClassification.from_pretrained(tmp_path)
    for (name, a), b in zip(model.state_dict().items(), again.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


def test_training_mode_drop_path_float64_and_errors():
    model = SwinForImageClassification(SwinConfig.tiny(drop_path_rate=0.5), dtype=tg.float64)
    x = tg.randn(4, 3, 16, 16, dtype=tg.float64)
    model.eval()
    with tg.no_grad():
        a, b = model(x).logits, model(x).logits
    np.testing.assert_array_equal(a.numpy(), b.numpy())  # no stochastic depth in eval
    model.train()
    out = model(x, labels=tg.tensor([0, 1, 2, 0]))
    logits, loss = out.logits, out.loss
    assert logits.dtype == tg.float64
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    # 12 px: a 6 x 6 grid padded to 8 x 8 for its windows, then 3 x 3, under one window
    # shrunk to 3 x 3 that reads the 4 x 4 window's bias table
    assert model(tg.randn(1, 3, 12, 12, dtype=tg.float64)).logits.shape == (1, 3)
    with pytest.raises(ValueError, match=r"expected pixel_values of shape \(B, 3, H, W\)"):
        model(tg.randn(1, 1, 16, 16))
