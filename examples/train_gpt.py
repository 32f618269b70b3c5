"""Train a character-level GPT on Python source code, then sample from it.

The default corpus needs no download: about 2.5 MB of the Python standard library's own
modules, read from the interpreter that runs this script. `--data FILE` trains on any text file.
The default run (GPT-mini with a 64-character context, 1500 steps of 16 windows) takes 2-3
minutes on a 2-core CPU, reaches a validation loss of 1.46-1.50 nats per character (seeds 0-2,
examples/results.py), and writes into --out (out/gpt):
  ckpt.safetensors   model, optimizer, schedule and step (nn.save); --resume continues exactly
  tokenizer.json     the character vocabulary
  loss.png           training and validation loss (needs matplotlib)
  samples.txt        text generated at the end

    python examples/train_gpt.py                        # the default run
    python examples/train_gpt.py --resume               # continue an interrupted run exactly
    python examples/train_gpt.py --data input.txt --device cuda
    mpiexec -n 2 python examples/train_gpt.py --ddp     # data-parallel over 2 processes

With --ddp, every process started by mpiexec holds a replica (DistributedDataParallel) and
trains on its share of the same global batch of --batch-size windows, so the run follows the
single-process one (the same loss curve, to rounding); only rank 0 logs, evaluates, samples
and writes, and every rank can --resume from what it wrote. Dropout masks are drawn per rank,
so with --dropout > 0 the curves differ by that.
"""
import argparse
import dataclasses
import os
import sys
import time

import tensorgrad as tg
import tensorgrad.distributed as dist  # starts MPI only at dist.init() (--ddp)
from tensorgrad import nn
from tensorgrad.models import GPT, CharTokenizer, GPTConfig, load_tokenizer
from tensorgrad.models.data import python_stdlib_corpus, random_windows
from common import HelpFormatter, Progress, plot_curves


# --- configuration ------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("--data", help="a UTF-8 text file (None: Python standard library source)")
    p.add_argument("--corpus-chars", type=int, default=2_500_000,
                   help="characters of standard library source in the default corpus")
    p.add_argument("--val-fraction", type=float, default=0.1, help="held-out tail of the text")
    # model: GPT-mini (GPTConfig.mini) over characters
    p.add_argument("--n-layer", type=int, default=4, help="transformer blocks")
    p.add_argument("--n-head", type=int, default=4, help="attention heads per block")
    p.add_argument("--n-embd", type=int, default=128, help="model width (embedding size)")
    p.add_argument("--block-size", type=int, default=64, help="context length in characters")
    p.add_argument("--dropout", type=float, default=0.0, help="a few minutes of training do "
                   "not overfit 2 MB of text")
    # optimisation: AdamW, linear warmup then cosine decay (GPT-style)
    p.add_argument("--steps", type=int, default=1500, help="training steps")
    p.add_argument("--batch-size", type=int, default=16, help="examples per training step")
    p.add_argument("--lr", type=float, default=3e-3, help="peak; small models take large rates")
    p.add_argument("--min-lr-ratio", type=float, default=0.1,
                   help="the cosine schedule ends at lr times this")
    p.add_argument("--warmup", type=int, default=50, help="learning-rate warm-up steps")
    p.add_argument("--weight-decay", type=float, default=0.1, help="AdamW's decoupled weight decay")
    p.add_argument("--grad-clip", type=float, default=1.0,
                   help="largest gradient norm (clipped above)")
    # evaluation, checkpoints, sampling
    p.add_argument("--eval-every", type=int, default=100, help="steps between evaluations")
    p.add_argument("--eval-batches", type=int, default=8, help="batches per validation estimate")
    p.add_argument("--ckpt-every", type=int, default=500, help="steps between checkpoints")
    p.add_argument("--samples", type=int, default=2, help="samples generated at the end")
    p.add_argument("--sample-chars", type=int, default=400, help="characters per sample")
    p.add_argument("--prompt", default="def ", help="what the samples start from")
    p.add_argument("--temperature", type=float, default=0.8, help="sampling temperature")
    p.add_argument("--top-k", type=int, default=None,
                   help="sample among the k likeliest tokens (None: all)")
    p.add_argument("--seed", type=int, default=1337,
                   help="random seed: weights, data order, sampling")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--out", default=os.path.join("out", "gpt"),
                   help="folder for everything it writes")
    p.add_argument("--resume", action="store_true", help="continue from OUT/ckpt.safetensors")
    p.add_argument("--ddp", action="store_true", help="data-parallel over the processes of "
                   "mpiexec -n N (tensorgrad.distributed); each takes batch-size / N windows")
    p.add_argument("--quick", action="store_true", help="a 2-block model, 100 steps on 300k "
                   "characters: checks that the loss falls; the samples are not Python yet")
    args = p.parse_args(argv)
    if args.quick:
        vars(args).update(n_layer=2, n_embd=64, steps=100, warmup=10, eval_every=50,
                          eval_batches=2, ckpt_every=100, corpus_chars=300_000, samples=1,
                          sample_chars=120)
    return args


