"""Span corruption (T5's format and statistics) and the Unigram tokenizer with its sentinels."""
import pytest

from tensorgrad.models import load_tokenizer
from tensorgrad.models.span_corruption import (
    SpanCorruption, corrupt, corrupted_lengths, random_spans_noise_mask,
)
from tensorgrad.models.tokenizer import UnigramTokenizer


def test_the_papers_example_in_t5s_exact_format():
    words = "Thank you for inviting me to your party last week .".split()
    ids = list(range(10, 10 + len(words)))
    mask = [w in ("for", "inviting", "last") for w in words]
    inputs, targets = corrupt(ids, mask, vocab_size=100, eos_token_id=1)
    s0, s1 = 99, 98  # <extra_id_0>, <extra_id_1>: from the end of the vocabulary
    assert inputs == [10, 11, s0, 14, 15, 16, 17, s1, 19, 20, 1]
    assert targets == [s0, 12, 13, s1, 18, 97, 1]  # the paper's <X> for inviting <Y> last <Z>


def test_masks_have_t5s_counts_and_start_with_kept_tokens():
    rng = __import__("random").Random(0)
    for length in (2, 5, 20, 101, 512):
        mask = random_spans_noise_mask(length, rng=rng)
        noise = sum(mask)
        assert len(mask) == length and not mask[0]
        assert noise == min(max(round(length * 0.15), 1), length - 1)
        spans = sum(1 for i, m in enumerate(mask) if m and (i == 0 or not mask[i - 1]))
        assert spans == min(max(round(noise / 3), 1), noise, length - noise)
        inputs, targets = corrupt(list(range(length)), mask, 1000)
        assert (len(inputs), len(targets)) == corrupted_lengths(length)


def test_statistics_over_many_sequences():
    corrupter = SpanCorruption(vocab_size=32100, seed=0)
    noise = spans = total = 0
    span_lengths = []
    for _ in range(400):
        tokens = list(range(200))
        inputs, targets = corrupter(tokens)
        run = 0
        for t in targets[:-1]:  # sentinel, span, sentinel, span, ..., EOS
            if t >= 32000:
                spans += 1
                if run:
                    span_lengths.append(run)
                run = 0
            else:
                noise, run = noise + 1, run + 1
        span_lengths.append(run)
        total += len(tokens)
        assert sorted(t for t in inputs[:-1] + targets[:-1] if t < 32000) == tokens
    assert noise / total == pytest.approx(0.15, abs=0.002)
    assert sum(span_lengths) / len(span_lengths) == pytest.approx(3.0, abs=0.05)
    # the span lengths vary (uniform segmentation), they are not all 3
    assert min(span_lengths) == 1 and max(span_lengths) >= 8


def test_seeded():
    tokens = list(range(50))
    a, b = SpanCorruption(100, seed=3), SpanCorruption(100, seed=3)
    assert [a(tokens) for _ in range(3)] == [b(tokens) for _ in range(3)]
    assert SpanCorruption(100, seed=4)(tokens) != SpanCorruption(100, seed=3)(tokens)


@pytest.fixture(scope="module")
def corpus():
    from tensorgrad.datasets.text import python_stdlib_corpus
    return python_stdlib_corpus(40_000).splitlines()


def test_unigram_tokenizer_with_t5s_ids_and_sentinels(corpus, tmp_path):
    pytest.importorskip("tokenizers", reason="Unigram training needs the tokenizers package")
    tok = UnigramTokenizer.train(corpus, vocab_size=300, num_sentinels=10)
    assert tok.vocab_size == 300
    assert [tok.token_to_id(t) for t in ("<pad>", "</s>", "<unk>")] == [0, 1, 2]
    assert tok.sentinel_id(0) == tok.vocab_size - 1 and tok.sentinel_id(9) == tok.vocab_size - 10
    line = "def forward(self, x): return x"
    ids = tok.encode(line)
    assert ids[-1] == 1 and len(ids) < 0.6 * len(line)  # pieces ("\u2581return"), then </s>
    assert tok.decode(ids, skip_special_tokens=True) == line
    text = tok.decode([tok.sentinel_id(0)] + tok.encode("self")[:-1])
    assert text.startswith("<extra_id_0>")
    tok.save(tmp_path / "tokenizer.json")
    again = load_tokenizer(tmp_path)
    assert isinstance(again, UnigramTokenizer) and again.encode(line) == ids
    with pytest.raises(ValueError, match="no room"):
        UnigramTokenizer.train(corpus, vocab_size=50, num_sentinels=100)
