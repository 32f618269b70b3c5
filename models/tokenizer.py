"""Tokenizers with one small interface: `encode(text) -> list[int]`, `decode(ids) -> str`,
`vocab_size`, `save(path)`, and `load_tokenizer(path)` to read any of them back.

- `CharTokenizer`: one id per character seen in a training text (Karpathy's char-rnn and
  nanoGPT's Shakespeare); saved as JSON.
- `ByteTokenizer`: one id per UTF-8 byte, a fixed vocabulary of 256 that can encode any text;
  saved as JSON.
- `BPETokenizer`: byte-level BPE (Radford et al., 2019: GPT-2) through the Hugging Face
  `tokenizers` library, an optional dependency (`pip install tensorgrad[examples]`): train one
  on a corpus, or load a `tokenizer.json` or GPT-2's `vocab.json` + `merges.txt`.
- `WordPieceTokenizer`: BERT's WordPiece, through `tokenizers` too: train one, or load a
  `tokenizer.json` or BERT's `vocab.txt`.
- `UnigramTokenizer`: SentencePiece's unigram language model (Kudo, 2018), T5's tokenizer,
  through `tokenizers`, with T5's special ids and sentinel tokens.
"""
import json
import os

from tensorgrad.serialization import atomic_write


def _ids(ids):
    """A list of ints from a list, a tuple or a 1-d integer Tensor."""
    return ids.tolist() if hasattr(ids, "tolist") else [int(i) for i in ids]


class Tokenizer:
    """The interface every tokenizer here has. Subclasses set `vocab_size` and define encode,
    decode and save; `special_tokens` maps special token strings to ids (empty by default)."""

    vocab_size = 0
    special_tokens = {}

    def encode(self, text):
        raise NotImplementedError

    def decode(self, ids):
        raise NotImplementedError

    def save(self, path):
        raise NotImplementedError

    def __len__(self):
        return self.vocab_size

    def __repr__(self):
        return f"{type(self).__name__}(vocab_size={self.vocab_size})"


class CharTokenizer(Tokenizer):
    """Characters -> ids: the sorted set of characters in the text it was built from.

    `CharTokenizer.from_text(corpus)` builds it; encoding a character it has never seen is an
    error (a character-level model has no embedding for it).
    """

    def __init__(self, chars):
        self.chars = "".join(chars)
        if len(set(self.chars)) != len(self.chars):
            raise ValueError("CharTokenizer: the vocabulary has repeated characters")
        self.vocab_size = len(self.chars)
        self._index = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def from_text(cls, text):
        return cls(sorted(set(text)))

    def encode(self, text):
        try:
            return [self._index[c] for c in text]
        except KeyError:
            unknown = sorted(set(text) - set(self._index))
            raise ValueError(f"CharTokenizer.encode: characters {unknown[:10]} are not in the "
                             f"vocabulary of {self.vocab_size} characters") from None

    def decode(self, ids):
        ids = _ids(ids)
        bad = [i for i in ids if not 0 <= i < self.vocab_size]
        if bad:
            raise ValueError(f"CharTokenizer.decode: ids {bad[:10]} are out of range for a "
                             f"vocabulary of {self.vocab_size}")
        return "".join(self.chars[i] for i in ids)

    def save(self, path):
        _write_json(path, {"type": "char", "chars": self.chars})


class ByteTokenizer(Tokenizer):
    """UTF-8 bytes -> ids 0..255. Decoding replaces byte sequences that are not valid UTF-8
    (a sampled model can produce them) with U+FFFD."""

    vocab_size = 256

    def encode(self, text):
        return list(text.encode("utf-8"))

    def decode(self, ids):
        ids = _ids(ids)
        bad = [i for i in ids if not 0 <= i < 256]
        if bad:
            raise ValueError(f"ByteTokenizer.decode: ids {bad[:10]} are not bytes (0..255)")
        return bytes(ids).decode("utf-8", errors="replace")

    def save(self, path):
        _write_json(path, {"type": "byte"})


def _require_tokenizers():
    try:
        import tokenizers
    except ImportError:
        raise ImportError("BPETokenizer needs the `tokenizers` package: "
                          "pip install tensorgrad[examples] (or pip install tokenizers)") from None
    return tokenizers


