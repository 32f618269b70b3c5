"""The results the README and the docs state, as ranges over seeds: each example runs once per
seed in its own process, and the table gives, for every figure it reports, the lowest and the
highest value with the command.

    python examples/results.py --quick  # each run in its --quick form: checks the plumbing
    python examples/results.py --only train_vit_digits --seeds 0 1 2 3 4
    python examples/results.py          # every row, seeds 0 1 2: slow (about an hour of CPU)

Each full run's cost, per seed, on 2 cores: train_digits, train_cnn_digits, long_context (24 s
of CPU) and in_context_learning under a minute; swin (47 s of CPU, 140 s wall), train_translation
and rlhf a few minutes; train_bert, which also fine-tunes (finetune_bert; 163 s of CPU), and
finetune_lora, which first trains its base with train_gpt (204 s of CPU), 3-5 minutes wall;
train_vit_digits, train_t5 and train_gpt 5-10 minutes.
A seed changes the weights' initialisation, the augmentation and the order of the batches; the
digits examples keep their train/test split (450 test images) whatever the seed, except
train_digits, whose --seed also draws the split. Figures from one machine: the examples are
deterministic for a seed, but rounding differs between BLAS libraries and thread counts.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

from common import HelpFormatter

EXAMPLES = os.path.dirname(os.path.abspath(__file__))
# example -> [(figure, the regex of its value in the run's output (the last match counts),
#              unit: "frac" printed as 0.973, "%" printed as 97.3%, or what follows the value)]
ROWS = {
    "train_digits": [("MLP, test accuracy", r"reloaded test acc ([\d.]+)", "frac")],
    "train_cnn_digits": [("CNN, test accuracy", r"reloaded test acc ([\d.]+)", "frac")],
    "train_vit_digits": [("ViT, test accuracy", r"\| vit \| [\d,]+ \| ([\d.]+)%", "%")],
    "train_gpt": [("GPT-mini, validation loss", r"validation loss ([\d.]+)", " nats/char")],
    "train_bert": [
        ("BERT, held-out masked-token accuracy", r"masked-token accuracy ([\d.]+)%", "%"),
        ("BERT, held-out next-sentence accuracy", r"next-sentence accuracy ([\d.]+)%", "%"),
        ("BERT fine-tuned (finetune_bert), pre-trained",
         r"pre-trained: test accuracy ([\d.]+)%", "%"),
        ("BERT fine-tuned (finetune_bert), random init",
         r"random init: test accuracy ([\d.]+)%", "%"),
    ],
    "train_t5": [("T5, held-out exact match (all tasks)", r"  all +([\d.]+)%", "%")],
    "train_translation": [
        ("Transformer, numbers to words, exact match", r"exact match ([\d.]+)%", "%"),
        ("Transformer, numbers to words, BLEU", r"BLEU ([\d.]+)", " BLEU"),
    ],
    "in_context_learning": [
        (f"ICL, {k}-shot accuracy", rf"^ +{k} +[\d.]+% +([\d.]+)%", "%") for k in (0, 1, 2, 4, 8)
    ],
    "rlhf": [
        ("RLHF, SFT exact", r"^SFT +([\d.]+)%", "%"),
        ("RLHF, reward model held-out preference accuracy",
         r"held-out preference accuracy ([\d.]+)% on", "%"),
        ("RLHF, PPO exact", r"^PPO +([\d.]+)%", "%"),
        ("RLHF, DPO exact", r"^DPO +([\d.]+)%", "%"),
    ],
    "swin": [("Swin, test accuracy", r"\| swin \| [\d,]+ \| ([\d.]+)%", "%")],
    "long_context": [
        (f"long context, {name}, val_loss", rf"^  {name}: val_loss ([\d.]+),", " nats/char")
        for name in ("dense", "sliding window", "bigbird", "strided", "linear")
    ],
    "finetune_lora": [("GPT-mini (train_gpt), validation loss", r"validation loss ([\d.]+)",
                       " nats/char")] + [
        (f"LoRA, {name}, val_loss on the {text} text", rf"^{re.escape(name)} .* ([\d.]+) +"
         rf"([\d.]+)$", " nats/char", column)
        for name in ("base model", "full", "attention r=1", "attention r=4", "attention r=16",
                     "all-linear r=1", "all-linear r=4", "all-linear r=16")
        for column, text in ((1, "new"), (2, "old"))
    ],
}
# the command lines one run is, in order, when not only examples/<name>.py; each gets --seed,
# --out (one temporary folder for the row) and --quick
SCRIPTS = {
    "train_bert": [["train_bert"], ["finetune_bert"]],  # fine-tunes what it pre-trained
    "swin": [["train_vit_digits", "--model", "swin"]],
    # LoRA on the base model that train_gpt (make demo) trains with the same seed
    "finetune_lora": [["train_gpt", "--samples", "0"], ["finetune_lora", "--base", "."]],
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("--only", nargs="+", choices=sorted(ROWS), default=list(ROWS),
                   help="which examples to run")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                   help="one run per seed (at least 3 for a stated range)")
    p.add_argument("--quick", action="store_true",
                   help="each run in its --quick form: the figures then mean nothing")
    p.add_argument("--extra", default="",
                   help="more options for every run of the row, as one string (a smaller "
                   "configuration: --extra='--steps 20'); the table's command shows them")
    return p.parse_args(argv)


def commands(name, extra):
    """The command lines of one run of the row `name`, without --seed, --out and --quick."""
    return [[f"{script}.py", *options, *extra.split()]
            for script, *options in SCRIPTS.get(name, [[name]])]


def run(name, seed, quick, extra, folder):
    """{figure: value} from one run of the row's commands."""
    output = ""
    for script, *options in commands(name, extra):
        line = [sys.executable, os.path.join(EXAMPLES, script), *options, "--seed", str(seed),
                "--out", folder] + (["--quick"] if quick else [])
        done = subprocess.run(line, capture_output=True, text=True, cwd=folder)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(line)} failed:\n{done.stderr[-2000:]}")
        output += done.stdout
    figures = {}
    for figure, pattern, unit, *column in ROWS[name]:
        found = re.findall(pattern, output, flags=re.MULTILINE)
        if not found:
            raise SystemExit(f"{name}: no {figure!r} in its output ({pattern!r})")
        value = found[-1][column[0] - 1] if column else found[-1]  # column: of several groups
        figures[figure] = float(value) * (100 if unit == "frac" else 1)
    return figures


def shown(value, unit):
    if unit in ("frac", "%"):
        return f"{value:.2f}%"
    return f"{value:.3f}{unit}" if "nats" in unit else f"{value:.1f}{unit}"


def main(argv=None):
    args = parse_args(argv)
    print("| example | figure | seeds | range | each run | command |")
    print("|---|---|---|---|---|---|")
    for name in args.only:
        runs = []
        with tempfile.TemporaryDirectory() as folder:
            for seed in args.seeds:
                runs.append(run(name, seed, args.quick, args.extra, folder))
        quick = " --quick" if args.quick else ""
        command = " && ".join(f"python examples/{' '.join(line)} --seed N{quick}"
                              for line in commands(name, args.extra))
        for figure, _, unit, *_ in ROWS[name]:
            values = [r[figure] for r in runs]
            print(f"| {name} | {figure} | {' '.join(map(str, args.seeds))} | "
                  f"{shown(min(values), unit)} - {shown(max(values), unit)} | "
                  f"{', '.join(shown(v, unit) for v in values)} | "
                  f"`{command}` |",
                  flush=True)


if __name__ == "__main__":
    main()
