"""BERT's pre-training data (Devlin et al., 2019, section 3.1 and appendix A.1): masked tokens
and next-sentence pairs.

- `MLMCollator` masks a batch: it chooses 15% of the tokens that are neither special nor
  padding; of those, 80% become [MASK], 10% a random token and 10% stay as they are, so the
  model cannot learn that only [MASK] positions matter. Labels hold the original token where
  one was chosen and -100 (ignored by the loss) elsewhere.
- `next_sentence_pairs` builds `[CLS] A [SEP] B [SEP]` with token types 0 for A and 1 for B,
  where B is the sentence after A half of the time (label 0) and a random sentence from another
  document otherwise (label 1); pairs too long are cut longest-first.
- `collate_pairs` pads pairs into the batch tensors the models take.
"""
import random

import tensorgrad as tg


class MLMCollator:
    """Masks (B, T) token ids for masked-language-model training.

    vocab_size: random replacements are drawn from the ids below it that are not special.
    mask_token_id: [MASK]. special_token_ids: ids never chosen ([PAD], [UNK], [CLS], [SEP],
    [MASK]...); padding (attention_mask 0) is never chosen either.
    mlm_probability, mask_probability, random_probability: 15%, 80% of those, 10% of those.
    seed: the collator's own generator, so the same seed masks the same batches.
    `MLMCollator.from_tokenizer(tok)` reads the ids from a WordPieceTokenizer.
    """

    def __init__(self, vocab_size, mask_token_id, special_token_ids, mlm_probability=0.15,
                 mask_probability=0.8, random_probability=0.1, seed=0):
        if not 0 < mlm_probability < 1 or mask_probability + random_probability > 1:
            raise ValueError(f"MLMCollator: need 0 < mlm_probability < 1 and mask_probability "
                             f"+ random_probability <= 1, got {mlm_probability}, "
                             f"{mask_probability}, {random_probability}")
        self.mask_token_id = mask_token_id
        self.special_token_ids = sorted(set(special_token_ids) | {mask_token_id})
        self.regular_ids = tg.tensor([i for i in range(vocab_size)
                                      if i not in set(self.special_token_ids)])
        self.mlm_probability = mlm_probability
        self.mask_probability, self.random_probability = mask_probability, random_probability
        self.generator = tg.Generator().manual_seed(seed)

    @classmethod
    def from_tokenizer(cls, tokenizer, **options):
        specials = tokenizer.special_tokens
        return cls(tokenizer.vocab_size, specials["[MASK]"], specials.values(), **options)

    def __call__(self, input_ids, attention_mask=None):
        """(masked input_ids, labels), both (B, T) int64; the input is not changed."""
        if input_ids.ndim != 2 or input_ids.dtype.kind not in "iu":
            raise ValueError(f"MLMCollator: expected (B, T) integer ids, got {input_ids.dtype} "
                             f"of shape {input_ids.shape}")
        ids = input_ids.to(tg.int64)
        eligible = tg.ones(*ids.shape, dtype=tg.bool, device=ids.device)
        for special in self.special_token_ids:
            eligible = eligible & (ids != special)
        if attention_mask is not None:
            eligible = eligible & (attention_mask != 0)
        draw = dict(generator=self.generator, device=ids.device)
        chosen = eligible & (tg.rand(*ids.shape, **draw) < self.mlm_probability)
        # One more uniform draw splits the chosen tokens into [MASK] / random / unchanged.
        u = tg.rand(*ids.shape, **draw)
        to_mask = chosen & (u < self.mask_probability)
        to_random = chosen & (u >= self.mask_probability) \
            & (u < self.mask_probability + self.random_probability)
        picks = tg.randint(0, self.regular_ids.shape[0], tuple(ids.shape), **draw)
        random_ids = self.regular_ids.to(ids.device)[picks]  # (B, T)
        masked = tg.where(to_mask, self.mask_token_id, tg.where(to_random, random_ids, ids))
        labels = tg.where(chosen, ids, -100)
        return masked, labels


def truncate_longest_first(a, b, max_tokens):
    """Cut the longer of two token lists (from the end, B on ties) until both fit in max_tokens
    together, as BERT's create_pretraining_data does (it cuts at random ends; the end keeps
    the sentence starts). Returns new lists."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_tokens:
        (a if len(a) > len(b) else b).pop()
    return a, b


def next_sentence_pairs(documents, max_length, cls_token_id, sep_token_id, seed=0):
    """Next-sentence examples from documents, each a list of sentences as token-id lists.

    For each sentence A that has a next sentence in its document: B is that next sentence
    (label 0, "IsNext") with probability 1/2, otherwise a random sentence of another document
    (label 1, "NotNext"). Returns dicts of input_ids = [CLS] A [SEP] B [SEP], token_type_ids
    (0 up to the first [SEP], 1 after), next_sentence_label; max_length counts every token.
    """
    if max_length < 5:
        raise ValueError(f"next_sentence_pairs: max_length={max_length} leaves no room for two "
                         f"sentences and the three special tokens")
    documents = [[list(s) for s in doc if len(s)] for doc in documents]
    others = [j for j, doc in enumerate(documents) if doc]  # where random sentences come from
    if len(others) < 2:
        raise ValueError("next_sentence_pairs: need at least two documents with sentences")
    rng = random.Random(seed)
    pairs = []
    for d, doc in enumerate(documents):
        for i in range(len(doc) - 1):
            if rng.random() < 0.5:
                b, label = doc[i + 1], 0
            else:
                other = d
                while other == d:
                    other = rng.choice(others)
                b, label = rng.choice(documents[other]), 1
            a, b = truncate_longest_first(doc[i], b, max_length - 3)
            ids = [cls_token_id] + a + [sep_token_id] + b + [sep_token_id]
            types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
            pairs.append({"input_ids": ids, "token_type_ids": types,
                          "next_sentence_label": label})
    return pairs


def collate_pairs(pairs, pad_token_id=0, device=None):
    """Pad examples (dicts with input_ids and token_type_ids lists, and optionally a
    next_sentence_label or label) on the right into (B, T) int64 tensors: input_ids,
    token_type_ids, attention_mask (1 at tokens), plus the labels as (B,)."""
    longest = max(len(p["input_ids"]) for p in pairs)
    batch = {"input_ids": [], "token_type_ids": [], "attention_mask": []}
    for p in pairs:
        pad = longest - len(p["input_ids"])
        batch["input_ids"].append(list(p["input_ids"]) + [pad_token_id] * pad)
        batch["token_type_ids"].append(list(p.get("token_type_ids", [0] * len(p["input_ids"])))
                                       + [0] * pad)
        batch["attention_mask"].append([1] * len(p["input_ids"]) + [0] * pad)
    batch = {k: tg.tensor(v, dtype=tg.int64, device=device) for k, v in batch.items()}
    for key in ("next_sentence_label", "label"):
        if key in pairs[0]:
            batch[key] = tg.tensor([p[key] for p in pairs], dtype=tg.int64, device=device)
    return batch