class BPETokenizer(Tokenizer):
    """Byte-level BPE, GPT-2's scheme: text is split by GPT-2's pre-tokenisation pattern, each
    piece is mapped to bytes (shown as printable characters), and learned merges join them.

    Wraps a `tokenizers.Tokenizer`; make one with `train`, `from_file` (a tokenizer.json) or
    `from_gpt2_files` (vocab.json + merges.txt). `save` writes a tokenizer.json.
    """

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)
        self.special_tokens = {t.content: i for i, t in
                               tokenizer.get_added_tokens_decoder().items() if t.special}

    @classmethod
    def _byte_level(cls, model):
        tk = _require_tokenizers()
        tokenizer = tk.Tokenizer(model)
        tokenizer.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = tk.decoders.ByteLevel()
        return tokenizer

    @classmethod
    def train(cls, texts, vocab_size, special_tokens=("<|endoftext|>",), min_frequency=2):
        """Learn merges from `texts` (an iterable of strings, e.g. the lines or files of a corpus)
        until the vocabulary, which starts with the 256 byte symbols and the special tokens,
        holds vocab_size tokens (fewer if the corpus runs out of pairs seen min_frequency
        times)."""
        tk = _require_tokenizers()
        tokenizer = cls._byte_level(tk.models.BPE())
        trainer = tk.trainers.BpeTrainer(
            vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=list(special_tokens),
            initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
        tokenizer.train_from_iterator([texts] if isinstance(texts, str) else texts, trainer)
        return cls(tokenizer)

    @classmethod
    def from_file(cls, path):
        """Load a Hugging Face `tokenizer.json`."""
        return cls(_require_tokenizers().Tokenizer.from_file(os.fspath(path)))

    @classmethod
    def from_gpt2_files(cls, vocab_file, merges_file, special_tokens=("<|endoftext|>",)):
        """Load GPT-2's original vocab.json and merges.txt (the special tokens must be in the
        vocabulary; GPT-2 has one, <|endoftext|> = 50256)."""
        tk = _require_tokenizers()
        tokenizer = cls._byte_level(tk.models.BPE.from_file(os.fspath(vocab_file),
                                                            os.fspath(merges_file)))
        missing = [t for t in special_tokens if tokenizer.token_to_id(t) is None]
        if missing:
            raise ValueError(f"BPETokenizer.from_gpt2_files: special tokens {missing} are not in "
                             f"{vocab_file}")
        tokenizer.add_special_tokens(list(special_tokens))
        return cls(tokenizer)

    def encode(self, text):
        return self.tokenizer.encode(text).ids

    def decode(self, ids):
        return self.tokenizer.decode(_ids(ids), skip_special_tokens=False)

    def token_to_id(self, token):
        return self.tokenizer.token_to_id(token)

    def save(self, path):
        _write_tokenizer_json(path, self.tokenizer)


def load_tokenizer(path):
    """Read back any tokenizer saved here: a JSON file written by CharTokenizer/ByteTokenizer
    `save`, a Hugging Face tokenizer.json, or a folder holding tokenizer.json or GPT-2's
    vocab.json + merges.txt."""
    path = os.fspath(path)
    if os.path.isdir(path):
        if os.path.exists(os.path.join(path, "tokenizer.json")):
            return load_tokenizer(os.path.join(path, "tokenizer.json"))
        vocab, merges = os.path.join(path, "vocab.json"), os.path.join(path, "merges.txt")
        if os.path.exists(vocab) and os.path.exists(merges):
            return BPETokenizer.from_gpt2_files(vocab, merges)
        if os.path.exists(os.path.join(path, "vocab.txt")):  # BERT's WordPiece
            return WordPieceTokenizer.from_vocab(os.path.join(path, "vocab.txt"))
        raise FileNotFoundError(f"load_tokenizer: {path} holds neither tokenizer.json nor "
                                "vocab.json + merges.txt nor vocab.txt")
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind == "char":
        return CharTokenizer(spec["chars"])
    if kind == "byte":
        return ByteTokenizer()
    if isinstance(spec, dict) and spec.get("model", {}).get("type") == "WordPiece":
        return WordPieceTokenizer.from_file(path)
    if isinstance(spec, dict) and spec.get("model", {}).get("type") == "Unigram":
        return UnigramTokenizer.from_file(path)
    if isinstance(spec, dict) and "model" in spec:
        return BPETokenizer.from_file(path)
    raise ValueError(f"load_tokenizer: {path} is not a tokenizer file (expected a 'type' of "
                     f"'char' or 'byte', or a Hugging Face tokenizer.json)")


def _write_json(path, spec):
    # Atomic: a reader (another rank of a resumed run) or a crash mid-write sees the old file or
    # the new one, never an empty one.
    atomic_write(path, lambda f: json.dump(spec, f, ensure_ascii=False), mode="w")


def _write_tokenizer_json(path, tokenizer):
    # tokenizers' own Tokenizer.save opens the destination directly; to_str(pretty=True) is the
    # same text (the same bytes in UTF-8), written atomically.
    atomic_write(path, lambda f: f.write(tokenizer.to_str(pretty=True).encode("utf-8")))


class WordPieceTokenizer(Tokenizer):
    """BERT's WordPiece (Wu et al., 2016; Devlin et al., 2019) through the `tokenizers` library.

    Text is cleaned and optionally lower-cased (BERT's normaliser, which also strips accents
    when lower-casing), split on whitespace and punctuation, and each word is cut into the
    longest pieces in the vocabulary from the left, pieces inside a word written "##piece"; a
    word with no cut becomes [UNK]. Special tokens [PAD] [UNK] [CLS] [SEP] [MASK] come first,
    ids 0-4, as in BERT's vocabularies ([PAD] = 0 is BertConfig's pad_token_id).

    encode(text) gives [CLS] text [SEP] and encode(text, pair) [CLS] text [SEP] pair [SEP], as
    Hugging Face's BERT tokenizers do (add_special_tokens=False for the pieces alone);
    `encode_with_token_types` also gives the segment ids. Make one with `train`, `from_vocab`
    (a BERT vocab.txt) or `from_file` (a tokenizer.json); `save` writes tokenizer.json and
    `save_vocab` a vocab.txt that `transformers.BertTokenizerFast` reads.
    """

    SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

    def __init__(self, tokenizer):
        missing = [t for t in self.SPECIAL_TOKENS if tokenizer.token_to_id(t) is None]
        if missing:
            raise ValueError(f"WordPieceTokenizer: the vocabulary lacks the special tokens "
                             f"{missing}")
        tk = _require_tokenizers()
        cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
        tokenizer.post_processor = tk.processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)])
        self.tokenizer = tokenizer
        self.vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)
        self.special_tokens = {t: tokenizer.token_to_id(t) for t in self.SPECIAL_TOKENS}

    @classmethod
    def _bert(cls, model, lowercase):
        tk = _require_tokenizers()
        tokenizer = tk.Tokenizer(model)
        tokenizer.normalizer = tk.normalizers.BertNormalizer(lowercase=lowercase)
        tokenizer.pre_tokenizer = tk.pre_tokenizers.BertPreTokenizer()
        tokenizer.decoder = tk.decoders.WordPiece(prefix="##")
        return tokenizer

    @classmethod
    def train(cls, texts, vocab_size, lowercase=True, min_frequency=2):
        """Learn a vocabulary of vocab_size pieces (the special tokens and every character
        seen included; fewer if the corpus runs out) from `texts`, an iterable of strings."""
        tk = _require_tokenizers()
        tokenizer = cls._bert(tk.models.WordPiece(unk_token="[UNK]"), lowercase)
        trainer = tk.trainers.WordPieceTrainer(
            vocab_size=vocab_size, min_frequency=min_frequency,
            special_tokens=list(cls.SPECIAL_TOKENS), show_progress=False)
        tokenizer.train_from_iterator([texts] if isinstance(texts, str) else texts, trainer)
        return cls(tokenizer)

    @classmethod
    def from_vocab(cls, path, lowercase=True):
        """Load a BERT vocab.txt (one piece per line, the line number is its id)."""
        tk = _require_tokenizers()
        vocab = tk.models.WordPiece.read_file(os.fspath(path))
        tokenizer = cls._bert(tk.models.WordPiece(vocab, unk_token="[UNK]"), lowercase)
        tokenizer.add_special_tokens([t for t in cls.SPECIAL_TOKENS if t in vocab])
        return cls(tokenizer)

    @classmethod
    def from_file(cls, path):
        """Load a Hugging Face WordPiece `tokenizer.json`."""
        return cls(_require_tokenizers().Tokenizer.from_file(os.fspath(path)))

    def encode(self, text, pair=None, add_special_tokens=True):
        return self.tokenizer.encode(text, pair, add_special_tokens=add_special_tokens).ids

    def encode_with_token_types(self, text, pair=None):
        """(ids, token_type_ids) of [CLS] text [SEP] (pair [SEP])."""
        encoding = self.tokenizer.encode(text, pair)
        return encoding.ids, encoding.type_ids

    def decode(self, ids, skip_special_tokens=False):
        return self.tokenizer.decode(_ids(ids), skip_special_tokens=skip_special_tokens)

    def token_to_id(self, token):
        return self.tokenizer.token_to_id(token)

    def save(self, path):
        _write_tokenizer_json(path, self.tokenizer)

    def save_vocab(self, path):
        """Write vocab.txt: the pieces in id order."""
        by_id = sorted(self.tokenizer.get_vocab(with_added_tokens=True).items(),
                       key=lambda item: item[1])
        atomic_write(path, lambda f: f.writelines(f"{token}\n" for token, _ in by_id), mode="w")


