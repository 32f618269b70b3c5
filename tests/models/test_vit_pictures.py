"""The digits data (split, upsampling, random shifts) and the attention pictures (rollout,
per-head maps, patch filters, the PNG grids)."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.viz.attention_maps import (
    attention_rollout, patch_filters, save_attention_grid, save_filter_grid, vit_attention_maps,
)
from tensorgrad.datasets.digits import RandomShift, load_digits
from tensorgrad.models.vit import ViTConfig, ViTForImageClassification

sklearn = pytest.importorskip("sklearn")


# --- digits ---------------------------------------------------------------------------------------
def test_load_digits_split_sizes_and_range():
    from sklearn.datasets import load_digits as sklearn_digits

    x_train, y_train, x_test, y_test = load_digits()
    assert x_train.shape == (1347, 1, 8, 8) and x_test.shape == (450, 1, 8, 8)
    assert x_train.dtype == tg.float32 and y_train.dtype == tg.int64
    assert 0.0 <= x_train.min().item() and x_train.max().item() == 1.0
    # every image is one of scikit-learn's, scaled by 1/16, and the classes are stratified
    pool = {tuple(row) for row in sklearn_digits().images.reshape(-1, 64) / 16.0}
    assert all(tuple(row) in pool for row in x_test.numpy().reshape(-1, 64).astype(np.float64))
    assert np.bincount(y_test.numpy()).min() >= 43  # a quarter of the 174 eights, rounded
    again = load_digits()[3]
    np.testing.assert_array_equal(again.numpy(), y_test.numpy())  # seeded
    assert not np.array_equal(load_digits(seed=1)[3].numpy(), y_test.numpy())
    for size in (16, 32):
        x, *_ = load_digits(size)
        assert x.shape == (1347, 1, size, size) and 0.0 <= x.min().item() <= x.max().item() <= 1
    with pytest.raises(ValueError, match="size must be one of"):
        load_digits(12)


def test_random_shift_moves_whole_images_within_range():
    x = tg.rand(16, 2, 6, 5)
    out = RandomShift(2, generator=tg.Generator().manual_seed(0))(x).numpy()
    padded = np.pad(x.numpy(), ((0, 0), (0, 0), (2, 2), (2, 2)))
    shifts = set()
    for i in range(16):  # each output is a crop of the zero-padded image
        found = [(dy, dx) for dy in range(5) for dx in range(5)
                 if np.array_equal(padded[i, :, dy:dy + 6, dx:dx + 5], out[i])]
        assert found, i
        shifts.add(found[0])
    assert len(shifts) > 3  # not the same shift for the whole batch
    again = RandomShift(2, generator=tg.Generator().manual_seed(0))(x).numpy()
    np.testing.assert_array_equal(again, out)
    np.testing.assert_array_equal(RandomShift(0)(x).numpy(), x.numpy())
    assert RandomShift(1)(x[0]).shape == (2, 6, 5)
    with pytest.raises(ValueError, match="max_shift"):
        RandomShift(-1)
    with pytest.raises(ValueError, match=r"\(B, C, H, W\)"):
        RandomShift(1)(tg.rand(6, 5))


# --- attention pictures ---------------------------------------------------------------------------
def test_attention_rollout_is_the_product_of_residual_normalised_layers():
    rng = np.random.default_rng(0)
    layers = [rng.random((2, 3, 5, 5)) for _ in range(3)]
    layers = [a / a.sum(-1, keepdims=True) for a in layers]
    expected = None
    for a in layers:
        a = a.mean(1) + np.eye(5)
        a = a / a.sum(-1, keepdims=True)
        expected = a if expected is None else a @ expected
    ours = attention_rollout([tg.tensor(a) for a in layers])
    np.testing.assert_allclose(ours.numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(ours.numpy().sum(-1), 1.0)  # rows stay distributions
    top = attention_rollout([tg.tensor(layers[0])], head_fusion="max", residual=False)
    expected = layers[0].max(1)
    np.testing.assert_allclose(top.numpy(), expected / expected.sum(-1, keepdims=True))
    with pytest.raises(ValueError, match="head_fusion"):
        attention_rollout(layers, head_fusion="median")


def test_maps_filters_and_png_grids(tmp_path):
    pytest.importorskip("matplotlib")
    model = ViTForImageClassification(ViTConfig.digits()).eval()
    images = tg.rand(3, 1, 16, 16)
    maps = vit_attention_maps(model, images)
    assert maps["rollout"].shape == (3, 4, 4) and maps["heads"].shape == (3, 4, 4, 4)
    for m in maps.values():
        assert m.min().item() == 0.0 and m.max().item() == pytest.approx(1.0)
    larger = vit_attention_maps(model, tg.rand(1, 1, 24, 16))  # interpolated positions
    assert larger["rollout"].shape == (1, 6, 4)
    filters = patch_filters(model)
    assert filters.shape == (64, 1, 4, 4)
    grid = save_attention_grid(tmp_path / "attention.png", images, maps, tg.tensor([1, 2, 3]),
                               tg.tensor([1, 2, 0]))
    assert save_filter_grid(tmp_path / "filters.png", filters).read_bytes()[:4] == b"\x89PNG"
    assert grid.read_bytes()[:4] == b"\x89PNG"
