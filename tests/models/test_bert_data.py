"""BERT's pre-training data: masking proportions, next-sentence pairs, padding, WordPiece (against
`transformers`' BERT tokenizer), and the standard-library documents they are made from."""
import math
import os

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.datasets import text as data
from tensorgrad.models import bert_data
from tensorgrad.models.bert_data import MLMCollator, collate_pairs, next_sentence_pairs
from tensorgrad.models.tokenizer import WordPieceTokenizer, load_tokenizer

SPECIALS = [0, 1, 2, 3, 4]  # [PAD] [UNK] [CLS] [SEP] [MASK]


def _within(count, n, p, sigmas=5):
    """count is within `sigmas` binomial standard deviations of n * p."""
    return abs(count - n * p) <= sigmas * math.sqrt(n * p * (1 - p))


def test_mlm_proportions_on_200k_tokens():
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 1000, (400, 500))
    ids[:, 0], ids[:, 250], ids[:, -1] = 2, 3, 3  # [CLS] ... [SEP] ... [SEP]
    ids[::7, 400:] = 0  # padding
    mask = (ids != 0).astype(np.int64)
    ids[1::5, 10] = 1  # some [UNK]
    collator = MLMCollator(1000, mask_token_id=4, special_token_ids=SPECIALS, seed=3)
    masked, labels = collator(tg.tensor(ids), tg.tensor(mask))
    masked, labels = masked.numpy(), labels.numpy()
    special = np.isin(ids, SPECIALS)
    eligible = ~special & (mask == 1)
    chosen = labels != -100
    assert not (chosen & ~eligible).any()  # special tokens and padding are never chosen
    assert (masked[~chosen] == ids[~chosen]).all()  # nothing else changes
    assert (labels[chosen] == ids[chosen]).all()
    n = int(eligible.sum())
    assert n >= 100_000
    assert _within(chosen.sum(), n, 0.15)
    k = int(chosen.sum())
    to_mask = chosen & (masked == 4)
    kept = chosen & (masked == ids)
    to_random = chosen & ~to_mask & ~kept
    assert _within(to_mask.sum(), k, 0.8)
    # a random draw equals the original token about 1/995 of the time: that counts as kept
    assert _within(to_random.sum(), k, 0.1 * (1 - 1 / 995))
    assert _within(kept.sum(), k, 0.1 + 0.1 / 995)
    assert not np.isin(masked[to_random], SPECIALS).any()  # random tokens are regular ones
    assert len(np.unique(masked[to_random])) > 900  # drawn across the vocabulary


def test_mlm_is_seeded_and_leaves_its_input_alone():
    ids = tg.randint(5, 50, (8, 30))
    before = ids.numpy().copy()
    a = MLMCollator(50, 4, SPECIALS, seed=1)(ids)
    b = MLMCollator(50, 4, SPECIALS, seed=1)(ids)
    c = MLMCollator(50, 4, SPECIALS, seed=2)(ids)
    np.testing.assert_array_equal(a[0].numpy(), b[0].numpy())
    np.testing.assert_array_equal(a[1].numpy(), b[1].numpy())
    assert (a[1].numpy() != c[1].numpy()).any()
    np.testing.assert_array_equal(ids.numpy(), before)
    with pytest.raises(ValueError, match=r"expected \(B, T\) integer ids"):
        MLMCollator(50, 4, SPECIALS)(tg.zeros(3, 4))
    with pytest.raises(ValueError, match="mlm_probability"):
        MLMCollator(50, 4, SPECIALS, mlm_probability=1.5)


def _documents(n_docs=40, n_sentences=6, seed=0):
    """Sentences whose tokens name their document and position: 1000 * doc + 10 * i + j."""
    rng = np.random.default_rng(seed)
    return [[[1000 * d + 10 * i + j for j in range(int(rng.integers(2, 9)))]
             for i in range(n_sentences)] for d in range(1, n_docs + 1)]


def test_next_sentence_pairs():
    docs = _documents()
    pairs = next_sentence_pairs(docs, max_length=12, cls_token_id=2, sep_token_id=3, seed=0)
    assert len(pairs) == 40 * 5  # every sentence that has a next one
    labels = np.array([p["next_sentence_label"] for p in pairs])
    assert _within(labels.sum(), len(labels), 0.5)
    for p in pairs:
        ids, types = p["input_ids"], p["token_type_ids"]
        assert len(ids) == len(types) <= 12
        first_sep = ids.index(3)
        assert ids[0] == 2 and ids[-1] == 3 and ids.count(3) == 2
        assert types == [0] * (first_sep + 1) + [1] * (len(ids) - first_sep - 1)
        a, b = ids[1:first_sep], ids[first_sep + 1:-1]
        assert a and b
        same_doc = a[0] // 1000 == b[0] // 1000
        if p["next_sentence_label"] == 0:  # B is the sentence after A
            assert same_doc and b[0] % 1000 // 10 == a[0] % 1000 // 10 + 1
        else:
            assert not same_doc  # from another document
    again = next_sentence_pairs(docs, max_length=12, cls_token_id=2, sep_token_id=3, seed=0)
    assert again == pairs


def test_truncation_is_longest_first():
    a, b = bert_data.truncate_longest_first(range(10), range(100, 103), 8)
    assert a == [0, 1, 2, 3, 4] and b == [100, 101, 102]
    a, b = bert_data.truncate_longest_first(range(6), range(100, 106), 7)
    assert (len(a), len(b)) == (4, 3)  # ties cut B first, then the longer one
    with pytest.raises(ValueError, match="two documents"):
        next_sentence_pairs([[[5, 6], [7, 8]]], 10, 2, 3)


