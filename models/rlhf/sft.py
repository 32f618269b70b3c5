"""Supervised fine-tuning on instructions (InstructGPT's first stage, Ouyang et al., 2022): the
language-modelling loss on demonstration responses, with the prompt tokens masked out, so the
model learns to answer instructions and not to write them.
"""
import tensorgrad as tg

from ..generation import positions_from_mask
from .lm import encode_pairs, sample
from .tasks import is_correct

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


def demonstrations(tokenizer, tasks, device=None):
    """`Sequences` of each task's prompt followed by its correct answer."""
    return encode_pairs(tokenizer, [t.prompt for t in tasks], [t.answer for t in tasks],
                        device=device)


def accuracy(model, tokenizer, tasks, max_new_tokens=8, batch_size=256):
    """The fraction of tasks whose greedy response is exactly right, and the responses."""
    responses = []
    for i in range(0, len(tasks), batch_size):
        chunk = tasks[i:i + batch_size]
        _, texts = sample(model, tokenizer, [t.prompt for t in chunk], max_new_tokens,
                          temperature=0)
        responses += texts
    right = sum(is_correct(t, r) for t, r in zip(tasks, responses))
    return right / len(tasks), responses