def main(argv=None):
    tg.backend.tune_process()  # opt-in: malloc and thread settings for speed (backend/process.py)
    args = parse_args(argv)
    rank, world = start_processes(args)
    lead = rank == 0  # the one process that logs, evaluates, samples and writes files
    log = print if lead else (lambda *_, **__: None)
    os.makedirs(args.out, exist_ok=True)
    ckpt_path = os.path.join(args.out, "ckpt.safetensors")
    tok_path = os.path.join(args.out, "tokenizer.json")
    resuming = args.resume and os.path.exists(ckpt_path)
    if args.resume and not resuming:
        log(f"--resume: no checkpoint at {ckpt_path}; starting afresh")
    tg.manual_seed(args.seed)

    # --- data -------------------------------------------------------------------------------
    if args.data:
        with open(args.data, encoding="utf-8") as f:
            text = f.read()
        source = args.data
    else:
        text = python_stdlib_corpus(args.corpus_chars)
        source = "the Python standard library"
    tokenizer = load_tokenizer(tok_path) if resuming else CharTokenizer.from_text(text)
    if lead and not resuming:  # a resumed run's other ranks are reading it
        tokenizer.save(tok_path)
    ids = tg.tensor(tokenizer.encode(text), dtype=tg.int64, device=args.device)
    split = int(len(ids) * (1 - args.val_fraction))
    train_ids, val_ids = ids[:split], ids[split:]
    log(f"data: {len(text):,} characters of {source}, vocabulary of {tokenizer.vocab_size}; "
        f"{len(train_ids):,} for training, {len(val_ids):,} for validation")

    # --- model, optimizer, schedule -------------------------------------------------------------
    saved = nn.load(ckpt_path, device=args.device) if resuming else None
    if saved is not None:
        config = GPTConfig(**saved["config"])
    else:
        config = GPTConfig.mini(vocab_size=tokenizer.vocab_size, block_size=args.block_size,
                                n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd,
                                d_ff=4 * args.n_embd, dropout=args.dropout)
    model = GPT(config, device=args.device)
    log(model.summary())
    # Weight decay on the matrices (embeddings included), not on biases and LayerNorm gains,
    # as GPT-2 and nanoGPT do.
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    optimizer = nn.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                                {"params": no_decay, "weight_decay": 0.0}],
                               lr=args.lr, betas=(0.9, 0.95))
    warmup = min(args.warmup, args.steps - 1)
    schedule = nn.optim.lr_scheduler.WarmupCosineLR(optimizer, warmup, args.steps,
                                                    min_lr_ratio=args.min_lr_ratio)
    start, history = 0, {"train": [], "val": []}
    if saved is not None:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optim"])
        schedule.load_state_dict(saved["schedule"])
        start, history = saved["step"], saved["history"]
        log(f"resumed from {ckpt_path} at step {start}")
    # With --ddp, the replica that trains: it starts from rank 0's weights and averages the
    # gradients over the ranks in backward. Evaluation and sampling use the model itself.
    replica = nn.parallel.DistributedDataParallel(model) if args.ddp else model

    @tg.no_grad()
    def val_loss():
        model.eval()
        tg.manual_seed((args.seed - 1) % 2**32)  # the same validation windows every time
        losses = [model(*random_windows(val_ids, args.batch_size, config.block_size))[1].item()
                  for _ in range(args.eval_batches)]
        model.train()
        return sum(losses) / len(losses)

    # --- training loop --------------------------------------------------------------------------
    tokens_per_step = args.batch_size * config.block_size
    progress = Progress(start, args.steps, quiet=not lead)
    began = time.perf_counter()
    model.train()
    for step in range(start, args.steps):
        # Batches and dropout are drawn from a generator seeded by the step number, so a
        # resumed run sees exactly what an uninterrupted one would have.
        tg.manual_seed(args.seed + step)
        tick = time.perf_counter()
        x, y = random_windows(train_ids, args.batch_size, config.block_size)
        if world > 1:
            x, y = shard(x, rank, world), shard(y, rank, world)
        _, loss = replica(x, targets=y)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        optimizer.step()
        schedule.step()
        history["train"].append(global_mean(loss) if args.ddp else loss.item())
        done = step + 1
        if lead and (done % args.eval_every == 0 or done == args.steps):
            history["val"].append([done, val_loss()])
        progress.update(done, loss=history["train"][-1],
                        val_loss=history["val"][-1][1] if history["val"] else None,
                        **{"tok/s": tokens_per_step / (time.perf_counter() - tick)})
        if lead and (done % args.ckpt_every == 0 or done == args.steps):
            save_checkpoint(ckpt_path, model, optimizer, schedule, done, history)
    progress.close()
    elapsed = time.perf_counter() - began
    if not lead:
        return model, history

    # --- results ----------------------------------------------------------------------------------
    if history["val"]:
        print(f"step {history['val'][-1][0]}: validation loss {history['val'][-1][1]:.3f} "
              f"({elapsed:.0f} s this run)")
    plot_losses(history, os.path.join(args.out, "loss.png"))
    samples = []
    if args.samples:
        prompt = tg.tensor([tokenizer.encode(args.prompt)] * args.samples, device=args.device)
        out = model.generate(prompt, args.sample_chars, temperature=args.temperature,
                             top_k=args.top_k, seed=args.seed)
        samples = [tokenizer.decode(row) for row in out.tolist()]
        with open(os.path.join(args.out, "samples.txt"), "w", encoding="utf-8") as f:
            f.write("\n\n----------\n\n".join(samples))
    for i, sample in enumerate(samples):
        print(f"--- sample {i + 1} " + "-" * 60 + f"\n{sample}")
    return model, history