class UnigramTokenizer(BPETokenizer):
    """SentencePiece's unigram language model (Kudo, 2018), the tokenizer of T5: a vocabulary
    of pieces with probabilities, each text split into its most likely pieces (Viterbi); the
    text is NFKC-normalised and spaces become the "\u2581" that starts a word, so decoding
    restores them. Wraps a `tokenizers.Tokenizer` as BPETokenizer does (from_file, save, encode,
    decode, token_to_id are the same).

    T5's layout of ids: <pad> = 0, </s> = 1, <unk> = 2, then the pieces, then the sentinels
    <extra_id_{n-1}> ... <extra_id_0>, so that <extra_id_i> = vocab_size - 1 - i (what
    `models.span_corruption` uses). encode appends </s>, as T5's tokenizer does.
    """

    special = ("<pad>", "</s>", "<unk>")

    @classmethod
    def train(cls, texts, vocab_size, num_sentinels=100, max_piece_length=16):
        """Learn a unigram vocabulary from `texts` (a string or an iterable of them); vocab_size
        counts everything: the 3 special tokens, the pieces and the num_sentinels sentinels."""
        tk = _require_tokenizers()
        if vocab_size <= num_sentinels + len(cls.special):
            raise ValueError(f"UnigramTokenizer.train: vocab_size={vocab_size} leaves no room "
                             f"for pieces next to {num_sentinels} sentinels and 3 special tokens")
        tokenizer = tk.Tokenizer(tk.models.Unigram())
        tokenizer.normalizer = tk.normalizers.NFKC()
        tokenizer.pre_tokenizer = tk.pre_tokenizers.Metaspace()
        tokenizer.decoder = tk.decoders.Metaspace()
        trainer = tk.trainers.UnigramTrainer(
            vocab_size=vocab_size - num_sentinels, special_tokens=list(cls.special),
            unk_token="<unk>", max_piece_length=max_piece_length, show_progress=False)
        tokenizer.train_from_iterator([texts] if isinstance(texts, str) else texts, trainer)
        tokenizer.add_special_tokens([f"<extra_id_{i}>" for i in reversed(range(num_sentinels))])
        tokenizer.post_processor = tk.processors.TemplateProcessing(
            single="$A </s>", special_tokens=[("</s>", tokenizer.token_to_id("</s>"))])
        return cls(tokenizer)

    def sentinel_id(self, i):
        """The id of <extra_id_i>."""
        token = self.token_to_id(f"<extra_id_{i}>")
        if token is None:
            raise ValueError(f"UnigramTokenizer: there is no <extra_id_{i}>")
        return token

    def decode(self, ids, skip_special_tokens=False):
        """Text for ids; skip_special_tokens drops <pad>, </s> and the sentinels."""
        return self.tokenizer.decode(_ids(ids), skip_special_tokens=skip_special_tokens)
