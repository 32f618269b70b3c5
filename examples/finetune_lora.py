"""Fine-tune a character GPT on new text: full fine-tuning against LoRA, at ranks 1, 4 and 16.

The base model is the one `make demo` trains on Python source (out/gpt; if it is not there, a
short one is trained first into OUT/base). The new text is English: the docstrings of the
standard-library modules that the base corpus leaves out (about 230,000 characters). Seven runs,
each in its own process so that its peak RSS is its own:
  full            every parameter trains
  attention r     LoRA on the attention projections (qkv_proj, out_proj; GPT-2's c_attn, c_proj)
  all-linear r    LoRA on every Linear (attention and feed-forward)
One table: trainable parameters, checkpoint size, peak RSS, ms per step, validation loss on the
new text and on the old one (what was forgotten). Writes OUT/lora_losses.png (the curves),
OUT/lora_results.json, and each LoRA run's adapter folder (peft's format) under OUT/adapters.

    python examples/finetune_lora.py            # the default run: a few minutes on 2 cores
    python examples/finetune_lora.py --quick    # seconds: a tiny base model, a few steps
"""
import argparse
import ast
import json
import os
import resource
import statistics
import subprocess
import sys
import sysconfig
import time

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.models import LoraConfig, get_peft_model
from tensorgrad.models.data import STDLIB_MODULES, python_stdlib_corpus, random_windows
from common import HelpFormatter, Progress

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = {"attention": ["qkv_proj", "out_proj"], "all-linear": "all-linear"}


