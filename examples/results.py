"""The results the README and the docs state, as ranges over seeds: each example runs once per
seed in its own process, and the table gives the lowest and highest figure with the command.

    python examples/results.py          # every row, seeds 0 1 2 (about 5 min of CPU)
    python examples/results.py --only train_vit_digits --seeds 0 1 2 3 4
    python examples/results.py --quick  # each run in its --quick form: checks the plumbing

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
# name -> (what is measured, the figure's regex on the run's output: the last match counts)
ROWS = {
    "train_digits": ("MLP, test accuracy", r"reloaded test acc ([\d.]+)"),
    "train_cnn_digits": ("CNN, test accuracy", r"test acc ([\d.]+)"),
    "train_vit_digits": ("ViT, test accuracy", r"test acc ([\d.]+)"),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("--only", nargs="+", choices=sorted(ROWS), default=sorted(ROWS),
                   help="which examples to run")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                   help="one run per seed (at least 3 for a stated range)")
    p.add_argument("--quick", action="store_true",
                   help="each run in its --quick form: the figures then mean nothing")
    return p.parse_args(argv)


def run(name, seed, quick, folder):
    """The figure one run of examples/<name>.py reports."""
    command = [sys.executable, os.path.join(EXAMPLES, f"{name}.py"), "--seed", str(seed)]
    command += ["--quick"] if quick else []
    command += ["--out", folder] if name != "train_cnn_digits" else []
    done = subprocess.run(command, capture_output=True, text=True, cwd=folder)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    found = re.findall(ROWS[name][1], done.stdout)
    if not found:
        raise SystemExit(f"{name}: no figure in its output ({ROWS[name][1]!r})")
    return float(found[-1])


def main(argv=None):
    args = parse_args(argv)
    print("| example | figure | seeds | range | each run | command |")
    print("|---|---|---|---|---|---|")
    for name in args.only:
        figures = []
        with tempfile.TemporaryDirectory() as folder:
            for seed in args.seeds:
                figures.append(run(name, seed, args.quick, folder))
        quick = " --quick" if args.quick else ""
        print(f"| {name} | {ROWS[name][0]} | {' '.join(map(str, args.seeds))} | "
              f"{min(figures):.2%} - {max(figures):.2%} | "
              f"{', '.join(f'{f:.2%}' for f in figures)} | "
              f"`python examples/{name}.py --seed N{quick}` |", flush=True)


if __name__ == "__main__":
    main()