def test_collate_pairs_pads_on_the_right():
    pairs = [{"input_ids": [2, 7, 3, 8, 3], "token_type_ids": [0, 0, 0, 1, 1],
              "next_sentence_label": 1},
             {"input_ids": [2, 9, 3], "token_type_ids": [0, 0, 0], "next_sentence_label": 0}]
    batch = collate_pairs(pairs)
    assert batch["input_ids"].tolist() == [[2, 7, 3, 8, 3], [2, 9, 3, 0, 0]]
    assert batch["token_type_ids"].tolist() == [[0, 0, 0, 1, 1], [0, 0, 0, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]
    assert batch["next_sentence_label"].tolist() == [1, 0]


# --- WordPiece ------------------------------------------------------------------------------------
TEXTS = ["Return the value of the named attribute of object.",
         "Raise ValueError if the string is not a valid identifier!",
         "The event loop runs asynchronous tasks and callbacks."] * 30


def test_wordpiece_matches_transformers_bert_tokenizer(tmp_path):
    transformers = pytest.importorskip("transformers")
    tok = WordPieceTokenizer.train(TEXTS, vocab_size=300)
    assert tok.special_tokens == {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}
    tok.save_vocab(tmp_path / "vocab.txt")
    hf = transformers.BertTokenizerFast(str(tmp_path / "vocab.txt"))
    a, b = "Returns the VALUES of attributes; strings é and 中!", "Raise the loop."
    assert tok.encode(a) == hf(a)["input_ids"]
    ids, types = tok.encode_with_token_types(a, b)
    assert ids == hf(a, b)["input_ids"] and types == hf(a, b)["token_type_ids"]
    assert tok.encode(a, add_special_tokens=False) == ids[1:ids.index(3)]
    assert "[UNK]" in tok.decode(tok.encode("zzzq"))  # no piece for z or q
    assert tok.decode(tok.encode("the loop"), skip_special_tokens=True) == "the loop"


def test_wordpiece_casing_and_loading(tmp_path):
    pytest.importorskip("tokenizers", reason="WordPiece training needs the tokenizers package")
    cased = WordPieceTokenizer.train(TEXTS, vocab_size=300, lowercase=False)
    lower = WordPieceTokenizer.train(TEXTS, vocab_size=300)
    assert cased.decode(cased.encode("Return", add_special_tokens=False)) == "Return"
    assert lower.decode(lower.encode("Return", add_special_tokens=False)) == "return"
    lower.save(tmp_path / "tokenizer.json")
    lower.save_vocab(tmp_path / "vocab.txt")
    for loaded in (WordPieceTokenizer.from_file(tmp_path / "tokenizer.json"),
                   load_tokenizer(tmp_path / "tokenizer.json"),
                   WordPieceTokenizer.from_vocab(tmp_path / "vocab.txt"),
                   load_tokenizer(tmp_path)):  # the folder: tokenizer.json
        assert isinstance(loaded, WordPieceTokenizer) and loaded.vocab_size == lower.vocab_size
        assert loaded.encode(TEXTS[1], TEXTS[2]) == lower.encode(TEXTS[1], TEXTS[2])
    os.remove(tmp_path / "tokenizer.json")
    assert isinstance(load_tokenizer(tmp_path), WordPieceTokenizer)  # the folder: vocab.txt
    (tmp_path / "bad.txt").write_text("[PAD]\nhello\n")
    with pytest.raises(ValueError, match=r"lacks the special tokens \['\[UNK\]'"):
        WordPieceTokenizer.from_vocab(tmp_path / "bad.txt")
    collator = MLMCollator.from_tokenizer(lower)
    assert collator.mask_token_id == 4 and collator.special_token_ids == SPECIALS


# --- documents from the standard library --------------------------------------------------------
def test_split_sentences():
    text = "Return the value. Raise an error if it fails!\n\nSee also: os.path. Two words"
    assert data.split_sentences(text) == ["Return the value.", "Raise an error if it fails!",
                                          "See also: os.path."]
    assert data.split_sentences("e.g. the os.path module is used. Done here now.") == [
        "e.g. the os.path module is used.", "Done here now."]


def test_stdlib_documents():
    docs = data.stdlib_documents(packages=["json"])
    assert {d.package for d in docs} == {"json"} and {d.kind for d in docs} == {"docstring",
                                                                                "comment"}
    assert all(d.source.startswith("json/") and len(d.text) >= 40 for d in docs)
    assert all(">>>" not in d.text for d in docs)  # doctest examples are not prose
    decoder = [d for d in docs if d.source == "json/decoder.py" and d.kind == "docstring"]
    assert any("JSON" in s for d in decoder for s in d.sentences)
    assert docs == data.stdlib_documents(packages=["json"])  # deterministic
    only = data.stdlib_documents(packages=["json"], kinds=("docstring",))
    assert {d.kind for d in only} == {"docstring"}
    assert data.is_held_out("asyncio/events.py") == data.is_held_out("asyncio/events.py")
    names = [f"pkg/m{i}.py" for i in range(2000)]
    assert 150 < sum(map(data.is_held_out, names)) < 250
    with pytest.raises(FileNotFoundError, match="no documents"):
        data.stdlib_documents(packages=["no_such_package"])