# --- configuration ------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("--base", default=os.path.join("out", "gpt"),
                   help="a train_gpt.py output folder (ckpt.safetensors + tokenizer.json)")
    p.add_argument("--base-steps", type=int, default=400, help="training a base model when "
                   "--base has none")
    p.add_argument("--old-chars", type=int, default=2_500_000, help="the base corpus' length "
                   "(train_gpt.py --corpus-chars): its last 10%% is the old validation text")
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 4, 16], help="LoRA ranks to compare")
    p.add_argument("--lora-alpha", type=float, default=16.0, help="fixed across ranks, as in "
                   "Hu et al.: the update is scaled by alpha / r")
    p.add_argument("--steps", type=int, default=150, help="training steps")
    p.add_argument("--batch-size", type=int, default=16, help="examples per training step")
    p.add_argument("--lr-full", type=float, default=1e-3, help="learning rate of full fine-tuning")
    p.add_argument("--lr-lora", type=float, default=5e-3, help="LoRA takes larger steps: B "
                   "starts at zero and only the adapter moves")
    p.add_argument("--eval-every", type=int, default=25, help="steps between evaluations")
    p.add_argument("--eval-batches", type=int, default=8, help="batches per validation estimate")
    p.add_argument("--seed", type=int, default=1337,
                   help="random seed: weights, data order, sampling")
    p.add_argument("--out", default=os.path.join("out", "lora"),
                   help="folder for everything it writes")
    p.add_argument("--quick", action="store_true", help="a tiny base model and a few steps")
    p.add_argument("--run-one", nargs=2, metavar=("METHOD", "RANK"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.base = os.path.join(args.out, "base")
        args.base_steps, args.steps, args.eval_every, args.eval_batches = 20, 6, 3, 2
        args.old_chars = 200_000
    return args


# --- data -----------------------------------------------------------------------------------------
def docstring_corpus():
    """The docstrings (modules, classes, functions) of the top-level standard-library modules
    the base corpus (STDLIB_MODULES) does not contain: English about code, never seen."""
    stdlib = sysconfig.get_paths()["stdlib"]
    names = sorted(f for f in os.listdir(stdlib) if f.endswith(".py") and not f.startswith("_")
                   and f[:-3] not in STDLIB_MODULES)
    docs = []
    for name in names:
        with open(os.path.join(stdlib, name), encoding="utf-8", errors="replace") as f:
            try:
                tree = ast.parse(f.read())
            except SyntaxError:  # a few modules are test data for other Python versions
                continue
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        docs += [ast.get_docstring(node) for node in ast.walk(tree) if isinstance(node, kinds)]
    return "\n\n".join(d for d in docs if d)


def split_ids(text, tokenizer, val_fraction=0.1):
    """(train, validation) id tensors; characters the base vocabulary lacks become '?'."""
    known = set(tokenizer.chars)
    ids = tg.tensor(tokenizer.encode("".join(c if c in known else "?" for c in text)))
    cut = int(len(ids) * (1 - val_fraction))
    return ids[:cut], ids[cut:]


def ensure_base(args):
    """The base folder: --base if it holds a checkpoint, else a short train_gpt.py run."""
    if os.path.exists(os.path.join(args.base, "ckpt.safetensors")):
        return args.base
    folder = args.base if args.quick else os.path.join(args.out, "base")
    if not os.path.exists(os.path.join(folder, "ckpt.safetensors")):
        print(f"no base model in {args.base}: training one for {args.base_steps} steps")
        small = ["--n-layer", "1", "--n-embd", "32", "--eval-every", "10"] if args.quick else []
        subprocess.run([sys.executable, os.path.join(HERE, "train_gpt.py"), "--out", folder,
                        "--steps", str(args.base_steps), "--samples", "0",
                        "--corpus-chars", str(args.old_chars), *small], check=True)
    return folder


# --- one run (its own process) -------------------------------------------------------------------
def run_one(args, method, rank):
    sys.path.insert(0, HERE)
    from train_gpt import load_checkpoint

    model, tokenizer = load_checkpoint(args.base)
    config = model.config
    with open(os.path.join(args.out, "new_text.txt"), encoding="utf-8") as f:
        new_train, new_val = split_ids(f.read(), tokenizer)
    # train_gpt.py's own split of its corpus: the last 10% was never trained on
    _, old_val = split_ids(python_stdlib_corpus(args.old_chars), tokenizer)
    name = "full" if method == "full" else f"{method} r={rank}"
    if method == "full":
        trained, lr = model, args.lr_full
    else:
        trained = get_peft_model(model, LoraConfig(r=rank, lora_alpha=args.lora_alpha,
                                                   target_modules=TARGETS[method]))
        lr = args.lr_lora
    params = [p for p in trained.parameters() if p.requires_grad]  # the optimizer sees these
    optimizer = nn.optim.AdamW(params, lr=lr, weight_decay=0.0)

    @tg.no_grad()
    def val_loss(ids):
        trained.eval()
        tg.manual_seed((args.seed - 1) % 2**32)  # the same windows every time
        losses = [trained(*random_windows(ids, args.batch_size, config.block_size))[1].item()
                  for _ in range(args.eval_batches)]
        trained.train()
        return sum(losses) / len(losses)

    curve = {"step": [0], "new": [val_loss(new_val)], "old": [val_loss(old_val)]}
    times, cpu_times = [], []  # wall and process CPU time: the CPU time barely moves when
    # other programs share the cores, the wall time does
    trained.train()
    progress = Progress(0, args.steps)  # on stderr with tqdm: stdout carries the JSON result
    for step in range(1, args.steps + 1):
        tg.manual_seed(args.seed + step)  # every run sees the same batches
        tick, cpu_tick = time.perf_counter(), time.process_time()
        x, y = random_windows(new_train, args.batch_size, config.block_size)
        _, loss = trained(x, targets=y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - tick)
        cpu_times.append(time.process_time() - cpu_tick)
        if step % args.eval_every == 0 or step == args.steps:
            curve["step"].append(step)
            curve["new"].append(val_loss(new_val))
            curve["old"].append(val_loss(old_val))
        progress.update(step, loss=loss.item(), val_loss=curve["new"][-1])
    progress.close()

    # What a run keeps: the whole model, or only the adapter (peft's folder format).
    folder = os.path.join(args.out, "adapters", name.replace(" r=", "_r"))
    if method == "full":
        os.makedirs(folder, exist_ok=True)
        nn.save(model.state_dict(), os.path.join(folder, "model.safetensors"))
        saved = os.path.getsize(os.path.join(folder, "model.safetensors"))
    else:
        trained.save_pretrained(folder)
        saved = os.path.getsize(os.path.join(folder, "adapter_model.safetensors"))
    return {"name": name, "trainable": sum(p.numel() for p in params),
            "total": sum(p.numel() for p in trained.parameters()), "checkpoint_kb": saved / 1024,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "ms_per_step": 1000 * statistics.median(times[len(times) // 5:]),
            "cpu_ms_per_step": 1000 * statistics.median(cpu_times[len(cpu_times) // 5:]),
            "curve": curve}


# --- all runs, the table and the plot -----------------------------------------------------------
def main(argv=None):
    tg.backend.tune_process()  # opt-in: malloc and thread settings for speed (backend/process.py)
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.run_one:
        print(json.dumps(run_one(args, args.run_one[0], int(args.run_one[1]))))
        return None
    args.base = ensure_base(args)
    text = docstring_corpus()
    with open(os.path.join(args.out, "new_text.txt"), "w", encoding="utf-8") as f:
        f.write(text)
    print(f"base model: {args.base}; new text: {len(text):,} characters of standard-library "
          f"docstrings; {args.steps} steps of {args.batch_size} windows per run")
    runs = [("full", 0)] + [(m, r) for m in TARGETS for r in args.ranks]
    # The children get this run's settings (the later flags win over the user's own).
    forwarded = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--quick"]
    forwarded += ["--base", args.base, "--steps", str(args.steps), "--eval-every",
                  str(args.eval_every), "--eval-batches", str(args.eval_batches),
                  "--old-chars", str(args.old_chars)]
    results = []
    for method, rank in runs:
        done = subprocess.run([sys.executable, os.path.abspath(__file__), *forwarded,
                               "--run-one", method, str(rank)],
                              check=True, stdout=subprocess.PIPE, text=True)  # its bar shows
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        r = results[-1]
        print(f"  {r['name']:<16} new {r['curve']['new'][-1]:.3f}  old {r['curve']['old'][-1]:.3f}"
              f"  {r['ms_per_step']:.0f} ms/step", flush=True)
    print(table(results))
    with open(os.path.join(args.out, "lora_results.json"), "w") as f:
        json.dump(results, f, indent=1)
    plot(results, os.path.join(args.out, "lora_losses.png"))
    return results


def table(results):
    base = results[0]["curve"]
    header = ("run", "trainable", "share", "ckpt KB", "peak RSS MB", "ms/step", "CPU ms/step",
              "val_loss new", "val_loss old")
    rows = [("base model", "-", "-", "-", "-", "-", "-", f"{base['new'][0]:.3f}",
             f"{base['old'][0]:.3f}")]
    rows += [(r["name"], f"{r['trainable']:,}", f"{100 * r['trainable'] / r['total']:.2f}%",
              f"{r['checkpoint_kb']:,.0f}", f"{r['peak_rss_mb']:.0f}", f"{r['ms_per_step']:.1f}",
              f"{r['cpu_ms_per_step']:.1f}", f"{r['curve']['new'][-1]:.3f}",
              f"{r['curve']['old'][-1]:.3f}") for r in results]
    widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(f"{c:<{w}}" if i == 0 else f"{c:>{w}}"
                       for i, (c, w) in enumerate(zip(row, widths))) for row in [header] + rows]
    return "\n".join([lines[0], "-" * len(lines[0])] + lines[1:])


def plot(results, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for r in results:
        style = "k-" if r["name"] == "full" else ("--" if r["name"].startswith("att") else "-")
        for ax, key in zip(axes, ("new", "old")):
            ax.plot(r["curve"]["step"], r["curve"][key], style, label=r["name"])
    axes[0].set(title="validation loss on the new text (docstrings)", xlabel="step",
                ylabel="cross-entropy (nats per character)")
    axes[1].set(title="validation loss on the old text (forgetting)", xlabel="step")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"loss curves: {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
