"""Encoder-decoder generation: the same token ids as transformers' generate (greedy and beam
search with length_penalty, early_stopping, no_repeat_ngram_size, repetition_penalty,
num_return_sequences) on a
small random T5; cached equals uncached; the n-gram ban; sampling; the 2017 model decodes."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.models import Seq2SeqTransformer, TransformerConfig
from tensorgrad.models.beam_search import beam_search
from tensorgrad.models.decoding import banned_ngram_mask
from tensorgrad.models.t5 import T5ForConditionalGeneration

EOS = 1


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(transformers T5, ours loaded from it). The embedding is scaled up so that the next-token
    distributions are peaked (no near-ties for float rounding to flip), and EOS made likely
    enough that beams finish at different lengths."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(1)
    config = transformers.T5Config(
        vocab_size=40, d_model=32, d_kv=8, d_ff=48, num_layers=2, num_heads=4,
        relative_attention_num_buckets=8, relative_attention_max_distance=16, dropout_rate=0.0,
        decoder_start_token_id=0)
    hf = transformers.T5ForConditionalGeneration(config).eval()
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if "layer_norm" in name:
                p.normal_(1.0, 0.3)
        hf.shared.weight *= 2.0
        hf.shared.weight[EOS] *= 1.6
    path = tmp_path_factory.mktemp("t5-generate")
    hf.save_pretrained(path)
    return hf, T5ForConditionalGeneration.from_pretrained(path)


SOURCES = [[5, 17, 33, 8, 21, 1, 0, 0], [14, 3, 30, 12, 9, 7, 26, 1], [2, 38, 1, 0, 0, 0, 0, 0]]


def _cut(rows):
    """Each row up to and including its first EOS: the two libraries pad after it
    differently (transformers' beam search pads T5 with EOS, its greedy search with pad)."""
    out = []
    for row in rows:
        row = list(row)
        out.append(row[:row.index(EOS, 1) + 1] if EOS in row[1:] else row)
    return out


@pytest.mark.parametrize("options", [
    dict(),
    dict(no_repeat_ngram_size=2),
    dict(num_beams=3),
    dict(num_beams=4, num_return_sequences=3),
    dict(num_beams=3, length_penalty=0.3, no_repeat_ngram_size=3),
    dict(num_beams=4, length_penalty=2.0, early_stopping=True),
    dict(num_beams=3, early_stopping="never", length_penalty=1.5),
    dict(num_beams=2, num_return_sequences=2, length_penalty=-0.5),
    dict(repetition_penalty=2.0), dict(repetition_penalty=1.5, no_repeat_ngram_size=2),
    dict(num_beams=3, repetition_penalty=1.3),
    dict(num_beams=3, repetition_penalty=0.7, no_repeat_ngram_size=2),
])
def test_same_tokens_as_transformers_generate(pair, options):
    import torch
    hf, ours = pair
    mask = [[int(t != 0) for t in row] for row in SOURCES]  # 0 is padding
    with torch.no_grad():
        expected = hf.generate(input_ids=torch.tensor(SOURCES), max_new_tokens=12,
                               attention_mask=torch.tensor(mask), do_sample=False, **options)
    got = ours.generate(tg.tensor(SOURCES), 12, attention_mask=tg.tensor(mask), **options)
    assert _cut(got.tolist()) == _cut(expected.tolist())
    assert got.shape[1] == expected.shape[1]


@pytest.mark.parametrize("options", [dict(), dict(num_beams=3, num_return_sequences=2),
                                     dict(do_sample=True, top_k=5, seed=3)])
def test_cached_and_uncached_decoding_give_the_same_tokens(pair, options):
    _, ours = pair
    src = tg.tensor(SOURCES)
    cached = ours.generate(src, 10, **options)
    uncached = ours.generate(src, 10, use_cache=False, **options)
    np.testing.assert_array_equal(cached.numpy(), uncached.numpy())


def test_cached_decoder_steps_equal_the_full_forward(pair):
    _, ours = pair
    src, dec = tg.tensor(SOURCES), tg.tensor([[0, 4, 9, 22, 7]] * 3)
    memory = ours.encode(src)
    full = ours.lm_logits(ours.decode(dec, memory))
    cache = ours.make_cache()
    steps = [ours.lm_logits(ours.decode(dec[:, :2], memory, cache=cache))]
    steps += [ours.lm_logits(ours.decode(dec[:, t:t + 1], memory, cache=cache))
              for t in range(2, 5)]
    np.testing.assert_allclose(tg.cat(steps, dim=1).detach().numpy(), full.detach().numpy(),
                               atol=1e-5)


def test_sampling_is_seeded_and_returns_several_sequences(pair):
    _, ours = pair
    src = tg.tensor(SOURCES[:2])
    a = ours.generate(src, 8, do_sample=True, temperature=1.5, top_p=0.9, seed=7,
                      num_return_sequences=3)
    b = ours.generate(src, 8, do_sample=True, temperature=1.5, top_p=0.9, seed=7,
                      num_return_sequences=3)
    assert a.shape[0] == 6 and (a.numpy() == b.numpy()).all()
    assert (a[:, 0].numpy() == 0).all()
    with pytest.raises(ValueError, match="greedy decoding returns one sequence"):
        ours.generate(src, 4, num_return_sequences=2)


def test_banned_ngrams_are_the_continuations_of_the_current_suffix():
    ids = tg.tensor([[3, 4, 5, 3, 4], [1, 1, 1, 1, 1]])
    banned = banned_ngram_mask(ids, 3, 8).numpy()
    assert np.flatnonzero(banned[0]).tolist() == [5]  # (3, 4, 5) already occurred
    assert np.flatnonzero(banned[1]).tolist() == [1]
    assert not banned_ngram_mask(ids[:, :1], 3, 8).numpy().any()
    assert np.flatnonzero(banned_ngram_mask(ids, 1, 8).numpy()[0]).tolist() == [3, 4, 5]


def test_beam_search_finds_the_best_sequence_of_a_known_distribution():
    """A fixed table: greedy takes token 2 (p=0.5) then a spread-out step, while token 3
    (p=0.4) leads to certain EOS: beam search with two beams prefers the 0.4 path."""
    def step(ids):
        last = ids[:, -1].tolist()
        rows = []
        for t in last:
            if t == 2:
                rows.append([0.0, 0.2, 0.0, 0.0, 0.2, 0.2, 0.2, 0.2])
            elif t == 3:
                rows.append([0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
            else:
                rows.append([0.0, 0.0, 0.5, 0.4, 0.1, 0.0, 0.0, 0.0])
        return tg.tensor(np.log(np.array(rows) + 1e-12).astype(np.float32))

    start = tg.zeros(2, 1, dtype=tg.int64)
    best = beam_search(step, start, 2, max_length=3, eos_token_id=1, length_penalty=0.0)
    assert best.tolist() == [[0, 3, 1]]


def test_the_2017_transformer_decodes_with_a_cache():
    model = Seq2SeqTransformer(TransformerConfig.tiny()).eval()
    src = tg.tensor([[5, 6, 7, 2], [9, 8, 2, 0]])
    mask = tg.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    for options in (dict(), dict(num_beams=3)):
        cached = model.generate(src, 6, attention_mask=mask, **options)
        uncached = model.generate(src, 6, attention_mask=mask, use_cache=False, **options)
        np.testing.assert_array_equal(cached.numpy(), uncached.numpy())
        assert (cached[:, 0].numpy() == 1).all()  # decoding starts from BOS
