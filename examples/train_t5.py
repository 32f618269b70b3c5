"""Train a small T5 on several text-to-text tasks at once, each named by its prefix, after a
short span-corruption pre-training run on Python standard library source.

Text to text, as in T5: every task is a string in, a string out, and the prefix says which:
    "reverse: cabhe" -> "ehbac"      "sort: cabhe" -> "abceh"      "add: 47+8" -> "55"
One model, one vocabulary (characters: T5's <pad>, </s>, <unk>, the printable ASCII
characters, and sentinels <extra_id_i> at the end), one loss. Held-out examples (never seen in
training) are decoded with beam search and scored by exact match.

Stage 1 shows T5's pre-training objective (models/span_corruption.py) on stdlib text: 100
steps of predicting dropped spans from sentinels. Stage 2 trains the tasks. The default run
(205k parameters, 5,000 steps of 64) took 5 min 17 s on the shared 2-core machine (4 min of
CPU) and measured, on 200 held-out examples per task with 3 beams: reverse 100%, sort 100%,
add 96.0%, 98.7% overall (at 1,500 steps addition was still at 10%, at 3,000 at 82.5%); over
seeds 0, 1 and 2 (examples/results.py) the overall figure is 99.5-100%.
Writes into --out (out/t5): model/ (save_pretrained: config.json and the weights) and
loss.png (both stages' training loss; needs matplotlib).

    python examples/train_t5.py
    python examples/train_t5.py --quick   # 300 steps: the loss falls, exact match stays near 0
"""
import argparse
import os
import random
import string
import time

from common import SMALL_MATRICES_NOTE, HelpFormatter, Progress, one_blas_thread, plot_curves

one_blas_thread()  # before NumPy loads; SMALL_MATRICES_NOTE in --help says why

import tensorgrad as tg  # noqa: E402
from tensorgrad import nn  # noqa: E402
from tensorgrad.models import T5Config, T5ForConditionalGeneration  # noqa: E402
from tensorgrad.models.data import python_stdlib_corpus  # noqa: E402
from tensorgrad.models.span_corruption import SpanCorruption  # noqa: E402


# --- configuration ------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, epilog=SMALL_MATRICES_NOTE,
                                formatter_class=HelpFormatter)
    p.add_argument("--d-model", type=int, default=64, help="model width")
    p.add_argument("--heads", type=int, default=4, help="attention heads per block")
    p.add_argument("--layers", type=int, default=2, help="in each of encoder and decoder")
    p.add_argument("--d-ff", type=int, default=192, help="feed-forward inner width")
    p.add_argument("--pretrain-steps", type=int, default=100, help="span corruption on stdlib")
    p.add_argument("--steps", type=int, default=5000, help="multi-task training steps")
    p.add_argument("--batch-size", type=int, default=64, help="examples per training step")
    p.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (AdamW)")
    p.add_argument("--max-len", type=int, default=6, help="longest string to reverse or sort")
    p.add_argument("--held-out", type=int, default=200, help="test examples per task")
    p.add_argument("--num-beams", type=int, default=3, help="beams in beam search")
    p.add_argument("--seed", type=int, default=0, help="random seed: weights, data order, sampling")
    p.add_argument("--out", default=os.path.join("out", "t5"),
                   help="folder for everything it writes")
    p.add_argument("--quick", action="store_true",
                   help="20 + 300 steps of 32: the loss falls; exact match needs thousands")
    args = p.parse_args(argv)
    if args.quick:
        args.pretrain_steps, args.steps, args.held_out, args.batch_size = 20, 300, 20, 32
    return args


# --- a character vocabulary in T5's layout --------------------------------------------------------
SPECIAL = ["<pad>", "</s>", "<unk>"]
CHARS = string.printable[:95]  # digits, letters, punctuation, space
NUM_SENTINELS = 16
VOCAB_SIZE = len(SPECIAL) + len(CHARS) + NUM_SENTINELS  # <extra_id_i> = VOCAB_SIZE - 1 - i
PAD, EOS, UNK = 0, 1, 2
_INDEX = {c: i + len(SPECIAL) for i, c in enumerate(CHARS)}


def encode(text):
    return [_INDEX.get(c, UNK) for c in text]


def decode(ids):
    out = []
    for i in ids:
        if i == EOS:
            break
        if len(SPECIAL) <= i < len(SPECIAL) + len(CHARS):
            out.append(CHARS[i - len(SPECIAL)])
        elif i >= len(SPECIAL) + len(CHARS):
            out.append(f"<extra_id_{VOCAB_SIZE - 1 - i}>")
    return "".join(out)


# --- the tasks ----------------------------------------------------------------------------------
def make_example(task, rng, max_len):
    if task == "add":
        a, b = rng.randrange(100), rng.randrange(100)
        return f"add: {a}+{b}", str(a + b)
    word = "".join(rng.choice("abcdefgh") for _ in range(rng.randint(3, max_len)))
    return f"{task}: {word}", word[::-1] if task == "reverse" else "".join(sorted(word))


TASKS = ("reverse", "sort", "add")


def held_out_set(args):
    rng = random.Random(args.seed + 1)
    test = {task: set() for task in TASKS}
    for task in TASKS:
        while len(test[task]) < args.held_out:
            test[task].add(make_example(task, rng, args.max_len))
    return {task: sorted(pairs) for task, pairs in test.items()}


