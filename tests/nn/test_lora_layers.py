"""LoraLinear and ModulesToSaveWrapper: initialisation, forward, gradients, merge/unmerge,
several adapters, the trainable copies."""
import copy
import math

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn


def _np(t):
    return t.detach().numpy()


def _adapted(in_features=12, out_features=10, r=4, alpha=8, device="cpu", **options):
    base = nn.Linear(in_features, out_features, device=device)
    reference = copy.deepcopy(base)
    layer = nn.LoraLinear(base)
    layer.update_layer("default", r, alpha, **options)
    return layer, reference


def _randomize_b(layer, name="default"):
    with tg.no_grad():
        b = layer.lora_B[name].weight
        b.copy_(tg.randn(*b.shape, device=b.device))


def test_a_new_adapter_leaves_the_output_exactly_unchanged(device):
    layer, reference = _adapted(device=device)
    x = tg.randn(3, 5, 12, device=device)
    assert np.array_equal(_np(layer(x)), _np(reference(x)))
    a, b = layer.lora_A["default"].weight, layer.lora_B["default"].weight
    assert a.shape == (4, 12) and b.shape == (10, 4)
    assert not np.any(_np(b)) and np.abs(_np(a)).max() > 0
    # Kaiming-uniform with a = sqrt(5): U(-1/sqrt(in), 1/sqrt(in))
    assert np.abs(_np(a)).max() <= 1 / math.sqrt(12) + 1e-7


def test_the_layer_shares_the_base_parameters_and_keeps_their_names():
    base = nn.Linear(4, 3)
    layer = nn.LoraLinear(base)
    layer.update_layer("default", 2, 2)
    assert layer.weight is base.weight and layer.bias is base.bias
    assert isinstance(layer, nn.Linear)
    assert list(layer.state_dict()) == ["weight", "bias", "lora_A.default.weight",
                                        "lora_B.default.weight"]


def test_forward_adds_the_scaled_low_rank_update():
    layer, reference = _adapted(r=4, alpha=6)
    _randomize_b(layer)
    x = tg.randn(7, 12)
    a, b = _np(layer.lora_A["default"].weight), _np(layer.lora_B["default"].weight)
    expected = _np(reference(x)) + (6 / 4) * _np(x) @ a.T @ b.T
    np.testing.assert_allclose(_np(layer(x)), expected, atol=1e-5)
    rs, _ = _adapted(r=4, alpha=6, use_rslora=True)
    assert rs.scaling["default"] == 6 / 2


def test_gradients_reach_the_adapter_and_dropout_only_trains():
    layer, _ = _adapted(lora_dropout=0.5)
    _randomize_b(layer)
    layer.weight.requires_grad_(False)
    layer.bias.requires_grad_(False)
    x = tg.randn(64, 12)
    layer.train()
    assert not np.allclose(_np(layer(x)), _np(layer(x)))
    layer(x).sum().backward()
    assert layer.weight.grad is None
    assert layer.lora_A["default"].weight.grad is not None
    layer.eval()
    assert np.array_equal(_np(layer(x)), _np(layer(x)))


def test_merge_matches_the_unmerged_output_and_unmerge_restores_the_weight(device):
    layer, reference = _adapted(device=device)
    layer.update_layer("second", 2, 3, init_lora_weights=False)
    layer.set_adapter(["default", "second"])
    _randomize_b(layer)
    x = tg.randn(6, 12, device=device)
    unmerged = _np(layer(x))
    layer.merge()
    assert layer.merged and layer.merged_adapters == ["default", "second"]
    np.testing.assert_allclose(_np(layer(x)), unmerged, atol=1e-6)
    assert np.abs(_np(layer.weight) - _np(reference.weight)).max() > 1e-3
    layer.unmerge()
    assert not layer.merged
    np.testing.assert_allclose(_np(layer.weight), _np(reference.weight), atol=1e-6)
    np.testing.assert_allclose(_np(layer(x)), unmerged, atol=1e-6)


def test_adapters_switch_and_only_the_active_one_trains():
    layer, reference = _adapted()
    layer.update_layer("other", 3, 3, init_lora_weights=False)
    assert layer.active_adapters == ["default"]  # a later adapter does not activate itself
    x = tg.randn(4, 12)
    np.testing.assert_allclose(_np(layer(x)), _np(reference(x)))
    layer.set_adapter("other")
    assert layer.lora_A["other"].weight.requires_grad
    assert not layer.lora_A["default"].weight.requires_grad
    assert np.abs(_np(layer(x)) - _np(reference(x))).max() > 1e-3
    layer.disable_adapters = True
    np.testing.assert_allclose(_np(layer(x)), _np(reference(x)))
    layer.disable_adapters = False
    layer.delete_adapter("other")
    assert list(layer.lora_A) == ["default"] and layer.active_adapters == []


def test_gaussian_init_and_bad_arguments():
    layer, _ = _adapted(r=8, init_lora_weights="gaussian")
    assert not np.any(_np(layer.lora_B["default"].weight))
    assert 0.05 < _np(layer.lora_A["default"].weight).std() < 0.2  # std 1 / r
    with pytest.raises(ValueError, match="r must be a positive integer"):
        layer.update_layer("bad", 0, 1)
    with pytest.raises(TypeError, match="expected an nn.Linear"):
        nn.LoraLinear(nn.Embedding(3, 4))
    with pytest.raises(ValueError, match=r"expected input of shape \(\*, 12\)"):
        layer(tg.randn(2, 5))


def test_modules_to_save_wrapper_trains_a_copy_per_adapter():
    norm = nn.LayerNorm(6)
    wrapper = nn.ModulesToSaveWrapper(norm)
    wrapper.update("default")
    wrapper.update("other")
    copy_ = wrapper.modules_to_save["default"]
    assert copy_.weight is not norm.weight and copy_.weight.requires_grad
    assert not norm.weight.requires_grad
    with tg.no_grad():
        copy_.weight.copy_(tg.full((6,), 2.0))
    x = tg.randn(3, 6)
    np.testing.assert_allclose(_np(wrapper(x)), 2 * _np(norm(x)),
                               atol=1e-6)
    assert wrapper.weight is copy_.weight  # attributes read through to the active module
    wrapper.set_adapter("other")
    assert not copy_.weight.requires_grad
    np.testing.assert_allclose(_np(wrapper(x)), _np(norm(x)), atol=1e-6)
    wrapper.set_adapter("default")
    wrapper.disable_adapters = True
    np.testing.assert_allclose(_np(wrapper(x)), _np(norm(x)), atol=1e-6)
