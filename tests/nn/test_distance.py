"""nn.functional's distances, triplet loss, pixel shuffles and channel dropout against PyTorch
(nn/distance.py, nn/functional.py): values and gradients in float64."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402
from torch_parity import FAST, check, seeds, values  # noqa: E402

import tensorgrad as tg  # noqa: E402
import tensorgrad.nn.functional as TF  # noqa: E402
from tensorgrad import nn  # noqa: E402

F = torch.nn.functional


@pytest.mark.parametrize("eps", [1e-8, 0.5])
@FAST
@given(shapes_=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3,
                                                 min_side=1, max_side=4), seed=seeds,
       data=st.data())
def test_cosine_similarity(eps, shapes_, seed, data):
    a, b = values(seed, *shapes_.input_shapes)
    dim = data.draw(st.integers(-len(shapes_.result_shape), len(shapes_.result_shape) - 1))
    check(lambda x, y: TF.cosine_similarity(x, y, dim, eps),
          lambda x, y: F.cosine_similarity(x, y, dim, eps), a, b, seed=seed)
    check(lambda x, y: nn.CosineSimilarity(dim, eps)(x, y),
          lambda x, y: torch.nn.CosineSimilarity(dim, eps)(x, y), a, b, seed=seed)


def test_cosine_similarity_zero_vector():
    a, b = np.zeros((2, 3)), values(3, (2, 3))
    check(lambda x, y: TF.cosine_similarity(x, y), lambda x, y: F.cosine_similarity(x, y), a, b)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf"), 0.0])
@FAST
@given(shapes_=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=2,
                                                 min_side=1, max_side=4), seed=seeds,
       keepdim=st.booleans())
def test_pairwise_distance(p, shapes_, seed, keepdim):
    a, b = values(seed, *shapes_.input_shapes)
    check(lambda x, y: TF.pairwise_distance(x, y, p, 1e-6, keepdim),
          lambda x, y: F.pairwise_distance(x, y, p, 1e-6, keepdim), a, b, seed=seed)
    check(lambda x, y: nn.PairwiseDistance(p, 0.1, keepdim)(x, y),
          lambda x, y: torch.nn.PairwiseDistance(p, 0.1, keepdim)(x, y), a, b, seed=seed)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@FAST
@given(shape=st.sampled_from([(4,), (3, 4), (1, 2), (0, 3)]), seed=seeds, swap=st.booleans(),
       p=st.sampled_from([1.0, 2.0, 3.0]), margin=st.sampled_from([0.5, 1.0, 4.0]))
def test_triplet_margin_loss(reduction, shape, seed, swap, p, margin):
    a, pos, neg = values(seed, shape, shape, shape)
    check(lambda x, y, z: TF.triplet_margin_loss(x, y, z, margin, p, swap=swap,
                                                 reduction=reduction),
          lambda x, y, z: F.triplet_margin_loss(x, y, z, margin, p, swap=swap,
                                                reduction=reduction), a, pos, neg, seed=seed)
    check(lambda x, y, z: nn.TripletMarginLoss(margin, p, swap=swap, reduction=reduction)(x, y, z),
          lambda x, y, z: torch.nn.TripletMarginLoss(margin, p, swap=swap,
                                                     reduction=reduction)(x, y, z),
          a, pos, neg, seed=seed)


def test_triplet_margin_loss_checks_ranks():
    with pytest.raises(RuntimeError, match="triplet_margin_loss: .*all 1-D or all 2-D"):
        TF.triplet_margin_loss(tg.zeros(2, 3), tg.zeros(3), tg.zeros(2, 3))
    with pytest.raises(ValueError, match="reduction"):
        TF.triplet_margin_loss(tg.zeros(3), tg.zeros(3), tg.zeros(3), reduction="avg")


@pytest.mark.parametrize("r", [1, 2, 3])
@pytest.mark.parametrize("batch", [(), (2,), (2, 1)])
def test_pixel_shuffle_and_unshuffle(r, batch):
    x = values(r, batch + (2 * r * r, 2, 3))
    check(lambda t: TF.pixel_shuffle(t, r), lambda t: F.pixel_shuffle(t, r), x)
    check(lambda t: nn.PixelShuffle(r)(t), lambda t: torch.nn.PixelShuffle(r)(t), x)
    y = values(r + 1, batch + (3, 2 * r, r))
    check(lambda t: TF.pixel_unshuffle(t, r), lambda t: F.pixel_unshuffle(t, r), y)
    check(lambda t: nn.PixelUnshuffle(r)(t), lambda t: torch.nn.PixelUnshuffle(r)(t), y)
    back = TF.pixel_unshuffle(TF.pixel_shuffle(tg.tensor(x), r), r)
    np.testing.assert_array_equal(np.asarray(back), x)
    with pytest.raises(RuntimeError, match="pixel_shuffle: expected"):
        TF.pixel_shuffle(tg.zeros(3, 2, 2), 2)
    with pytest.raises(RuntimeError, match="pixel_unshuffle: expected"):
        TF.pixel_unshuffle(tg.zeros(1, 3, 3), 2)


@pytest.mark.parametrize("fn, module, shape, lead", [
    (TF.dropout1d, nn.Dropout1d, (8, 16, 5), 2), (TF.dropout1d, nn.Dropout1d, (16, 5), 1),
    (TF.dropout2d, nn.Dropout2d, (8, 16, 3, 2), 2), (TF.dropout2d, nn.Dropout2d, (8, 16, 4), 2),
    (TF.dropout3d, nn.Dropout3d, (4, 16, 2, 2, 2), 2),
    (TF.dropout3d, nn.Dropout3d, (16, 2, 2, 3), 1),
])
def test_channel_dropout(fn, module, shape, lead):
    tg.manual_seed(0)
    x = tg.tensor(values(5, shape) + 10.0, requires_grad=True)  # no entry is 0 by chance
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(x, 0.5)
        theirs = getattr(F, fn.__name__)(torch.ones(shape, dtype=torch.float64), 0.5)
    # each channel is dropped whole or kept whole, kept ones scaled by 2 (as torch's output)
    ratio = (np.asarray(out.detach()) / np.asarray(x.detach())).reshape(shape[:lead] + (-1,))
    assert set(np.unique(ratio)) <= {0.0, 2.0}
    assert (ratio.min(-1) == ratio.max(-1)).all()
    t_ratio = theirs.numpy().reshape(shape[:lead] + (-1,))
    assert (t_ratio.min(-1) == t_ratio.max(-1)).all()
    assert 0.2 < (ratio[..., 0] > 0).mean() < 0.8  # about half kept
    out.backward(tg.ones(*shape))
    np.testing.assert_array_equal(np.asarray(x.grad), np.asarray(out.detach()) / np.asarray(
        x.detach()))
    layer = module(0.5)
    layer.eval()
    assert layer(x) is x
    assert fn(x, 0.5, training=False) is x
    assert bool((fn(x, 1.0) == 0).all()) and fn(x, 0.0) is x
    with pytest.raises(ValueError, match="between 0 and 1"):
        module(1.5)
    y = tg.ones(*shape)
    assert fn(y, 0.5, inplace=True) is y


def test_dropout_rank_checks_and_warnings():
    with pytest.raises(RuntimeError, match="dropout1d: expected 2-D or 3-D input"):
        TF.dropout1d(tg.zeros(2, 3, 4, 5))
    with pytest.warns(UserWarning, match="3D input to dropout2d"):
        TF.dropout2d(tg.ones(2, 3, 4))
    with pytest.warns(UserWarning, match="dropout3d: received a 3-D input"):
        TF.dropout3d(tg.ones(2, 3, 4))


def test_alpha_dropout_keeps_selu_statistics():
    tg.manual_seed(1)
    x = tg.tensor(np.random.default_rng(0).standard_normal(200_000))
    assert TF.alpha_dropout(x, 0.3) is x  # training=False by default, as in PyTorch
    out = np.asarray(TF.alpha_dropout(x, 0.3, training=True))
    theirs = F.alpha_dropout(torch.tensor(np.asarray(x)), 0.3, training=True).numpy()
    for got in (out, theirs):  # zero mean and unit variance kept, on both sides
        assert abs(got.mean()) < 0.02 and abs(got.std() - 1.0) < 0.02
    # dropped entries all take one value, the same as torch's
    a = 1.0 / np.sqrt((1.7580993408473766 ** 2 * 0.3 + 1) * 0.7)
    dropped = -1.7580993408473766 * a + 1.7580993408473766 * a * 0.3
    assert np.isclose(out, dropped).mean() == pytest.approx(0.3, abs=0.01)
    assert np.isclose(theirs, dropped).mean() == pytest.approx(0.3, abs=0.01)
    kept = ~np.isclose(out, dropped)
    np.testing.assert_allclose(out[kept], a * np.asarray(x)[kept] + 1.7580993408473766 * a * 0.3)
    assert bool((TF.alpha_dropout(x, 1.0, training=True) == 0).all())
    layer = nn.AlphaDropout(0.2)
    layer.eval()
    assert layer(x) is x
