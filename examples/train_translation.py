"""Train the original Transformer (Vaswani et al., 2017) on a synthetic translation task:
numbers written in digits -> the same numbers in English words.

    "4 7 2 1"  ->  "four thousand seven hundred twenty one"

Source and target share one vocabulary and one embedding matrix (also the output projection),
as in the paper; the loss is label-smoothed (0.1) and the learning rate follows the Noam
schedule (nn.optim.lr_scheduler.NoamLR) under Adam(0.9, 0.98, 1e-9). Held-out numbers (never
seen in training) are decoded with beam search and scored by exact match and corpus BLEU
(Papineni et al., 2002: 4-gram precisions, brevity penalty). The cross-attention of the last
decoder block for one sentence is drawn into --out/cross_attention.png and printed as text:
each English word looks at the digit it spells. Also written into --out (out/translation):
loss.png (the training loss; the pictures need matplotlib) and model.safetensors.

    python examples/train_translation.py            # a few minutes on a 2-core CPU
    python examples/train_translation.py --quick    # 200 steps: the loss falls, little is exact
"""
import argparse
import dataclasses
import math
import os
import random
import time
from collections import Counter

from common import SMALL_MATRICES_NOTE, HelpFormatter, Progress, one_blas_thread, plot_curves

one_blas_thread()  # before NumPy loads; SMALL_MATRICES_NOTE in --help says why

import tensorgrad as tg  # noqa: E402
from tensorgrad import nn  # noqa: E402
from tensorgrad.models import Seq2SeqTransformer, TransformerConfig  # noqa: E402
from tensorgrad.nn.masks import padding_mask_from_attention_mask  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, epilog=SMALL_MATRICES_NOTE,
                                formatter_class=HelpFormatter)
    p.add_argument("--d-model", type=int, default=64, help="model width")
    p.add_argument("--heads", type=int, default=4, help="attention heads per block")
    p.add_argument("--layers", type=int, default=2, help="in each of encoder and decoder")
    p.add_argument("--d-ff", type=int, default=256, help="feed-forward inner width")
    p.add_argument("--dropout", type=float, default=0.1, help="dropout probability")
    p.add_argument("--steps", type=int, default=1200, help="training steps")
    p.add_argument("--batch-size", type=int, default=64, help="examples per training step")
    p.add_argument("--warmup", type=int, default=200, help="Noam warm-up steps")
    p.add_argument("--lr-factor", type=float, default=1.0, help="the optimizer's lr: the Noam "
                   "schedule's scale (peak d_model^-0.5 warmup^-0.5 times this)")
    p.add_argument("--held-out", type=int, default=300,
                   help="numbers kept out of training for the test")
    p.add_argument("--num-beams", type=int, default=4, help="beams in beam search")
    p.add_argument("--out", default="out/translation", help="folder for everything it writes")
    p.add_argument("--seed", type=int, default=0, help="random seed: weights, data order, sampling")
    p.add_argument("--quick", action="store_true",
                   help="200 steps of 32: the loss falls; exact translations need the full run")
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.held_out, args.batch_size, args.warmup = 200, 50, 32, 50
    return args


