"""In-context learning: pre-train a small GPT on sequences of input -> output pairs, each
sequence drawn from one random letter function (copy, a shift, a permutation), then measure on
permutations it never saw how accuracy on a query grows with the number of examples in the
prompt: 0, 1, 2, 4, 8. No weight changes at test time: what the model learned is to read the
function off its context (find the earlier pair that starts with the query letter, copy it).
Each example is a query token `x>` and the pair token `x>y` (see models/rlhf/icl.py for why
the pair is one token):

    prompt with 4 shots:  "a> a>g c> c>b h> h>d a> a>g c>"   ->  the answer is "c>b"

With k random examples over 8 letters the query letter is among them with probability
p = 1 - (7/8)^k; a model that looks it up when it is there and otherwise guesses one of the 8
pairs of the query letter scores p + (1 - p) / 8: 12.5%, 23%, 33%, 49%, 70% for k = 0, 1, 2, 4,
8 (guessing among the letters not yet used does a little better). The untrained model scores
below that line, at 0%: it never answers with a pair at all (the output says why). Writes into
--out (out/icl): icl.png (accuracy against shots, with that curve), loss.png (the training
loss; both need matplotlib) and model.safetensors.

    python examples/in_context_learning.py            # 400 steps: under a minute on 2 cores
    python examples/in_context_learning.py --quick    # 120 steps: seconds
"""
import argparse
import dataclasses
import math
import os
import random
import time

from common import SMALL_MATRICES_NOTE, HelpFormatter, Progress, one_blas_thread, plot_curves

one_blas_thread()  # before NumPy loads; SMALL_MATRICES_NOTE in --help says why

import tensorgrad as tg  # noqa: E402
from tensorgrad import nn  # noqa: E402
from tensorgrad.models import GPT, GPTConfig  # noqa: E402
from tensorgrad.models.rlhf.icl import (  # noqa: E402
    ALPHABET, FunctionFamily, PairTokenizer, few_shot_accuracy, training_batch,
)

SHOTS = (0, 1, 2, 4, 8)


# --- configuration ------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, epilog=SMALL_MATRICES_NOTE,
                                formatter_class=HelpFormatter)
    p.add_argument("--quick", action="store_true", help="a shorter pre-training")
    p.add_argument("--steps", type=int, default=400, help="training steps")
    p.add_argument("--batch-size", type=int, default=32, help="examples per training step")
    p.add_argument("--n-pairs", type=int, default=12, help="examples per pre-training sequence")
    p.add_argument("--n-layer", type=int, default=1, help="one attention layer can do the lookup")
    p.add_argument("--n-head", type=int, default=2, help="attention heads per block")
    p.add_argument("--n-embd", type=int, default=64, help="model width (embedding size)")
    p.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (AdamW)")
    p.add_argument("--held-out", type=int, default=64, help="permutations kept out of training")
    p.add_argument("--queries", type=int, default=16, help="queries per held-out function")
    p.add_argument("--seed", type=int, default=0, help="random seed: weights, data order, sampling")
    p.add_argument("--out", default=os.path.join("out", "icl"),
                   help="folder for everything it writes")
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.queries = 120, 8
    return args


def main(argv=None):
    tg.backend.tune_process()  # opt-in: malloc and thread settings for speed (backend/process.py)
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    tg.manual_seed(args.seed)
    rng = random.Random(args.seed)
    tok = PairTokenizer()
    family = FunctionFamily(n_held_out=args.held_out, seed=args.seed + 1)
    config = GPTConfig.mini(vocab_size=tok.vocab_size, block_size=2 * args.n_pairs,
                            n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd,
                            d_ff=4 * args.n_embd)
    model = GPT(config)
    print(f"GPT: {model.num_parameters():,} parameters; sequences of {args.n_pairs} examples over "
          f"{len(ALPHABET)} letters; {len(family.held_out)} held-out permutations")

    def curve():
        model.eval()
        accs = [few_shot_accuracy(model, tok, family.held_out, k, args.queries, seed=args.seed)
                for k in SHOTS]
        model.train()
        return accs

    # --- pre-training ---------------------------------------------------------------------------
    optimizer = nn.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    schedule = nn.optim.lr_scheduler.WarmupCosineLR(optimizer, min(50, args.steps - 1),
                                                    args.steps, min_lr_ratio=0.1)
    before, echoed = curve(), echoes_the_query(model, tok)
    began = time.perf_counter()
    losses, progress = [], Progress(0, args.steps)
    for step in range(args.steps):
        x, y = training_batch(tok, family, args.batch_size, args.n_pairs, rng)
        _, loss = model(x, targets=y)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        progress.update(step + 1, loss=losses[-1])
    progress.close()
    elapsed = time.perf_counter() - began
    print(f"pre-training loss {losses[0]:.3f} -> {losses[-1]:.3f} (guessing one of the "
          f"{len(ALPHABET)} pairs of the query letter: {math.log(len(ALPHABET)):.3f})")
    path = os.path.join(args.out, "model.safetensors")
    nn.save({"model": model.state_dict(), "config": dataclasses.asdict(config)}, path)
    print(f"checkpoint: {path}")

    # --- results ----------------------------------------------------------------------------------
    after = curve()
    n = len(ALPHABET)
    seen = [1 - (1 - 1 / n) ** k for k in SHOTS]  # P(the query letter is among the examples)
    lookup = [p + (1 - p) / n for p in seen]  # look it up if there, else guess
    print(f"pre-trained {args.steps} steps in {elapsed:.0f} s\n"
          f"held-out functions, accuracy on the query after k examples:")
    print(f"{'shots':>6}{'untrained':>11}{'trained':>9}{'look up, else guess':>21}")
    for k, b, a, c in zip(SHOTS, before, after, lookup):
        print(f"{k:>6}{b:>11.1%}{a:>9.1%}{c:>21.1%}")
    print(f"untrained, below the guessing line: its answer to a bare query `x>` is `x>` itself "
          f"for {echoed:.0%} of the letters. The head is tied to the embedding and an untrained "
          f"block barely changes the residual stream, so the input token scores highest: it "
          f"never answers with a pair, while the line assumes a pair of the query letter "
          f"(1 in {n}), which only training teaches.")
    plot(after, lookup, os.path.join(args.out, "icl.png"))
    plot_curves(os.path.join(args.out, "loss.png"), "in-context learning: pre-training", "step",
                ("cross-entropy at the queries", {"training loss": (range(1, len(losses) + 1),
                                                                    losses)}))
    return {"shots": list(SHOTS), "accuracy": after, "untrained": before}


@tg.no_grad()
def echoes_the_query(model, tok):
    """The fraction of letters x for which the greedy answer to the bare query `x>` is `x>`."""
    ids = tg.tensor([tok.encode(f"{x}>") for x in ALPHABET], dtype=tg.int64)  # (8, 1)
    logits, _ = model(ids)
    return (logits[:, -1].argmax(-1) == ids[:, 0]).float().mean().item()


def plot(accuracy, chance, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no plot)")
        return
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(SHOTS, accuracy, marker="o", label="GPT, held-out permutations")
    ax.plot(SHOTS, chance, ls="--", color="gray", label="look up if shown, else guess")
    ax.set_xlabel("examples in the prompt")
    ax.set_ylabel("accuracy on the query")
    ax.set_xticks(SHOTS)
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
