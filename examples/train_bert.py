"""Pre-train a small BERT with masked-token and next-sentence prediction on English that every
machine already has: the docstrings and comments of the Python standard library.

Each docstring and each block of comment lines is a document, split into sentences
(`tensorgrad.models.data.stdlib_documents`); a fixed tenth of the documents is held out. A
WordPiece vocabulary is trained on the rest, sentence pairs are drawn as in the paper (B follows
A half of the time, otherwise it comes from another document), and 15% of the tokens are masked
(80% [MASK], 10% random, 10% kept). As in the original implementation, the masked-LM head runs
only at the masked positions. The default run (a 2-layer BERT of width 128, 1500 steps of 32
pairs) takes under 3 minutes of one core, reaches 15.9-17.0% held-out masked-token and
64.8-70.3% next-sentence accuracy over seeds 0, 1 and 2 (examples/results.py), and writes into
--out (out/bert):
  model/             the pre-trained BertForPreTraining as a Hugging Face folder (config.json,
                     model.safetensors), with tokenizer.json and vocab.txt beside it
  loss.png           training loss and held-out accuracies (needs matplotlib)

    python examples/train_bert.py              # the default run
    python examples/train_bert.py --quick      # 200 steps on three packages: it learns
    python examples/finetune_bert.py           # then: classify docstrings with it
"""
import argparse
import os
import random
import sys
import time

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad import nn
from tensorgrad.models import BertConfig, BertForPreTraining
from tensorgrad.models.bert_data import MLMCollator, collate_pairs, next_sentence_pairs
from tensorgrad.models.data import is_held_out, stdlib_documents
from tensorgrad.models.tokenizer import WordPieceTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import HelpFormatter, Progress, plot_curves  # noqa: E402  (what every example shares)


# --- configuration ------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("--packages", nargs="*", default=None,
                   help="top-level stdlib packages to read (None: the whole library)")
    p.add_argument("--vocab-size", type=int, default=4000, help="WordPiece vocabulary size")
    p.add_argument("--max-length", type=int, default=64, help="tokens per sentence pair")
    # model: BertConfig.bert_tiny's width with short positions
    p.add_argument("--layers", type=int, default=2, help="encoder blocks")
    p.add_argument("--hidden", type=int, default=128, help="model width")
    p.add_argument("--heads", type=int, default=2, help="attention heads per block")
    # optimisation: AdamW, linear warmup then linear decay (the paper's schedule)
    p.add_argument("--steps", type=int, default=1500, help="training steps")
    p.add_argument("--batch-size", type=int, default=32, help="examples per training step")
    p.add_argument("--lr", type=float, default=1e-3, help="peak; small models take large rates")
    p.add_argument("--warmup", type=int, default=100, help="learning-rate warm-up steps")
    p.add_argument("--weight-decay", type=float, default=0.01,
                   help="AdamW's decoupled weight decay")
    p.add_argument("--eval-every", type=int, default=100, help="steps between evaluations")
    p.add_argument("--eval-pairs", type=int, default=512,
                   help="held-out sentence pairs per evaluation")
    p.add_argument("--seed", type=int, default=0, help="random seed: weights, data order, sampling")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--out", default=os.path.join("out", "bert"),
                   help="folder for everything it writes")
    p.add_argument("--quick", action="store_true",
                   help="200 steps on three packages: checks that the loss falls and the "
                   "held-out masked-token accuracy rises; too short to learn next sentences")
    args = p.parse_args(argv)
    if args.quick:
        args.packages = args.packages or ["json", "logging", "http"]
        args.vocab_size, args.steps, args.warmup = 500, 200, 20
        args.eval_every, args.eval_pairs, args.batch_size = 50, 256, 16
    return args


