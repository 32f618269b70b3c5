"""Supervised fine-tuning on instructions (InstructGPT's first stage, Ouyang et al., 2022): the
language-modelling loss on demonstration responses, with the prompt tokens masked out, so the
model learns to answer instructions and not to write them.
"""
import tensorgrad as tg

from ..generation import positions_from_mask
from .lm import encode_pairs, sample
from .tasks import SIGN_OFF, is_correct, with_sign_off

IGNORE = -100  # the target that cross_entropy leaves out (PyTorch's ignore_index)


def sft_targets(seqs):
    """Next-token targets (B, T) for `Sequences`: column t holds token t + 1 where that token is
    part of the response, IGNORE everywhere else (prompt, padding, the last column)."""
    nxt = seqs.input_ids[:, 1:]  # (B, T-1): the token each position predicts
    keep = seqs.response_mask[:, 1:] == 1
    targets = tg.where(keep, nxt, IGNORE)  # (B, T-1)
    last = tg.full((len(seqs), 1), IGNORE, dtype=tg.int64, device=seqs.input_ids.device)
    return tg.cat([targets, last], dim=1)  # (B, T)


def sft_loss(model, seqs):
    """Mean cross-entropy of a GPT over the response tokens of `Sequences` only."""
    _, loss = model(seqs.input_ids, targets=sft_targets(seqs), attention_mask=seqs.attention_mask,
                    position_ids=positions_from_mask(seqs.attention_mask))
    return loss


def demonstrations(tokenizer, tasks, device=None, sign_off=0.0, rng=None):
    """`Sequences` of each task's prompt followed by its correct answer; a fraction sign_off of
    the answers (drawn with rng, a `random.Random`) end with the demonstrators' SIGN_OFF."""
    answers = [t.answer for t in tasks]
    if sign_off:
        if rng is None:
            raise ValueError("demonstrations: sign_off needs rng (a random.Random)")
        answers = with_sign_off(answers, sign_off, rng)
    return encode_pairs(tokenizer, [t.prompt for t in tasks], answers, device=device)


def accuracy(model, tokenizer, tasks, max_new_tokens=8, batch_size=256):
    """The fraction of tasks whose greedy response is exactly right (no sign-off), and the
    responses (see `answer_stats` for what the wrong ones got wrong)."""
    responses = []
    for i in range(0, len(tasks), batch_size):
        chunk = tasks[i:i + batch_size]
        _, texts = sample(model, tokenizer, [t.prompt for t in chunk], max_new_tokens,
                          temperature=0)
        responses += texts
    right = sum(is_correct(t, r) for t, r in zip(tasks, responses))
    return right / len(tasks), responses


def answer_stats(tasks, responses):
    """What greedy responses did: the fraction exactly right, the fraction whose answer is right
    whatever follows it, and the fraction that end with the sign-off."""
    n = len(tasks)
    if n == 0 or len(responses) != n:
        raise ValueError(f"answer_stats: expected one response per task and at least one task, "
                         f"got {n} tasks and {len(responses)} responses")
    return {"exact": sum(is_correct(t, r) for t, r in zip(tasks, responses)) / n,
            "answer_right": sum(r.startswith(t.answer) for t, r in zip(tasks, responses)) / n,
            "sign_off": sum(r.endswith(SIGN_OFF) for r in responses) / n}
