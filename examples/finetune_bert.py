"""Fine-tune the BERT that examples/train_bert.py pre-trained, and the same model from random
initialisation, on a task with labels nobody had to write: which standard-library package a
docstring comes from, among eight (asyncio, email, http, importlib, logging, multiprocessing,
unittest, xml).

The held-out docstrings are the ones pre-training held out too (`data.is_held_out`), so neither
model has seen them. Both models train with the same data order, steps and learning rate; the
classifier on the pooled [CLS] output is fresh in both. Writes into --out (out/bert):
  finetune.json      both test accuracies and the majority-class baseline
  attention.png      the fine-tuned pre-trained model's attention on one test docstring
  finetune_loss.png  both models' fine-tuning loss (the pictures need matplotlib)
  classifier/        the fine-tuned pre-trained model (save_pretrained)

    python examples/train_bert.py && python examples/finetune_bert.py
    python examples/finetune_bert.py --quick   # pre-trains first if there is no checkpoint
    python examples/finetune_bert.py --labelled 300 --epochs 10   # few labels

Measured after the default pre-training (1500 steps), over seeds 0, 1 and 2
(examples/results.py): pre-trained 55.2-68.0%, random init 51.2-65.7% (majority class 19.8%);
pre-training won two seeds of three. After only 600 steps it did not help yet (49.4% vs 58.7%;
see docs/models.md, BERT), so the script says which model wins rather than assuming it.
"""
import argparse
import collections
import json
import os
import random
import sys
import time
import warnings

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.models import BertForSequenceClassification
from tensorgrad.models.bert_data import collate_pairs
from tensorgrad.models.data import PROSE_PACKAGES, is_held_out, stdlib_documents
from tensorgrad.models.tokenizer import WordPieceTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_bert  # noqa: E402  (pre-trains when there is no checkpoint yet)
from common import HelpFormatter, Progress, plot_curves  # noqa: E402  (what every example shares)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("--out", default=os.path.join("out", "bert"),
                   help="train_bert.py's output folder (its model/ is read)")
    p.add_argument("--max-length", type=int, default=64, help="tokens per docstring")
    p.add_argument("--epochs", type=int, default=4, help="passes over the training set")
    p.add_argument("--batch-size", type=int, default=32, help="examples per training step")
    p.add_argument("--lr", type=float, default=5e-4, help="peak learning rate (AdamW)")
    p.add_argument("--dropout", type=float, default=0.1, help="dropout probability")
    p.add_argument("--seed", type=int, default=0, help="random seed: weights, data order, sampling")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--labelled", type=int, default=None,
                   help="fine-tune on this many labelled docstrings (None: all)")
    p.add_argument("--quick", action="store_true",
                   help="3 epochs on 800 docstrings at lr 2e-3: checks that fine-tuning learns "
                   "(beats the majority class); too short to show what pre-training gives")
    return p.parse_args(argv)