def start_processes(args):
    """(rank, world size): with --ddp, this process's place among mpiexec's; else (0, 1)."""
    if not args.ddp:
        return 0, 1
    dist.init()
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch_size % world:
        raise SystemExit(f"--ddp: --batch-size {args.batch_size} does not split evenly over "
                         f"{world} processes")
    return rank, world


def shard(batch, rank, world):
    """This rank's rows of the global batch: equal shares, so that the mean of the ranks'
    mean losses (what DDP's averaged gradient differentiates) is the global batch's mean."""
    rows = batch.shape[0] // world
    return batch[rank * rows:(rank + 1) * rows]


def global_mean(loss):
    """The loss over the whole global batch: the mean of every rank's."""
    total = loss.detach().clone()
    dist.all_reduce(total, op=dist.ReduceOp.AVG)
    return total.item()


def load_checkpoint(out, device="cpu"):
    """The model (in eval mode) and tokenizer that a run wrote into the folder `out`."""
    saved = nn.load(os.path.join(out, "ckpt.safetensors"), device=device)
    model = GPT(GPTConfig(**saved["config"]), device=device)
    model.load_state_dict(saved["model"])
    return model.eval(), load_tokenizer(os.path.join(out, "tokenizer.json"))


def save_checkpoint(path, model, optimizer, schedule, step, history):
    """Everything a resumed run needs, in one nn.save file (safetensors + JSON)."""
    nn.save({"model": model.state_dict(), "optim": optimizer.state_dict(),
             "schedule": schedule.state_dict(), "step": step, "history": history,
             "config": dataclasses.asdict(model.config)}, path)


# --- plots (matplotlib when installed) ---------------------------------------------------------
def plot_losses(history, path):
    """The training loss as a running mean over 2% of the run (one step's loss is noisy) and the
    validation loss at each evaluation."""
    train = history["train"]
    window = max(1, len(train) // 50)
    smooth = [sum(train[max(0, i - window + 1):i + 1]) / len(train[max(0, i - window + 1):i + 1])
              for i in range(len(train))]
    curves = {"loss (running mean)": (range(1, len(train) + 1), smooth)}
    if history["val"]:
        curves["val_loss"] = tuple(zip(*history["val"]))
    plot_curves(path, "GPT training", "step", ("cross-entropy (nats per character)", curves))


if __name__ == "__main__":
    main(sys.argv[1:])
