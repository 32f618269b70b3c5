"""Follow one prompt through a trained GPT: the lecture's walkthrough of a Transformer, made real.

Forward hooks record the residual stream after the embeddings and after each block's attention
and feed-forward sublayers, and the attention of every head. Printed: how the stream at one
position changes layer by layer (and what the model would predict if it stopped there, the
"logit lens"), the attention weights of that position in every head (future positions are
masked: 0.0), and the top-5 next characters. Saved: attention heatmaps in --out.

The model is the one examples/train_gpt.py wrote into out/gpt, if there is one; otherwise a
tiny character model is trained here first, for a few seconds, on the same Python corpus.

    python examples/trace_transformer.py
    python examples/trace_transformer.py --prompt "for i in range(" --position 6
"""
import argparse
import os
import sys

import tensorgrad as tg

import train_gpt
from common import HelpFormatter

# A tiny model for when out/gpt holds none: two layers over 64 characters of context, about
# ten seconds of training.
QUICK_TRAINING = ["--n-layer", "2", "--n-head", "4", "--n-embd", "64", "--block-size", "64",
                  "--steps", "300", "--warmup", "20", "--eval-every", "100", "--ckpt-every", "300",
                  "--corpus-chars", "500000", "--samples", "0"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    p.add_argument("--prompt", default="The movie ended",
                   help="the prompt to follow through the model")
    p.add_argument("--position", type=int, default=None,
                   help="the query position to follow (None: the middle of the prompt)")
    p.add_argument("--model", default=os.path.join("out", "gpt"),
                   help="a folder written by train_gpt.py")
    p.add_argument("--out", default=os.path.join("out", "trace"),
                   help="folder for everything it writes")
    p.add_argument("--quick", action="store_true", help="trace a model trained for 60 steps "
                   "only: the mechanics, not what a trained model attends to")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    # --- a trained model ------------------------------------------------------------------------
    if args.quick or not os.path.exists(os.path.join(args.model, "ckpt.safetensors")):
        steps = ["--steps", "60"] if args.quick else []
        why = "--quick" if args.quick else f"no checkpoint in {args.model}"
        print(f"training a tiny model into {args.out}/model first ({why})")
        args.model = os.path.join(args.out, "model")
        train_gpt.main(QUICK_TRAINING + steps + ["--out", args.model])
    model, tokenizer = train_gpt.load_checkpoint(args.model)
    ids = tg.tensor([tokenizer.encode(args.prompt)])  # (1, T)
    tokens = [tokenizer.decode([i]) for i in ids[0].tolist()]
    T = len(tokens)
    position = T // 2 if args.position is None else args.position
    if not 0 <= position < T:
        raise SystemExit(f"--position must be in [0, {T}) for a prompt of {T} tokens")

    # --- hooks: the residual stream and the attention maps ----------------------------------------
    stream, attention = [], []  # [(stage, (T, C))], [(H, T, T) per layer]
    handles = [model.drop.register_forward_hook(
        lambda module, inputs, out: stream.append(("embeddings", out[0])))]
    for i, block in enumerate(model.blocks):
        # ffn_norm's input is the stream after attention; the block's output is the stream
        # after the feed-forward network.
        handles.append(block.ffn_norm.register_forward_hook(
            lambda module, inputs, out, i=i: stream.append((f"block {i} + attention",
                                                           inputs[0][0]))))
        handles.append(block.register_forward_hook(
            lambda module, inputs, out, i=i: stream.append((f"block {i} + feed-forward",
                                                           out[0]))))
        # attn_norm's output is what attention reads; ask it again for its weights.
        handles.append(block.attn_norm.register_forward_hook(
            lambda module, inputs, out, block=block: attention.append(
                block.self_attn.attention_weights(out, is_causal=True)[0])))
    with tg.no_grad():
        logits, _ = model(ids)
    for handle in handles:
        handle.remove()

    # --- the residual stream at one position, and the logit lens ----------------------------------
    print(f"\nprompt {args.prompt!r}: {T} tokens; following position {position} "
          f"({tokens[position]!r}), which predicts the character after it\n")
    print(f"{'stage':<24} {'|x|':>7} {'|change|':>9}  logit lens: top prediction")
    previous = None
    for stage, x in stream:
        row = x[position]  # (C,)
        with tg.no_grad():
            lens = tg.softmax(model.ln_f(row) @ model.wte.weight.mT, dim=-1)  # (V,)
        best = int(lens.argmax())
        change = "" if previous is None else f"{float((row - previous).norm()):9.2f}"
        print(f"{stage:<24} {float(row.norm()):7.2f} {change:>9}  "
              f"{tokenizer.decode([best])!r} ({float(lens[best]):.2f})")
        previous = row

    # --- attention weights of the chosen position -------------------------------------------------
    print(f"\nattention of position {position} ({tokens[position]!r}) over the prompt; "
          "later positions are masked (0.0)")
    header = " ".join(f"{t!r:>5}" for t in tokens)
    print(f"{'':<12} {header}")
    for layer, maps in enumerate(attention):
        for head in range(maps.shape[0]):
            weights = maps[head, position].tolist()
            print(f"{f'L{layer} head {head}':<12} " + " ".join(f"{w:5.2f}" for w in weights))

    # --- the next character ---------------------------------------------------------------------
    probs = tg.softmax(logits[0, -1], dim=-1)
    top = sorted(range(probs.shape[0]), key=lambda k: -float(probs[k]))[:5]
    print(f"\nnext character after {args.prompt!r}:")
    for k in top:
        print(f"  {tokenizer.decode([k])!r:>6}  {float(probs[k]):.3f}")

    save_heatmaps(attention, tokens, os.path.join(args.out, "attention.png"))
    return stream, attention, probs


def save_heatmaps(attention, tokens, path):
    """One heatmap per layer and head: query position down, key position across."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no heatmaps (pip install matplotlib)")
        return
    layers, heads = len(attention), attention[0].shape[0]
    labels = [t.replace(" ", "\u2423").replace("\n", "\\n") for t in tokens]  # visible blanks
    fig, axes = plt.subplots(layers, heads, figsize=(2.6 * heads, 2.6 * layers), squeeze=False)
    for layer, maps in enumerate(attention):
        for head in range(heads):
            ax = axes[layer][head]
            ax.imshow(maps[head].numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
            ax.set_title(f"layer {layer}, head {head}", fontsize=8)
            ax.set_xticks(range(len(labels)), labels, fontsize=6)
            ax.set_yticks(range(len(labels)), labels, fontsize=6)
    fig.suptitle("attention: query (row) -> key (column)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"\nattention heatmaps: {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