def main(argv=None):
    tg.backend.tune_process()  # opt-in: malloc and thread settings for speed (backend/process.py)
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    tg.manual_seed(args.seed)

    # --- data: documents -> WordPiece -> sentence pairs -----------------------------------------
    began = time.perf_counter()
    documents = stdlib_documents(args.packages)
    train_docs = [d for d in documents if not is_held_out(d.text)]
    val_docs = [d for d in documents if is_held_out(d.text)]
    tokenizer = WordPieceTokenizer.train((d.text for d in train_docs), args.vocab_size)

    def pairs_of(docs, seed):
        sentences = [[tokenizer.encode(s, add_special_tokens=False) for s in d.sentences]
                     for d in docs]
        return next_sentence_pairs(sentences, args.max_length, tokenizer.special_tokens["[CLS]"],
                                   tokenizer.special_tokens["[SEP]"], seed=seed)

    train_pairs = pairs_of(train_docs, args.seed)
    val_pairs = pairs_of(val_docs, args.seed + 1)[:args.eval_pairs]
    print(f"data: {len(documents):,} documents ({sum(len(d.sentences) for d in documents):,} "
          f"sentences) from the standard library, {len(val_docs):,} held out; WordPiece "
          f"vocabulary of {tokenizer.vocab_size:,}; {len(train_pairs):,} training pairs, "
          f"{len(val_pairs):,} held-out pairs ({time.perf_counter() - began:.0f} s)")

    # --- model, optimizer, schedule -------------------------------------------------------------
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=args.hidden,
                        num_hidden_layers=args.layers, num_attention_heads=args.heads,
                        intermediate_size=4 * args.hidden, max_position_embeddings=args.max_length)
    model = BertForPreTraining(config, device=args.device)
    print(model.summary())
    # No weight decay on biases and LayerNorm gains (BERT's AdamWeightDecayOptimizer).
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    optimizer = nn.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                                {"params": no_decay, "weight_decay": 0.0}], lr=args.lr)
    warmup = max(1, min(args.warmup, args.steps - 1))
    schedule = nn.optim.lr_scheduler.WarmupLinearLR(optimizer, warmup, args.steps)
    collator = MLMCollator.from_tokenizer(tokenizer, seed=args.seed)

    def batch_of(pairs, masker):
        batch = collate_pairs(pairs, tokenizer.special_tokens["[PAD]"], device=args.device)
        batch["input_ids"], batch["labels"] = masker(batch["input_ids"], batch["attention_mask"])
        return batch

    # A fixed masking of the held-out pairs, so that every evaluation scores the same task.
    val_batches = [batch_of(val_pairs[i:i + 64], MLMCollator.from_tokenizer(tokenizer, seed=99))
                   for i in range(0, len(val_pairs), 64)]

    @tg.no_grad()
    def evaluate():
        model.eval()
        right = {"mlm": 0, "nsp": 0}
        total = {"mlm": 0, "nsp": 0}
        for batch in val_batches:
            mlm, nsp, labels = predict(model, batch)
            right["mlm"] += int((mlm.argmax(-1) == labels).sum().item())
            right["nsp"] += int((nsp.argmax(-1) == batch["next_sentence_label"]).sum().item())
            total["mlm"] += labels.shape[0]
            total["nsp"] += nsp.shape[0]
        model.train()
        return {k: right[k] / max(total[k], 1) for k in right}

    # --- training loop --------------------------------------------------------------------------
    rng = random.Random(args.seed)
    history = {"train": [], "val": []}
    progress = Progress(0, args.steps)
    began = time.perf_counter()
    model.train()
    for step in range(args.steps):
        tick = time.perf_counter()
        batch = batch_of(rng.sample(train_pairs, args.batch_size), collator)
        mlm, nsp, labels = predict(model, batch)
        loss = F.cross_entropy(mlm, labels) + F.cross_entropy(nsp, batch["next_sentence_label"])
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        history["train"].append(loss.item())
        done = step + 1
        if done % args.eval_every == 0 or done == args.steps:
            history["val"].append([done, evaluate()])
        progress.update(done, loss=history["train"][-1],
                        val_acc=history["val"][-1][1]["mlm"] if history["val"] else None,
                        **{"tok/s": batch["attention_mask"].sum().item()
                           / (time.perf_counter() - tick)})
    progress.close()

    # --- results ----------------------------------------------------------------------------------
    scores = history["val"][-1][1]
    print(f"held out, after {args.steps} steps ({time.perf_counter() - began:.0f} s): masked-token "
          f"accuracy {scores['mlm']:.1%}, next-sentence accuracy {scores['nsp']:.1%}")
    folder = os.path.join(args.out, "model")
    model.save_pretrained(folder)
    tokenizer.save(os.path.join(folder, "tokenizer.json"))
    tokenizer.save_vocab(os.path.join(folder, "vocab.txt"))
    if args.quick:
        print("--quick: 200 steps learn the commonest tokens; next-sentence accuracy stays "
              "near chance (50%)")
    print(f"checkpoint: {folder} (transformers.BertForPreTraining.from_pretrained reads it)")
    plot(history, os.path.join(args.out, "loss.png"))
    return model, tokenizer, history


def predict(model, batch):
    """(masked-LM logits at the masked positions (N, V), next-sentence logits (B, 2), the
    original tokens there (N,)). Scoring only the ~15% masked positions (the original
    implementation's masked_lm_positions) skips most of the decoder's work; the head and its
    weights are BertForPreTraining's own."""
    out = model.bert(batch["input_ids"], attention_mask=batch["attention_mask"],
                     token_type_ids=batch["token_type_ids"])
    chosen = batch["labels"] != -100  # (B, T)
    hidden = out.last_hidden_state[chosen]  # (N, C)
    mlm = model.mlm(hidden, model.bert.embeddings.word_embeddings.weight)  # (N, V)
    return mlm, model.nsp(out.pooler_output), batch["labels"][chosen]


def plot(history, path):
    steps = [s for s, _ in history["val"]]
    plot_curves(path, "BERT pre-training", "step",
                ("masked-LM + next-sentence loss",
                 {"loss": (range(1, len(history["train"]) + 1), history["train"])}),
                ("held-out accuracy", {f"val_acc ({label})": (steps, [v[key] for _, v in
                                                              history["val"]])
                                       for key, label in (("mlm", "masked token"),
                                                          ("nsp", "next sentence"))}))


if __name__ == "__main__":
    main(sys.argv[1:])
