"""Synthetic tasks whose right answers a program can check, the tokenizer they are written in,
and the judge that scores responses and turns them into preference pairs.

An instruction example reads `### Instruction: 23+8 ### Response: 31` followed by an
end-of-sequence token. Three kinds of instruction: adding a digit to a number below 100
(`23+8` -> `31`), sorting digits (`sort 3142` -> `1234`) and reversing a word (`reverse abcd` ->
`dcba`), small enough for a GPT of 100k parameters to learn in minutes on a CPU.

The demonstrations have a habit: like human demonstrators, who write "I hope this helps!" after
an answer, a fraction of them end with the sign-off " ok" (`with_sign_off`). A model fine-tuned
on them learns the task and the habit alike; what a labeller prefers is a separate signal, the
one the reward model, PPO and DPO learn from.

The judge stands in for the human labeller of InstructGPT (Ouyang et al., 2022): the exact
answer scores 1, the right answer followed by extra text (a sign-off) 0.5 ("shorter correct
over longer"), anything else less, by how many characters it gets right in place. Preference
pairs put the higher-scored response first.
"""
import dataclasses
import random
import string

from ..tokenizer import Tokenizer

INSTRUCTION = "### Instruction: "
RESPONSE = " ### Response: "
PAD, EOS = "<pad>", "<eos>"
KINDS = ("add", "sort", "reverse")
SIGN_OFF = " ok"  # the demonstrators' habit, our stand-in for "I hope this helps!"


class TaskTokenizer(Tokenizer):
    """Characters (digits, lowercase letters and a few symbols) plus four special tokens, each
    one id: <pad>, <eos> and the two markers of the instruction format, so that the format costs
    two positions instead of thirty characters.

    pad_id is 0; eos_id ends every response.
    """

    chars = string.digits + string.ascii_lowercase + " +-=>;,"

    def __init__(self):
        self.special_tokens = {PAD: 0, EOS: 1, INSTRUCTION: 2, RESPONSE: 3}
        self._specials = sorted(self.special_tokens, key=len, reverse=True)
        self._index = {c: i + len(self.special_tokens) for i, c in enumerate(self.chars)}
        self._strings = {i: s for s, i in {**self.special_tokens, **self._index}.items()}
        self.vocab_size = len(self._strings)
        self.pad_id, self.eos_id = self.special_tokens[PAD], self.special_tokens[EOS]

    def encode(self, text):
        ids, i = [], 0
        while i < len(text):
            special = next((s for s in self._specials if text.startswith(s, i)), None)
            if special is not None:
                ids.append(self.special_tokens[special])
                i += len(special)
                continue
            if text[i] not in self._index:
                raise ValueError(f"TaskTokenizer.encode: character {text[i]!r} is not in the "
                                 f"vocabulary {self.chars!r}")
            ids.append(self._index[text[i]])
            i += 1
        return ids

    def decode(self, ids):
        ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        bad = [i for i in ids if i not in self._strings]
        if bad:
            raise ValueError(f"TaskTokenizer.decode: ids {bad[:10]} are out of range for a "
                             f"vocabulary of {self.vocab_size}")
        return "".join(self._strings[i] for i in ids)

    def decode_response(self, ids):
        """The text of generated ids up to (not including) the first <eos> or <pad>."""
        ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        for stop in (self.eos_id, self.pad_id):
            if stop in ids:
                ids = ids[:ids.index(stop)]
        return self.decode(ids)


# --- instruction tasks --------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Task:
    kind: str  # one of KINDS
    instruction: str  # e.g. "23+45"
    answer: str  # e.g. "68"

    @property
    def prompt(self):
        """The instruction in the format, ending where the response begins."""
        return format_prompt(self.instruction)


def format_prompt(instruction):
    return f"{INSTRUCTION}{instruction}{RESPONSE}"


def make_task(kind, rng):
    """One random task of a kind, drawn with rng (a `random.Random`)."""
    if kind == "add":
        a, b = rng.randrange(100), rng.randrange(10)
        return Task(kind, f"{a}+{b}", str(a + b))
    if kind == "sort":
        digits = "".join(rng.choice(string.digits) for _ in range(rng.randint(3, 4)))
        return Task(kind, f"sort {digits}", "".join(sorted(digits)))
    if kind == "reverse":
        word = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 4)))
        return Task(kind, f"reverse {word}", word[::-1])
    raise ValueError(f"make_task: unknown kind {kind!r}; expected one of {KINDS}")


def with_sign_off(answers, rate, rng):
    """The demonstrators' responses: each answer, followed by SIGN_OFF with probability rate
    (drawn with rng, a `random.Random`)."""
    if not 0 <= rate <= 1:
        raise ValueError(f"with_sign_off: rate must be in [0, 1], got {rate}")
    return [a + SIGN_OFF if rng.random() < rate else a for a in answers]


def sample_tasks(n, seed, kinds=KINDS):
    """n tasks, kinds taken in turn, drawn from a generator seeded with seed (disjoint seeds give
    independent sets; a few tasks may repeat across sets by chance, as in any finite space)."""
    rng = random.Random(seed)
    return [make_task(kinds[i % len(kinds)], rng) for i in range(n)]


# --- the judge ------------------------------------------------------------------------------------
def judge(task, response):
    """A score in [0, 1]: 1 for the exact answer, 0.5 for the answer followed by anything more,
    otherwise 0.4 times the fraction of answer characters right in place (so a near miss beats
    nonsense, and every wrong answer stays below a correct one)."""
    if response == task.answer:
        return 1.0
    if response.startswith(task.answer):
        return 0.5
    right = sum(a == b for a, b in zip(response, task.answer))
    return 0.4 * right / max(len(response), len(task.answer))


def is_correct(task, response):
    return response == task.answer


@dataclasses.dataclass(frozen=True)
class PreferencePair:
    prompt: str
    chosen: str  # the response the judge scores higher
    rejected: str


def judged_pairs(task, responses):
    """Every pair of distinct responses to one task that the judge tells apart, the better one
    as `chosen`."""
    scored = sorted({(judge(task, r), r) for r in responses}, reverse=True)
    return [PreferencePair(task.prompt, better, worse)
            for i, (s_better, better) in enumerate(scored)
            for s_worse, worse in scored[i + 1:] if s_better > s_worse]


def corrupt(task, rng):
    """A plausible wrong or verbose response: one character changed, two swapped, one dropped,
    or the answer with extra characters after it (right but longer)."""
    answer, alphabet = task.answer, string.digits if task.kind != "reverse" else \
        string.ascii_lowercase
    how = rng.randrange(4)
    if how == 0:
        i = rng.randrange(len(answer))
        wrong = rng.choice([c for c in alphabet if c != answer[i]])
        return answer[:i] + wrong + answer[i + 1:]
    if how == 1 and len(set(answer)) > 1:
        i, j = sorted(rng.sample(range(len(answer)), 2))
        swapped = answer[:i] + answer[j] + answer[i + 1:j] + answer[i] + answer[j + 1:]
        if swapped != answer:
            return swapped
    if how == 2 and len(answer) > 1:
        i = rng.randrange(len(answer))
        return answer[:i] + answer[i + 1:]
    return answer + "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 3)))


def synthetic_pairs(tasks, seed):
    """One (correct, corrupted) preference pair per task."""
    rng = random.Random(seed)
    return [PreferencePair(t.prompt, t.answer, corrupt(t, rng)) for t in tasks]
