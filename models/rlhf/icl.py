"""In-context learning (Brown et al., 2020: "Language Models are Few-Shot Learners"): a model
pre-trained on sequences that each show many input -> output pairs of one function learns to
infer the function from the pairs in its context, with no weight change.

Functions map the letters of an eight-letter alphabet: copy, shift every letter by k places
(cyclically), or substitute letters by a random permutation. A sequence reads `ac hd bf ...`
(each pair is an input letter and its image, pairs separated by spaces), one function per
sequence. Some permutations are held out of pre-training; accuracy on their queries measures
learning from the context alone, since no weight has seen those functions. Answering needs an
induction head (Olsson et al., 2022): find the earlier pair that starts with the query letter
and copy the letter after it.
"""
import dataclasses
import random

import tensorgrad as tg

ALPHABET = "abcdefgh"
PAIR = 3  # "ac " : input, output, separator


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


def few_shot_text(f, letters):
    """`x f(x) ` for every letter: the pairs of one sequence."""
    return "".join(f"{x}{f(x)} " for x in letters)


def training_batch(tokenizer, family, batch_size, n_pairs, rng, device=None):
    """(input_ids, targets), both (B, n_pairs * PAIR - 1): n_pairs random pairs of one function
    per row. Targets hold the next token where it is an output letter and -100 elsewhere: the
    inputs are random and the separators trivial, only the outputs carry anything to learn."""
    ids, targets = [], []
    for _ in range(batch_size):
        f = family.draw_training(rng)
        row = tokenizer.encode(few_shot_text(f, [rng.choice(ALPHABET) for _ in range(n_pairs)]))
        # position t predicts token t + 1, an output letter when (t + 1) % PAIR == 1
        target = [row[t + 1] if (t + 1) % PAIR == 1 else -100 for t in range(len(row) - 1)]
        ids.append(row[:-1])
        targets.append(target)
    as_tensor = lambda x: tg.tensor(x, dtype=tg.int64, device=device)
    return as_tensor(ids), as_tensor(targets)


@tg.no_grad()
def few_shot_accuracy(model, tokenizer, functions, shots, queries=8, seed=0):
    """The fraction of queries answered right (greedy) after `shots` example pairs of the same
    function in the prompt, over `queries` queries of each function. Examples are drawn like
    the query (so, as in pre-training, the query letter may or may not be among them)."""
    rng = random.Random(seed)
    prompts, answers = [], []
    for f in functions:
        for _ in range(queries):
            examples = [rng.choice(ALPHABET) for _ in range(shots)]
            query = rng.choice(ALPHABET)
            prompts.append(tokenizer.encode(few_shot_text(f, examples) + query))
            answers.append(tokenizer.encode(f(query))[0])
    device = model.wte.weight.device
    ids = tg.tensor(prompts, dtype=tg.int64, device=device)  # (B, T): all the same length
    logits, _ = model(ids)
    guesses = logits[:, -1].argmax(-1).tolist()
    return sum(g == a for g, a in zip(guesses, answers)) / len(answers)
