"""The in-context learning data: letter functions, held-out permutations that pre-training never
draws, the pair tokenizer, targets only at the queries, and the few-shot evaluation."""
import random

import pytest

from tensorgrad.models import GPT, GPTConfig
from tensorgrad.models.rlhf.icl import (
    ALPHABET, FunctionFamily, PairTokenizer, copy_function, few_shot_accuracy, few_shot_text,
    shift_function, training_batch,
)

TOK = PairTokenizer()


def test_letter_functions_and_their_text():
    assert [shift_function(2)(c) for c in "agh"] == ["c", "a", "b"]
    assert copy_function()("e") == "e"
    assert few_shot_text(shift_function(1), "ah") == "a> a>b h> h>a "


def test_the_pair_tokenizer():
    ids = TOK.encode("a> a>b h> h>a c>")
    assert TOK.vocab_size == 72
    assert ids == [64, 1, 71, 7 * 8, 66]
    assert TOK.decode(ids) == "a> a>b h> h>a c>"
    with pytest.raises(ValueError, match="neither a pair"):
        TOK.encode("a>z")


def test_held_out_permutations_are_never_drawn_for_training():
    family = FunctionFamily(n_held_out=20, seed=0)
    held_out = {f.table for f in family.held_out}
    assert len(held_out) == 20
    assert all(sorted(t) == sorted(ALPHABET) for t in held_out)
    assert not held_out & {shift_function(k).table for k in range(len(ALPHABET))}
    rng = random.Random(0)
    drawn = [family.draw_training(rng) for _ in range(3000)]
    assert not held_out & {f.table for f in drawn}
    assert {"copy", "permutation"} <= {f.name for f in drawn}


def test_training_targets_are_the_pairs_at_the_queries():
    family = FunctionFamily(n_held_out=4, seed=0)
    ids, targets = training_batch(TOK, family, batch_size=3, n_pairs=5, rng=random.Random(1))
    assert ids.shape == targets.shape == (3, 10)
    for row, target in zip(ids.tolist(), targets.tolist()):
        assert target[0::2] == row[1::2]  # each query predicts the pair after it
        assert target[1::2] == [-100] * 5
        tokens = TOK.decode(row).split()
        assert all(p.startswith(q) for q, p in zip(tokens[0::2], tokens[1::2]))


@pytest.mark.parametrize("shots", [0, 3])
def test_few_shot_accuracy_is_a_fraction(shots):
    model = GPT(GPTConfig.tiny(vocab_size=TOK.vocab_size, block_size=16))
    family = FunctionFamily(n_held_out=3, seed=0)
    acc = few_shot_accuracy(model, TOK, family.held_out, shots, queries=4)
    assert 0.0 <= acc <= 1.0 and (acc * 12).is_integer()
