"""The default corpus and random training windows."""
import pytest

import tensorgrad as tg
from tensorgrad.datasets.text import python_stdlib_corpus, random_windows


def test_stdlib_corpus_is_a_fixed_selection():
    text = python_stdlib_corpus(200_000)
    assert len(text) == 200_000
    assert text.startswith("# file: argparse.py\n")
    assert python_stdlib_corpus(200_000) == text
    assert python_stdlib_corpus(100_000) == text[:100_000]


def test_random_windows_are_shifted_by_one():
    ids = tg.arange(100)
    x, y = random_windows(ids, batch_size=5, block_size=8)
    assert x.shape == y.shape == (5, 8) and x.dtype == tg.int64
    assert (y - x).tolist() == [[1] * 8] * 5  # consecutive ids: targets are the next ones
    tg.manual_seed(4)
    first = random_windows(ids, 5, 8)[0].tolist()
    tg.manual_seed(4)
    assert random_windows(ids, 5, 8)[0].tolist() == first
    with pytest.raises(ValueError, match="more than block_size=8"):
        random_windows(tg.arange(8), 2, 8)


def test_the_models_names_are_the_same_modules():
    from tensorgrad.datasets import digits, text
    from tensorgrad.models.data import random_windows as old_windows
    from tensorgrad.models.digits import load_digits as old_load

    assert old_windows is text.random_windows and old_load is digits.load_digits
    from tensorgrad.models.attention_maps import attention_rollout
    from tensorgrad.viz import attention_maps
    assert attention_rollout is attention_maps.attention_rollout
