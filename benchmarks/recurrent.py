"""Two measurements for PyTorch's modules in tensorgrad:

- lstm: nn.LSTM forward + backward, tensorgrad against PyTorch eager on the same shapes (float32,
  batch-first, one process, taking turns); prints each median and the ratio.
- checkpoint: a GPT training step's memory with and without config.gradient_checkpointing: the
  bytes the graph keeps after the forward (the saved activations) and the peak over forward +
  backward, both from tracemalloc (NumPy reports its arrays to it).

    .venv/bin/python benchmarks/recurrent.py                  # both, default sizes
    .venv/bin/python benchmarks/recurrent.py --only lstm --threads 1
    .venv/bin/python benchmarks/recurrent.py --tiny           # toy sizes: checks it runs

Figures: benchmarks/README.md, "Recurrent layers and activation checkpointing".
"""
import argparse
import gc
import os
import sys
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.timing import FULL, TINY, measure  # noqa: E402

LSTM_SIZES = {"full": [(32, 64, 128, 256, 1), (32, 64, 128, 256, 2)],  # B, T, in, hidden, layers
              "tiny": [(2, 3, 4, 5, 1)]}
GPT_SIZES = {"full": dict(n_layer=8, n_head=4, n_embd=256, block_size=256, batch=8),
             "tiny": dict(n_layer=2, n_head=2, n_embd=16, block_size=16, batch=2)}


def lstm_step(framework, B, T, C, H, layers):
    """One forward + backward of an LSTM in `framework` (tensorgrad or torch), as a callable."""
    if framework == "torch":
        import torch as fw
    else:
        import tensorgrad as fw
    fw.manual_seed(0)
    lstm = fw.nn.LSTM(C, H, num_layers=layers, batch_first=True)
    x = fw.randn(B, T, C)

    def step():
        for p in lstm.parameters():
            p.grad = None
        out, _ = lstm(x)
        out.sum().backward()
    return step


def run_lstm(sizes, budget):
    print("| LSTM (B, T, in, hidden, layers) | tensorgrad ms | torch ms | ratio |")
    print("|---|---:|---:|---:|")
    for shape in sizes:
        times = {fw: measure(lstm_step(fw, *shape), budget)["median"] * 1e3
                 for fw in ("tensorgrad", "torch")}
        print(f"| {shape} | {times['tensorgrad']:.1f} | {times['torch']:.1f} | "
              f"{times['tensorgrad'] / times['torch']:.2f} |")


def gpt_memory(checkpointing, n_layer, n_head, n_embd, block_size, batch):
    """(bytes kept after the forward, peak bytes over forward + backward) of one GPT step."""
    import tensorgrad as tg
    from tensorgrad.models import GPT, GPTConfig
    tg.manual_seed(0)
    config = GPTConfig(vocab_size=256, n_layer=n_layer, n_head=n_head, n_embd=n_embd,
                       block_size=block_size, dropout=0.1, attn_dropout=0.1,
                       gradient_checkpointing=checkpointing)
    model = GPT(config)
    ids = tg.randint(0, 256, (batch, block_size))
    model(ids, targets=ids)[1].backward()  # warm-up: first-call caches are not activations
    model.zero_grad()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    _, loss = model(ids, targets=ids)
    kept = tracemalloc.get_traced_memory()[0] - before
    loss.backward()
    peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    return kept, peak


def run_checkpoint(sizes):
    print(f"\nGPT step {sizes}, float32: memory from tracemalloc")
    print("| gradient_checkpointing | kept after forward MB | peak forward+backward MB |")
    print("|---|---:|---:|")
    for flag in (False, True):
        kept, peak = gpt_memory(flag, **sizes)
        print(f"| {flag} | {kept / 2**20:.1f} | {peak / 2**20:.1f} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["lstm", "checkpoint"])
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--threads", type=int, help="BLAS and torch threads")
    args = parser.parse_args(argv)
    if args.threads:
        import threadpoolctl

        import tensorgrad
        threadpoolctl.threadpool_limits(args.threads)
        tensorgrad.set_num_threads(args.threads)  # its MKL is loaded apart from threadpoolctl's
        try:
            import torch
            torch.set_num_threads(args.threads)
        except ImportError:
            pass
    size = "tiny" if args.tiny else "full"
    if args.only in (None, "lstm"):
        run_lstm(LSTM_SIZES[size], TINY if args.tiny else FULL)
    if args.only in (None, "checkpoint"):
        run_checkpoint(GPT_SIZES[size])


if __name__ == "__main__":
    main()