def batch(pairs):
    """(input_ids, attention_mask, labels) for (source, target) strings, padded; the labels
    end with </s> and are -100 past it."""
    sources = [encode(s) + [EOS] for s, _ in pairs]
    targets = [encode(t) + [EOS] for _, t in pairs]
    S, T = max(map(len, sources)), max(map(len, targets))
    ids = tg.tensor([s + [PAD] * (S - len(s)) for s in sources])
    mask = tg.tensor([[1] * len(s) + [0] * (S - len(s)) for s in sources])
    labels = tg.tensor([t + [-100] * (T - len(t)) for t in targets])
    return ids, mask, labels


def train(model, optimizer, next_batch, steps, label, schedule=None):
    """The training loss of every step."""
    model.train()
    start, losses = time.time(), []
    progress = Progress(0, steps)
    for step in range(1, steps + 1):
        ids, mask, labels = next_batch()
        loss = model(ids, mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if schedule is not None:
            schedule.step()
        losses.append(loss.item())
        progress.update(step, loss=losses[-1])
    progress.close()
    print(f"{label}: {steps} steps in {time.time() - start:.1f} s, loss {losses[0]:.3f} -> "
          f"{sum(losses[-10:]) / len(losses[-10:]):.3f} (mean of the last 10)")
    return losses


def exact_match(model, pairs, num_beams):
    hits = 0
    for i in range(0, len(pairs), 100):
        chunk = pairs[i:i + 100]
        ids, mask, _ = batch(chunk)
        out = model.generate(ids, 12, attention_mask=mask, num_beams=num_beams)
        hits += sum(decode(row[1:]) == target for row, (_, target) in zip(out.tolist(), chunk))
    return hits / len(pairs)


def main(argv=None):
    tg.backend.tune_process()  # opt-in: malloc and thread settings for speed (backend/process.py)
    args = parse_args(argv)
    tg.manual_seed(args.seed)
    rng = random.Random(args.seed)
    config = T5Config(vocab_size=VOCAB_SIZE, d_model=args.d_model, d_kv=args.d_model // args.heads,
                      d_ff=args.d_ff, num_layers=args.layers, num_heads=args.heads,
                      relative_attention_num_buckets=16, relative_attention_max_distance=32,
                      dropout_rate=0.0)
    model = T5ForConditionalGeneration(config)
    print(f"T5 with {model.num_parameters():,} parameters, vocabulary {VOCAB_SIZE}")
    optimizer = nn.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)

    # --- stage 1: span corruption on stdlib text ---------------------------------------------
    text = python_stdlib_corpus(300_000)
    corrupter = SpanCorruption(VOCAB_SIZE, seed=args.seed)
    example = corrupter(encode(text[1000:1060]))
    print("span corruption, inputs: ", repr(decode(example[0])))
    print("                 targets:", repr(decode(example[1])))

    def corrupted_batch():
        pairs = []
        for _ in range(args.batch_size):
            start = rng.randrange(len(text) - 64)
            inputs, targets = corrupter(encode(text[start:start + 64]))
            pairs.append((inputs, targets))
        S, T = max(len(s) for s, _ in pairs), max(len(t) for _, t in pairs)
        return (tg.tensor([s + [PAD] * (S - len(s)) for s, _ in pairs]),
                tg.tensor([[1] * len(s) + [0] * (S - len(s)) for s, _ in pairs]),
                tg.tensor([t + [-100] * (T - len(t)) for _, t in pairs]))

    pretrain_losses = train(model, optimizer, corrupted_batch, args.pretrain_steps, "pre-train")

    # --- stage 2: the tasks, mixed in every batch --------------------------------------------
    test = held_out_set(args)
    unseen = {pair for pairs in test.values() for pair in pairs}

    def task_batch():
        pairs = []
        while len(pairs) < args.batch_size:
            pair = make_example(rng.choice(TASKS), rng, args.max_len)
            if pair not in unseen:
                pairs.append(pair)
        return batch(pairs)

    schedule = nn.optim.lr_scheduler.WarmupCosineLR(optimizer, min(50, args.steps - 1),
                                                    args.steps, min_lr_ratio=0.05)
    task_losses = train(model, optimizer, task_batch, args.steps, "tasks", schedule)
    os.makedirs(args.out, exist_ok=True)
    model.save_pretrained(os.path.join(args.out, "model"))
    print(f"checkpoint: {os.path.join(args.out, 'model')}")
    n = len(pretrain_losses)
    plot_curves(os.path.join(args.out, "loss.png"), "T5: span corruption, then the tasks", "step",
                ("cross-entropy (nats per token)",
                 {"span corruption": (range(1, n + 1), pretrain_losses),
                  "tasks": (range(n + 1, n + len(task_losses) + 1), task_losses)}))

    model.eval()
    print(f"held-out exact match, beam search with {args.num_beams} beams:")
    scores = {}
    for task in TASKS:
        scores[task] = exact_match(model, test[task], args.num_beams)
        print(f"  {task:8s} {scores[task]:7.1%}  ({len(test[task])} examples)")
    overall = sum(scores.values()) / len(scores)
    print(f"  {'all':8s} {overall:7.1%}")
    for source, _ in [test[t][0] for t in TASKS]:
        out = model.generate(batch([(source, "")])[0], 12, num_beams=args.num_beams)
        print(f"  {source!r} -> {decode(out[0, 1:].tolist())!r}")
    if args.quick:
        print(f"--quick: {args.steps} steps of {args.batch_size} teach the format and start on "
              f"the easiest task; exact match needs every character right, which the default "
              f"run ({parse_args([]).steps:,} steps of 64) reaches. What this run shows is the "
              f"loss falling.")
    return scores


if __name__ == "__main__":
    main()
