"""The same small character-level GPT trained with five attention patterns at a 1024-character
context: dense, sliding window (+ global tokens), BigBird, strided and linear attention.

Each model starts from the same weights and sees the same batches for the same number of steps;
one table compares validation loss (nats per character), time per step and peak memory. The
corpus is the Python standard library's source (nothing to download, models/data.py). Writes
into --out (out/long_context): masks.png (which keys each query sees, per pattern), loss.png
(each model's training loss; both need matplotlib) and checkpoints/ (each model's state dict).

    python examples/long_context.py                 # 5 models x 60 steps: under a minute of CPU
    python examples/long_context.py --quick         # a smoke run (short context, few steps)
    python examples/long_context.py --masks-only --masks docs/attention_masks.png  # the docs'

A few dozen steps only separate the patterns roughly (noisy machine, little training): read
the losses as "does it learn at this context length", not as a ranking.
"""
import argparse
import os
import resource
import time

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.models import GPT, CharTokenizer, GPTConfig
from tensorgrad.models.data import python_stdlib_corpus, random_windows
from tensorgrad.nn.attention_patterns import BigBird, LinearAttention, SlidingWindow, Strided
from common import HelpFormatter, Progress, plot_curves


# --- configuration ------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("--context", type=int, default=1024, help="characters per window")
    p.add_argument("--steps", type=int, default=60, help="training steps, the same for all")
    p.add_argument("--batch-size", type=int, default=2, help="examples per training step")
    p.add_argument("--n-layer", type=int, default=2, help="transformer blocks")
    p.add_argument("--n-head", type=int, default=4, help="attention heads per block")
    p.add_argument("--n-embd", type=int, default=64, help="model width (embedding size)")
    p.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (AdamW)")
    p.add_argument("--eval-batches", type=int, default=4, help="batches per validation estimate")
    p.add_argument("--corpus-chars", type=int, default=1_000_000,
                   help="characters of standard-library text to read")
    p.add_argument("--seed", type=int, default=1337,
                   help="random seed: weights, data order, sampling")
    p.add_argument("--quick", action="store_true", help="context 128, 4 steps: checks it runs")
    p.add_argument("--out", default=os.path.join("out", "long_context"),
                   help="folder for everything it writes")
    p.add_argument("--masks", default=None,
                   help="where the mask picture goes (None: OUT/masks.png; '' for none)")
    p.add_argument("--masks-only", action="store_true",
                   help="draw the attention-mask picture and stop")
    args = p.parse_args(argv)
    if args.masks is None:
        args.masks = os.path.join(args.out, "masks.png")
    if args.quick:
        args.context, args.steps, args.eval_batches, args.corpus_chars = 128, 4, 1, 50_000
    return args


