"""Handwritten digits with a Vision Transformer (or a Swin Transformer), on the CPU in minutes.

scikit-learn's bundled 8x8 digits (1,797 images, nothing to download), upsampled to 16x16,
split 1,347 / 450 with the seed of examples/train_cnn_digits.py, so the test images are the
same. ViT: 4x4 patches (16 tokens and [CLS]), 4 pre-LN blocks of width 64. Swin: 2x2 patches
(an 8x8 grid), 4x4 windows shifted by 2, then a merge to 4x4. Both train with AdamW, a short
warmup and a cosine decay, on images shifted at random by up to one pixel (the only
augmentation: small data, and a ViT has no built-in translation invariance).

Writes into --out (out/vit_digits or out/swin_digits):
  model/          the trained model (save_pretrained: config.json and the weights)
  curves.png      training loss and test accuracy per epoch
  attention.png   ViT only: attention rollout and the last layer's per-head [CLS] maps
  filters.png     ViT only: the patch-embedding filters as images
(the pictures need matplotlib).

    python examples/train_vit_digits.py                 # ViT, the full run
    python examples/train_vit_digits.py --model swin    # Swin
    python examples/train_vit_digits.py --quick         # a few steps, a smoke test
"""
import argparse
import os
import time

import tensorgrad as tg
from tensorgrad.models.attention_maps import (
    patch_filters, save_attention_grid, save_filter_grid, vit_attention_maps,
)
from tensorgrad.models.digits import RandomShift, load_digits
from tensorgrad.models.swin import SwinConfig, SwinForImageClassification
from tensorgrad.models.vit import ViTConfig, ViTForImageClassification
from tensorgrad.nn import optim
from common import HelpFormatter, Progress, plot_curves

# --- configuration -------------------------------------------------------------------------------
SEED = 0
IMAGE_SIZE = 16         # 8x8 digits upsampled (bilinear): 4x4 patches still see whole strokes
EPOCHS = {"vit": 30, "swin": 40}  # Swin's test accuracy keeps rising to epoch 33
BATCH = 32              # small batches: more steps from 1,347 images
LR = 3e-3
WEIGHT_DECAY = 0.01     # light: the random shifts do most of the regularising
WARMUP_STEPS = 100      # about 2.5 epochs; a ViT's attention is unstable at full rate from step 0
MAX_SHIFT = 1           # pixels of random translation in each direction
MODELS = {"vit": (ViTConfig.digits, ViTForImageClassification),
          "swin": (SwinConfig.digits, SwinForImageClassification)}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("--model", choices=sorted(MODELS), default="vit", help="which transformer")
    p.add_argument("--epochs", type=int, default=None,
                   help="passes over the training set (None: 30 for vit, 40 for swin)")
    p.add_argument("--max-steps", type=int, default=None, help="stop after this many steps")
    p.add_argument("--seed", type=int, default=SEED, help="weights, shifts and order; the "
                   "train/test split stays the same")
    p.add_argument("--quick", action="store_true", help="4 steps and the pictures: a smoke test")
    p.add_argument("--out", default=None, help="folder for the pictures (None: out/MODEL_digits)")
    args = p.parse_args(argv)
    if args.quick:
        args.max_steps = 4
    args.epochs = args.epochs or EPOCHS[args.model]
    args.out = args.out or os.path.join("out", f"{args.model}_digits")
    return args


def main(argv=None):
    tg.backend.tune_process()  # opt-in: malloc and thread settings for speed (backend/process.py)
    args = parse_args(argv)
    tg.manual_seed(args.seed)

    # --- data ------------------------------------------------------------------------------------
    x_train, y_train, x_test, y_test = load_digits(IMAGE_SIZE, seed=SEED)
    augment = RandomShift(MAX_SHIFT)
    print(f"data: {x_train.shape[0]} train / {x_test.shape[0]} test images of shape "
          f"{tuple(x_train.shape[1:])}, 10 classes, random shifts up to {MAX_SHIFT} px")

    # --- model -----------------------------------------------------------------------------------
    make_config, model_class = MODELS[args.model]
    model = model_class(make_config())
    print(model.summary())
    steps_per_epoch = -(-x_train.shape[0] // BATCH)
    total_steps = args.epochs * steps_per_epoch
    if args.max_steps is not None:
        total_steps = min(total_steps, args.max_steps)
    optimizer = optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    scheduler = optim.lr_scheduler.WarmupCosineLR(optimizer, min(WARMUP_STEPS, total_steps - 1),
                                                  total_steps)

    def accuracy(x, y):
        model.eval()
        with tg.no_grad():
            correct = sum((model(x[i:i + 256]).logits.argmax(dim=1) == y[i:i + 256]).sum().item()
                          for i in range(0, x.shape[0], 256))
        model.train()
        return correct / x.shape[0]

    # --- training loop ---------------------------------------------------------------------------
    history = {"loss": [], "test_acc": []}
    bar = Progress(0, total_steps)
    start, step = time.perf_counter(), 0
    while step < total_steps:
        order = tg.randperm(x_train.shape[0])
        losses = []
        for i in range(0, x_train.shape[0], BATCH):
            batch = order[i:i + BATCH]
            loss = model(augment(x_train[batch]), labels=y_train[batch]).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            step += 1
            losses.append(loss.item())
            bar.update(step, loss=losses[-1],
                       test_acc=history["test_acc"][-1] if history["test_acc"] else None)
            if step == total_steps:
                break
        history["loss"].append(sum(losses) / len(losses))
        history["test_acc"].append(accuracy(x_test, y_test))
    bar.close()

    # --- results ---------------------------------------------------------------------------------
    elapsed = time.perf_counter() - start
    test_acc = history["test_acc"][-1]
    print(f"trained {step} steps in {elapsed:.1f} s; train acc "
          f"{accuracy(x_train, y_train):.3f}, test acc {test_acc:.4f}")
    print(f"| {args.model} | {model.num_parameters():,} | {test_acc:.2%} | {elapsed:.0f} s |")
    model.save_pretrained(os.path.join(args.out, "model"))
    print(f"checkpoint: {os.path.join(args.out, 'model')} (save_pretrained)")
    draw(args, model, history, x_test, y_test)


# --- pictures (matplotlib when installed) ---------------------------------------------------------
def draw(args, model, history, x_test, y_test):
    os.makedirs(args.out, exist_ok=True)
    epochs = range(1, len(history["loss"]) + 1)
    plot_curves(os.path.join(args.out, "curves.png"), f"{args.model} on 16x16 digits", "epoch",
                ("cross-entropy", {"loss": (epochs, history["loss"])}),
                ("accuracy", {"test_acc": (epochs, history["test_acc"])}))
    try:
        import matplotlib  # noqa: F401  (the attention and filter pictures need it too)
    except ImportError:
        return
    if args.model != "vit":
        return
    images, labels = x_test[:6], y_test[:6]
    model.eval()
    with tg.no_grad():
        predictions = model(images).logits.argmax(dim=1)
    maps = vit_attention_maps(model, images)
    print("attention maps:", save_attention_grid(os.path.join(args.out, "attention.png"), images,
                                                 maps, labels, predictions))
    print("patch filters:", save_filter_grid(os.path.join(args.out, "filters.png"),
                                             patch_filters(model)))


if __name__ == "__main__":
    main()
