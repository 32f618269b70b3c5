"""Sampling ops (ops/random.py): seeded reproducibility, the distributions' statistics, PyTorch's
shapes, dtypes and errors, and zero gradients to parameters that require grad."""
import numpy as np
import pytest

import tensorgrad as tg


def _twice(fn):
    tg.manual_seed(11)
    first = np.asarray(fn())
    tg.manual_seed(11)
    return first, np.asarray(fn())


def test_multinomial_with_replacement_follows_the_weights(device):
    weights = tg.tensor([0.0, 1.0, 3.0, 0.0, 4.0], device=device)
    first, second = _twice(lambda: tg.multinomial(weights, 20000, replacement=True))
    np.testing.assert_array_equal(first, second)
    assert first.shape == (20000,) and first.dtype == np.int64
    frequencies = np.bincount(first, minlength=5) / first.size
    np.testing.assert_allclose(frequencies, [0, 0.125, 0.375, 0, 0.5], atol=0.015)


def test_multinomial_without_replacement_draws_distinct_categories(device):
    weights = tg.tensor([[1.0, 0.0, 2.0, 5.0], [1.0, 1.0, 1.0, 1.0]], device=device)
    tg.manual_seed(0)
    draws = np.stack([np.asarray(weights.multinomial(3)) for _ in range(2000)])  # (2000, 2, 3)
    assert draws.shape == (2000, 2, 3)
    assert all(len(set(row)) == 3 for row in draws.reshape(-1, 3))
    assert not (draws[:, 0] == 1).any()  # zero weight: never drawn while others remain
    first = np.bincount(draws[:, 0, 0], minlength=4) / 2000  # first draw follows the weights
    np.testing.assert_allclose(first, [1 / 8, 0, 2 / 8, 5 / 8], atol=0.03)


def test_multinomial_errors():
    with pytest.raises(RuntimeError, match="without replacement"):
        tg.multinomial(tg.tensor([1.0, 0.0, 1.0]), 3)
    with pytest.raises(RuntimeError, match="non-negative"):
        tg.multinomial(tg.tensor([1.0, -1.0]), 1)
    with pytest.raises(RuntimeError, match="positive weight"):
        tg.multinomial(tg.tensor([[1.0, 1.0], [0.0, 0.0]]), 1, replacement=True)
    with pytest.raises(RuntimeError, match="1-D or 2-D"):
        tg.multinomial(tg.tensor([1, 2]), 1)


def test_bernoulli(device):
    p = tg.tensor([0.0, 0.25, 1.0], dtype=tg.float64, device=device).expand(20000, 3)
    first, second = _twice(lambda: tg.bernoulli(p))
    np.testing.assert_array_equal(first, second)
    assert first.dtype == np.float64 and set(np.unique(first)) <= {0.0, 1.0}
    np.testing.assert_allclose(first.mean(0), [0.0, 0.25, 1.0], atol=0.01)
    assert abs(np.asarray(tg.bernoulli(tg.zeros(20000, device=device), 0.7)).mean() - 0.7) < 0.01
    with pytest.raises(RuntimeError, match=r"\[0, 1\]"):
        tg.bernoulli(tg.tensor([1.5]))


def test_normal_forms(device):
    mean = tg.tensor([[-5.0], [5.0]], device=device)
    std = tg.full((1, 20000), 2.0, device=device)
    first, second = _twice(lambda: tg.normal(mean, std))
    np.testing.assert_array_equal(first, second)
    assert first.shape == (2, 20000) and first.dtype == np.float32
    np.testing.assert_allclose(first.mean(1), [-5, 5], atol=0.05)
    np.testing.assert_allclose(first.std(1), [2, 2], rtol=0.03)
    assert tg.normal(mean, 0.5).shape == (2, 1)
    assert tg.normal(1.0, std).shape == (1, 20000)
    numbers = tg.normal(3.0, 0.5, size=(4, 5000), device=device)
    assert numbers.shape == (4, 5000) and abs(float(numbers.mean()) - 3.0) < 0.02
    with pytest.raises(TypeError, match="size"):
        tg.normal(0.0, 1.0)
    with pytest.raises(TypeError, match="normal: samples are floating point"):
        tg.normal(tg.tensor([1, 2]), 1.0)
    with pytest.raises(RuntimeError, match="std must be non-negative"):
        tg.normal(0.0, -1.0, size=(2,))


def test_samples_carry_a_zero_gradient_as_in_pytorch():
    mean = tg.zeros(3, requires_grad=True)
    p = tg.full((3,), 0.5, requires_grad=True)
    sample = tg.normal(mean, 1.0) + tg.bernoulli(p)
    assert sample.requires_grad
    sample.sum().backward()
    assert mean.grad.tolist() == [0.0] * 3 and p.grad.tolist() == [0.0] * 3


def test_in_place_fills(device):
    x = tg.empty(40000, dtype=tg.float64, device=device)
    assert x.bernoulli_(0.3) is x and abs(np.asarray(x).mean() - 0.3) < 0.01
    x.exponential_(2.0)
    values = np.asarray(x)
    assert values.min() >= 0 and abs(values.mean() - 0.5) < 0.01
    x.random_(3, 7)
    assert set(np.unique(np.asarray(x))) == {3.0, 4.0, 5.0, 6.0}
    x.random_(4)
    assert set(np.unique(np.asarray(x))) == {0.0, 1.0, 2.0, 3.0}
    small = tg.empty(1000, dtype=tg.int8, device=device).random_()
    assert np.asarray(small).min() >= 0
    version = x._version[0]
    x.exponential_()
    assert x._version[0] == version + 1
    with pytest.raises(RuntimeError, match="exponential_"):
        tg.zeros(2, requires_grad=True).exponential_()