def patterns(context):
    """The attention choices, sized for the context (window and blocks ~ context / 8)."""
    unit = max(8, context // 16)
    return {"dense": "dense",
            "sliding window": SlidingWindow(2 * unit, global_tokens=4),
            "bigbird": BigBird(block_size=unit, random_blocks=2),
            "strided": Strided(unit),
            "linear": LinearAttention()}


# --- the mask pictures --------------------------------------------------------------------------
def draw_masks(path, length=256):
    """Each pattern's mask at a small length, bidirectional (top) and causal (bottom)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shown = {"sliding window\n(window 24, 4 global)": SlidingWindow(24, global_tokens=4),
             "BigBird (blocks of 16,\n1 global, 2 random)": BigBird(block_size=16,
                                                                    random_blocks=2),
             "strided (stride 16)": Strided(16),
             "strided (stride 16,\nreach 96)": Strided(16, reach=96),
             "linear (every key,\nkernel-weighted)": LinearAttention()}
    fig, axes = plt.subplots(2, len(shown), figsize=(2.6 * len(shown), 5.6))
    for col, (title, pattern) in enumerate(shown.items()):
        for row, causal in enumerate((False, True)):
            ax = axes[row, col]
            ax.imshow(pattern.mask(length, causal=causal).numpy(), cmap="Greys", vmin=0,
                      vmax=1, interpolation="nearest")  # black: attended
            ax.set_xticks([])
            ax.set_yticks([])
            if row == 0:
                ax.set_title(title, fontsize=9)
        axes[0, 0].set_ylabel("bidirectional: query")
        axes[1, 0].set_ylabel("causal: query")
    fig.suptitle(f"Which keys (columns) each query (rows) attends to, T = {length}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)


# --- memory: the peak of one model's run ---------------------------------------------------------
def reset_peak_rss():
    """Restart the resident-set high-water mark (Linux; elsewhere the peak stays cumulative)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_rss_mib():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- training one model -------------------------------------------------------------------------
def train(name, attention, args, vocab, train_ids, val_ids, weights, path):
    config = GPTConfig.mini(vocab_size=vocab, block_size=args.context, n_layer=args.n_layer,
                            n_head=args.n_head, n_embd=args.n_embd, d_ff=4 * args.n_embd,
                            attention=attention)
    model = GPT(config)
    model.load_state_dict(weights)  # the same start for every pattern
    optimizer = nn.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95),
                               weight_decay=0.1)
    reset_peak_rss()
    times, curve, progress = [], [], Progress(0, args.steps)
    for step in range(args.steps):
        tg.manual_seed(args.seed + step)  # the same batches for every pattern
        x, y = random_windows(train_ids, args.batch_size, args.context)
        tick = time.perf_counter()
        _, loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - tick)
        curve.append(loss.item())
        progress.update(step + 1, loss=curve[-1])
    progress.close()
    nn.save(model.state_dict(), path)
    model.eval()
    tg.manual_seed((args.seed - 1) % 2**32)  # the same validation windows for every pattern
    with tg.no_grad():
        losses = [model(*random_windows(val_ids, args.batch_size, args.context))[1].item()
                  for _ in range(args.eval_batches)]
    later = sorted(times[1:] or times)  # the first step also builds layouts and JIT kernels
    return {"val": sum(losses) / len(losses), "train": loss.item(), "curve": curve,
            "ms": 1e3 * later[len(later) // 2], "mib": peak_rss_mib()}


def main(argv=None):
    tg.backend.tune_process()  # opt-in: malloc and thread settings for speed (backend/process.py)
    args = parse_args(argv)
    if args.masks:
        os.makedirs(os.path.dirname(args.masks) or ".", exist_ok=True)
        draw_masks(args.masks)
        print(f"mask picture: {args.masks}")
    if args.masks_only:
        return None
    text = python_stdlib_corpus(args.corpus_chars)
    tokenizer = CharTokenizer.from_text(text)
    ids = tg.tensor(tokenizer.encode(text), dtype=tg.int64)
    split = int(len(ids) * 0.9)
    print(f"data: {len(text):,} characters of the Python standard library; context "
          f"{args.context}, {args.steps} steps of {args.batch_size} windows per model")
    tg.manual_seed(args.seed)
    base = GPT(GPTConfig.mini(vocab_size=tokenizer.vocab_size, block_size=args.context,
                              n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd,
                              d_ff=4 * args.n_embd))
    weights = base.state_dict()
    results = {}
    os.makedirs(os.path.join(args.out, "checkpoints"), exist_ok=True)
    for name, attention in patterns(args.context).items():
        path = os.path.join(args.out, "checkpoints", f"{name.replace(' ', '_')}.safetensors")
        results[name] = train(name, attention, args, tokenizer.vocab_size, ids[:split],
                              ids[split:], weights, path)
        r = results[name]
        print(f"  {name}: val_loss {r['val']:.3f}, {r['ms']:.0f} ms/step", flush=True)

    print(f"checkpoints: {os.path.join(args.out, 'checkpoints')} (one state dict per pattern)")
    print("\n| attention | pattern | val_loss | loss (last step) | ms/step | peak RSS (MiB) |")
    print("|---|---|---:|---:|---:|---:|")
    for name, attention in patterns(args.context).items():
        r = results[name]
        print(f"| {name} | {attention!r} | {r['val']:.3f} | {r['train']:.3f} | {r['ms']:.0f} "
              f"| {r['mib']:.0f} |")
    plot_curves(os.path.join(args.out, "loss.png"), f"five attention patterns, context "
                f"{args.context}", "step", ("training loss (nats per character)",
                {name: (range(1, len(r["curve"]) + 1), r["curve"]) for name, r in results.items()}))
    return results


if __name__ == "__main__":
    main()