# --- data: numbers below 10,000 in digits and in words -----------------------------------------
ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen " \
       "fifteen sixteen seventeen eighteen nineteen".split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def in_words(n):
    words = []
    if n >= 1000:
        words += [ONES[n // 1000], "thousand"]
        n %= 1000
    if n >= 100:
        words += [ONES[n // 100], "hundred"]
        n %= 100
    if n >= 20:
        words.append(TENS[n // 10])
        n %= 10
        if n:
            words.append(ONES[n])
    elif n or not words:
        words.append(ONES[n])
    return words


SPECIAL = ["<pad>", "<s>", "</s>"]
VOCAB = SPECIAL + list("0123456789") + sorted(set(ONES + TENS[2:] + ["hundred", "thousand"]))
ID = {w: i for i, w in enumerate(VOCAB)}
PAD, BOS, EOS = 0, 1, 2


def pair(n):
    return [ID[d] for d in str(n)] + [EOS], [ID[w] for w in in_words(n)] + [EOS]


def batch(numbers):
    sources, targets = zip(*(pair(n) for n in numbers))
    S, T = max(map(len, sources)), max(map(len, targets))
    return (tg.tensor([s + [PAD] * (S - len(s)) for s in sources]),
            tg.tensor([[1] * len(s) + [0] * (S - len(s)) for s in sources]),
            tg.tensor([t + [-100] * (T - len(t)) for t in targets]))


def words_of(ids):
    out = []
    for i in ids[1:]:  # after <s>
        if i == EOS:
            break
        out.append(VOCAB[i])
    return out


# --- BLEU ---------------------------------------------------------------------------------------
def corpus_bleu(hypotheses, references, max_n=4):
    """Corpus BLEU in [0, 1] for token lists, one reference each: the geometric mean of the
    clipped n-gram precisions (n = 1..4, counts summed over the corpus) times the brevity
    penalty exp(1 - r / c) when the hypotheses are shorter than the references."""
    matches, totals = [0] * max_n, [0] * max_n
    hyp_len = ref_len = 0
    for hyp, ref in zip(hypotheses, references):
        hyp_len, ref_len = hyp_len + len(hyp), ref_len + len(ref)
        for n in range(1, max_n + 1):
            h = Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
            r = Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
            matches[n - 1] += sum(min(c, r[g]) for g, c in h.items())
            totals[n - 1] += max(len(hyp) - n + 1, 0)
    if min(matches) == 0:
        return 0.0
    log_precision = sum(math.log(m / t) for m, t in zip(matches, totals)) / max_n
    brevity = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / max(hyp_len, 1))
    return brevity * math.exp(log_precision)


# --- looking at cross-attention -------------------------------------------------------------------
@tg.no_grad()
def cross_attention(model, number):
    """The last decoder block's cross-attention (target words x source digits), averaged over
    heads, for the model's own translation of `number`."""
    src, mask, _ = batch([number])
    out = model.generate(src, 12, attention_mask=mask)
    memory = model.encode(src, mask)
    dec = out[:, :-1] if out[0, -1].item() == EOS else out
    x = model._embed(dec)
    for block in model.decoder[:-1]:
        x = block(x, memory)
    last = model.decoder[-1]
    x = last.attn_norm(x + last.self_attn(x, is_causal=True))  # post-LN: the cross-attn query
    weights = last.cross_attn.attention_weights(
        x, memory, key_padding_mask=padding_mask_from_attention_mask(mask))  # (1, H, T, S)
    return words_of(out[0].tolist()), weights.mean(1)[0].numpy()  # (T, S)


def show_attention(words, digits, weights, path):
    """Row i is the decoder step that outputs word i (its query is the word before)."""
    print("cross-attention (rows: the word being output, columns: source digits):")
    print(" " * 10 + "".join(f"{d:>6}" for d in digits + ["</s>"]))
    for word, row in zip(words + ["</s>"], weights):
        print(f"{word:>10}" + "".join(f"{w:6.2f}" for w in row))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(4, 4))
    ax.imshow(weights, cmap="viridis")
    ax.set_xticks(range(len(digits) + 1), digits + ["</s>"])
    ax.set_yticks(range(len(words) + 1), words + ["</s>"])
    ax.set_xlabel("source digits")
    ax.set_ylabel("output word")
    ax.set_title("cross-attention, last decoder block")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def main(argv=None):
    tg.backend.tune_process()  # opt-in: malloc and thread settings for speed (backend/process.py)
    args = parse_args(argv)
    tg.manual_seed(args.seed)
    rng = random.Random(args.seed)
    held_out = sorted(random.Random(args.seed + 1).sample(range(10000), args.held_out))
    unseen = set(held_out)
    config = TransformerConfig(vocab_size=len(VOCAB), d_model=args.d_model, num_heads=args.heads,
                               d_ff=args.d_ff, num_encoder_layers=args.layers,
                               num_decoder_layers=args.layers, dropout=args.dropout, max_len=32,
                               pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS)
    model = Seq2SeqTransformer(config)
    print(f"Transformer with {model.num_parameters():,} parameters, vocabulary {len(VOCAB)}")
    optimizer = nn.optim.Adam(model.parameters(), lr=args.lr_factor, betas=(0.9, 0.98), eps=1e-9)
    schedule = nn.optim.lr_scheduler.NoamLR(optimizer, args.d_model, args.warmup)

    start, losses, progress = time.time(), [], Progress(0, args.steps)
    for step in range(1, args.steps + 1):
        numbers = []
        while len(numbers) < args.batch_size:
            n = rng.randrange(10000) if rng.random() < 0.8 else rng.randrange(100)
            if n not in unseen:
                numbers.append(n)
        src, mask, labels = batch(numbers)
        _, loss = model(src, mask, labels=labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        progress.update(step, loss=losses[-1])
    progress.close()
    print(f"trained {args.steps} steps in {time.time() - start:.1f} s: loss {losses[0]:.3f} -> "
          f"{sum(losses[-10:]) / len(losses[-10:]):.3f} (mean of the last 10)")
    os.makedirs(args.out, exist_ok=True)
    nn.save({"model": model.state_dict(), "config": dataclasses.asdict(config)},
            os.path.join(args.out, "model.safetensors"))
    plot_curves(os.path.join(args.out, "loss.png"), "numbers to words", "step",
                ("label-smoothed cross-entropy", {"training loss": (range(1, len(losses) + 1),
                                                                    losses)}))

    model.eval()
    hypotheses, references = [], []
    for i in range(0, len(held_out), 100):
        chunk = held_out[i:i + 100]
        src, mask, _ = batch(chunk)
        out = model.generate(src, 12, attention_mask=mask, num_beams=args.num_beams,
                             length_penalty=0.6)
        hypotheses += [words_of(row) for row in out.tolist()]
        references += [in_words(n) for n in chunk]
    exact = sum(h == r for h, r in zip(hypotheses, references)) / len(held_out)
    bleu = corpus_bleu(hypotheses, references)
    print(f"held-out ({len(held_out)} numbers, beam {args.num_beams}): exact match {exact:.1%}, "
          f"BLEU {100 * bleu:.1f}")
    for n, h in list(zip(held_out, hypotheses))[:3]:
        print(f"  {n} -> {' '.join(h)}")
    if args.quick:
        print(f"--quick: {args.steps} steps teach the shape of a number in words (hence some "
              f"BLEU), not yet which number, so exact match stays near 0; the default run "
              f"({parse_args([]).steps:,} steps of 64) translates them")
    number = held_out[len(held_out) // 2]
    words, weights = cross_attention(model, number)
    show_attention(words, list(str(number)), weights, os.path.join(args.out,
                                                                  "cross_attention.png"))
    return exact, bleu


if __name__ == "__main__":
    main()