def main(argv=None):
    tg.backend.tune_process()  # opt-in: malloc and thread settings for speed (backend/process.py)
    args = parse_args(argv)
    folder = os.path.join(args.out, "model")
    if not os.path.exists(os.path.join(folder, "config.json")):
        print(f"no pre-trained model in {folder}: running train_bert.py first")
        train_bert.main(["--out", args.out] + (["--quick"] if args.quick else []))
    tokenizer = WordPieceTokenizer.from_file(os.path.join(folder, "tokenizer.json"))

    # --- data: docstrings labelled by their package -----------------------------------------------
    documents = stdlib_documents(PROSE_PACKAGES, kinds=("docstring",))
    labels = {name: i for i, name in enumerate(PROSE_PACKAGES)}
    cls_id, sep_id = tokenizer.special_tokens["[CLS]"], tokenizer.special_tokens["[SEP]"]

    def example(doc):
        pieces = tokenizer.encode(doc.text, add_special_tokens=False)[:args.max_length - 2]
        return {"input_ids": [cls_id] + pieces + [sep_id], "label": labels[doc.package]}

    train = [example(d) for d in documents if not is_held_out(d.text)]
    test = [example(d) for d in documents if is_held_out(d.text)]
    if args.quick:
        args.labelled, args.epochs, args.lr = 800, 3, 2e-3
    if args.labelled:
        train = random.Random(0).sample(train, min(args.labelled, len(train)))
    counts = collections.Counter(e["label"] for e in test)
    majority = max(counts.values()) / len(test)
    print(f"data: {len(train)} training and {len(test)} test docstrings from {len(labels)} "
          f"packages; the most common class is {majority:.1%} of the test set")

    # --- the two models: pre-trained and random, trained the same way ---------------------------
    results = {"majority_class": majority}
    config, curves = None, {}
    for name in ("pre-trained", "random init"):
        tg.manual_seed(args.seed)  # the same fresh classifier and dropout draws for both
        if config is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "the classifier keeps its initialisation"
                model = BertForSequenceClassification.from_pretrained(
                    folder, device=args.device, num_labels=len(labels),
                    hidden_dropout_prob=args.dropout, attention_probs_dropout_prob=args.dropout)
            config = model.config
        else:
            model = BertForSequenceClassification(config, device=args.device)
        began = time.perf_counter()
        curves[name] = fine_tune(model, train, args)
        results[name] = accuracy(model, test, args)
        print(f"{name}: test accuracy {results[name]:.1%} "
              f"({time.perf_counter() - began:.0f} s of fine-tuning)")
        if name == "pre-trained":
            model.save_pretrained(os.path.join(args.out, "classifier"))
            draw_attention(model, tokenizer, test[0], os.path.join(args.out, "attention.png"))
    plot_curves(os.path.join(args.out, "finetune_loss.png"), "fine-tuning on docstrings", "step",
                ("cross-entropy", {name: (range(1, len(c) + 1), c) for name, c in curves.items()}))
    with open(os.path.join(args.out, "finetune.json"), "w") as f:
        json.dump(results, f, indent=2)
    winner = "pre-trained" if results["pre-trained"] > results["random init"] else "random init"
    print(f"pre-trained {results['pre-trained']:.1%} vs random init "
          f"{results['random init']:.1%}: {winner} wins")
    if args.quick:
        print("--quick: a quick pre-training and 800 docstrings cannot show what pre-training "
              "gives; the full runs can")
    return results


def fine_tune(model, train, args):
    """AdamW with linear warmup (10%) and decay over every step, as BERT fine-tunes, under a
    progress bar; the loss of every step."""
    steps = args.epochs * -(-len(train) // args.batch_size)
    optimizer = nn.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    schedule = nn.optim.lr_scheduler.WarmupLinearLR(optimizer, max(1, steps // 10), steps)
    rng = random.Random(args.seed)  # the same order for both models
    model.train()
    losses, progress = [], Progress(0, steps)
    for _ in range(args.epochs):
        order = rng.sample(train, len(train))
        for i in range(0, len(order), args.batch_size):
            batch = collate_pairs(order[i:i + args.batch_size], device=args.device)
            loss = model(batch["input_ids"], attention_mask=batch["attention_mask"],
                         labels=batch["label"]).loss
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            progress.update(len(losses), loss=losses[-1])
    progress.close()
    model.eval()
    return losses


@tg.no_grad()
def accuracy(model, examples, args):
    right = 0
    for i in range(0, len(examples), 64):
        batch = collate_pairs(examples[i:i + 64], device=args.device)
        logits = model(batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        right += int((logits.argmax(-1) == batch["label"]).sum().item())
    return right / len(examples)


@tg.no_grad()
def draw_attention(model, tokenizer, example, path):
    """Every head of the last layer, for one docstring: rows are queries, columns keys."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no attention picture")
        return
    ids = example["input_ids"][:24]  # the first 24 tokens stay legible
    out = model(tg.tensor([ids]), output_attentions=True)
    maps = out.attentions[-1][0].numpy()  # (heads, T, T)
    tokens = [tokenizer.decode([i]) or "?" for i in ids]
    fig, axes = plt.subplots(1, maps.shape[0], figsize=(6 * maps.shape[0], 6), squeeze=False)
    for h, ax in enumerate(axes[0]):
        ax.imshow(maps[h], cmap="viridis")
        ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=7)
        ax.set_yticks(range(len(tokens)), tokens, fontsize=7)
        ax.set_title(f"last layer, head {h}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"attention map: {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
