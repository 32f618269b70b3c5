"""Tokenizers: round trips, save/load, errors, and byte-level BPE against transformers' GPT-2
tokenizer on files the test makes (no downloads)."""
import json

import pytest

import tensorgrad as tg
from tensorgrad.models import BPETokenizer, ByteTokenizer, CharTokenizer, load_tokenizer

TEXT = "def add(a, b):\n    return a + b  # café, naïve\n\nprint(add(1, 2))\n"
CORPUS = [TEXT * 3, "class Point:\n    def __init__(self, x, y):\n        self.x = x\n" * 20,
          "for i in range(10):\n    print(i, i * i)\n" * 20]


def test_char_round_trip_and_save_load(tmp_path):
    tok = CharTokenizer.from_text(TEXT)
    assert tok.vocab_size == len(set(TEXT)) == len(tok)
    ids = tok.encode(TEXT)
    assert len(ids) == len(TEXT) and max(ids) < tok.vocab_size
    assert tok.decode(ids) == TEXT
    assert tok.decode(tg.tensor(ids)) == TEXT  # a Tensor of ids decodes too
    tok.save(tmp_path / "tok.json")
    again = load_tokenizer(tmp_path / "tok.json")
    assert isinstance(again, CharTokenizer) and again.encode(TEXT) == ids


def test_a_failed_save_leaves_the_old_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "tok.json"
    CharTokenizer.from_text("abc").save(path)
    monkeypatch.setattr(json, "dump", lambda *args, **kwargs: 1 / 0)  # dies mid-write
    with pytest.raises(ZeroDivisionError):
        CharTokenizer.from_text("xyz").save(path)
    assert load_tokenizer(path).decode([0, 1, 2]) == "abc"
    assert [p.name for p in tmp_path.iterdir()] == ["tok.json"]  # no temporary left


def test_char_errors_name_the_problem():
    tok = CharTokenizer.from_text("abc")
    with pytest.raises(ValueError, match=r"CharTokenizer.encode: characters \['z'\]"):
        tok.encode("abz")
    with pytest.raises(ValueError, match="out of range for a vocabulary of 3"):
        tok.decode([0, 7])


def test_byte_round_trip_any_text(tmp_path):
    tok = ByteTokenizer()
    ids = tok.encode(TEXT)
    assert tok.vocab_size == 256 and ids == list(TEXT.encode("utf-8"))
    assert tok.decode(ids) == TEXT
    assert tok.decode([0xC3]) == "\ufffd"  # half a UTF-8 character: replaced, not an error
    tok.save(tmp_path / "bytes.json")
    assert isinstance(load_tokenizer(tmp_path / "bytes.json"), ByteTokenizer)
    with pytest.raises(ValueError, match="not bytes"):
        tok.decode([256])


def test_load_tokenizer_rejects_other_json(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="not a tokenizer file"):
        load_tokenizer(tmp_path / "x.json")
    with pytest.raises(FileNotFoundError, match="neither tokenizer.json"):
        load_tokenizer(tmp_path)


def test_bpe_train_round_trip_save_load(tmp_path):
    pytest.importorskip("tokenizers")
    tok = BPETokenizer.train(CORPUS, vocab_size=300)
    assert 256 < tok.vocab_size <= 300
    ids = tok.encode(TEXT)
    assert len(ids) < len(TEXT.encode("utf-8"))  # merges learned from the corpus apply
    assert tok.decode(ids) == TEXT  # byte-level: lossless, accents and newlines included
    assert tok.special_tokens == {"<|endoftext|>": tok.token_to_id("<|endoftext|>")}
    tok.save(tmp_path / "tokenizer.json")
    for source in (tmp_path / "tokenizer.json", tmp_path):
        again = load_tokenizer(source)
        assert isinstance(again, BPETokenizer) and again.encode(TEXT) == ids


def test_bpe_save_writes_tokenizers_own_bytes_atomically(tmp_path):
    pytest.importorskip("tokenizers")
    tok = BPETokenizer.train(CORPUS, vocab_size=300)
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    tok.tokenizer.save(str(tmp_path / "theirs.json"))
    assert path.read_bytes() == (tmp_path / "theirs.json").read_bytes()
    before = path.read_bytes()

    class Failing:
        def to_str(self, pretty):
            raise MemoryError("out of memory while serialising")
    tok.tokenizer = Failing()
    with pytest.raises(MemoryError):
        tok.save(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["theirs.json", "tokenizer.json"]


def test_bpe_gpt2_files_match_transformers(tmp_path):
    """vocab.json + merges.txt in GPT-2's format, read by us and by transformers' GPT-2
    tokenizer: the same ids."""
    pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    trained = BPETokenizer.train(CORPUS, vocab_size=320)
    trained.tokenizer.model.save(str(tmp_path))  # writes vocab.json and merges.txt
    ours = BPETokenizer.from_gpt2_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    theirs = transformers.GPT2Tokenizer(str(tmp_path / "vocab.json"),
                                        str(tmp_path / "merges.txt"))
    for text in [TEXT, "  leading spaces and\ttabs\n", "x = {'k': [1, 2.5e-3]}"]:
        assert ours.encode(text) == theirs.encode(text)
        assert ours.decode(ours.encode(text)) == text
    assert isinstance(load_tokenizer(tmp_path), BPETokenizer)
    with pytest.raises(ValueError, match="special tokens"):
        BPETokenizer.from_gpt2_files(tmp_path / "vocab.json", tmp_path / "merges.txt",
                                     special_tokens=["<|nope|>"])
