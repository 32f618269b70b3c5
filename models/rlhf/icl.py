"""In-context learning (Brown et al., 2020: "Language Models are Few-Shot Learners"): a model
pre-trained on sequences that each show many input -> output pairs of one function learns to
infer the function from the pairs in its context, with no weight change.

Functions map the letters of an eight-letter alphabet: copy, shift every letter by k places
(cyclically), or substitute letters by a random permutation; one function per sequence. Some
permutations are held out of pre-training; accuracy on their queries measures learning from the
context alone, since no weight has seen those functions.

A sequence reads `a> a>c b> b>h a> a>c ...`: each example is a query token `x>` ("the input is
x") followed by the pair token `x>y` (input and image merged into one token, as BPE merges
frequent strings). At each query the model predicts the pair; for a query whose letter appeared
earlier, the answer is in the context: an attention head that matches the query letter against
the input letter of the earlier pairs and copies the pair it finds. That is one layer's work,
which a small GPT learns in a hundred steps on a CPU; spelled out one character per token, the
same lookup needs an induction head (two composed layers, Olsson et al., 2022), which stayed on
its loss plateau for the first 300 steps we could afford to measure.
"""
import dataclasses
import random

import tensorgrad as tg

from ..tokenizer import Tokenizer

ALPHABET = "abcdefgh"


@dataclasses.dataclass(frozen=True)
class LetterFunction:
    """Letter i of ALPHABET -> table[i] (`table` is a permutation of ALPHABET)."""
    name: str
    table: str

    def __call__(self, letter):
        return self.table[ALPHABET.index(letter)]


def copy_function():
    return LetterFunction("copy", ALPHABET)


def shift_function(k):
    n = len(ALPHABET)
    return LetterFunction(f"shift {k}", "".join(ALPHABET[(i + k) % n] for i in range(n)))


def permutation_function(rng):
    table = list(ALPHABET)
    rng.shuffle(table)
    return LetterFunction("permutation", "".join(table))


class FunctionFamily:
    """Pre-training draws copy, shifts and random permutations; `held_out` are permutations
    (neither copy nor a shift) that pre-training never draws."""

    def __init__(self, n_held_out=64, seed=0):
        rng = random.Random(seed)
        trivial = {shift_function(k).table for k in range(len(ALPHABET))}  # k = 0 is copy
        held_out = {}
        while len(held_out) < n_held_out:
            f = permutation_function(rng)
            if f.table not in trivial:
                held_out[f.table] = f
        self.held_out = list(held_out.values())
        self._held_out_tables = set(held_out)

    def draw_training(self, rng):
        """One pre-training function: copy 10%, a shift 20%, a permutation 70%."""
        u = rng.random()
        if u < 0.1:
            return copy_function()
        if u < 0.3:
            return shift_function(rng.randrange(1, len(ALPHABET)))
        while True:
            f = permutation_function(rng)
            if f.table not in self._held_out_tables:
                return f


class PairTokenizer(Tokenizer):
    """Space-separated tokens: `x>y` (a pair, ids 0..63) and `x>` (a query, ids 64..71)."""

    def __init__(self):
        n = len(ALPHABET)
        self.pairs = [f"{x}>{y}" for x in ALPHABET for y in ALPHABET]
        self.queries = [f"{x}>" for x in ALPHABET]
        self._index = {t: i for i, t in enumerate(self.pairs + self.queries)}
        self.vocab_size = n * n + n

    def encode(self, text):
        try:
            return [self._index[t] for t in text.split()]
        except KeyError as e:
            raise ValueError(f"PairTokenizer.encode: {e.args[0]!r} is neither a pair 'x>y' nor "
                             f"a query 'x>' over the letters {ALPHABET!r}") from None

    def decode(self, ids):
        ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        return " ".join((self.pairs + self.queries)[i] for i in ids)


def few_shot_text(f, letters):
    """`x> x>f(x) ` for every letter: the examples of one sequence."""
    return "".join(f"{x}> {x}>{f(x)} " for x in letters)


def training_batch(tokenizer, family, batch_size, n_pairs, rng, device=None):
    """(input_ids, targets), both (B, 2 * n_pairs): n_pairs random examples of one function per
    row. The target at each query is its pair; -100 after each pair (the next query's letter is
    random: nothing to learn there)."""
    ids, targets = [], []
    for _ in range(batch_size):
        f = family.draw_training(rng)
        row = tokenizer.encode(few_shot_text(f, [rng.choice(ALPHABET) for _ in range(n_pairs)]))
        ids.append(row)
        targets.append([row[t + 1] if t % 2 == 0 else -100 for t in range(len(row))])
    as_tensor = lambda x: tg.tensor(x, dtype=tg.int64, device=device)
    return as_tensor(ids), as_tensor(targets)


@tg.no_grad()
def few_shot_accuracy(model, tokenizer, functions, shots, queries=8, seed=0):
    """The fraction of queries answered right (the most likely next token is the right pair)
    after `shots` examples of the same function, over `queries` queries of each function.
    Examples are drawn like the query (so, as in pre-training, the query letter may or may not
    be among them)."""
    rng = random.Random(seed)
    prompts, answers = [], []
    for f in functions:
        for _ in range(queries):
            examples = [rng.choice(ALPHABET) for _ in range(shots)]
            query = rng.choice(ALPHABET)
            prompts.append(tokenizer.encode(few_shot_text(f, examples) + f"{query}>"))
            answers.append(tokenizer.encode(f"{query}>{f(query)}")[0])
    device = model.wte.weight.device
    ids = tg.tensor(prompts, dtype=tg.int64, device=device)  # (B, T): all the same length
    logits, _ = model(ids)
    guesses = logits[:, -1].argmax(-1).tolist()
    return sum(g == a for g, a in zip(guesses, answers)) / len(answers)
