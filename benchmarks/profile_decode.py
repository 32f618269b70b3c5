"""Where one decoded token's time goes: GPT-mini greedy decoding with the KV cache (the generate
workload), tensorgrad's calls per token and the step's ops timed alone beside PyTorch's.

    python benchmarks/profile_decode.py              # B=1, one thread
    python benchmarks/profile_decode.py --batch 8
    python benchmarks/profile_decode.py --quick      # fewer tokens and repetitions (a test runs it)
    python benchmarks/profile_decode.py --positions 48   # part 2 at a no-cache step's shapes

Part 1 decodes 64 tokens (--quick: 16) with `models.generate` and counts, per token, the
primitive calls by name and the module calls (`Module.__call__`). Part 2 times each op of a
decoding step alone, at the shapes it has there (B rows, one new position, 48 cached keys), in
tensorgrad under no_grad and in torch under torch.no_grad, both in this process: microseconds
per call, the minimum over repeats of CPU time (time.process_time, steadier on a shared machine
than the wall clock). The last column multiplies tensorgrad's and torch's difference by the
op's count per token (GPT-mini: 4 layers). Ops timed alone run with warm caches: inside a step
each is slower. Prints markdown tables; torch's column is left out without torch.

--positions T times part 2's ops as a decoding step without the cache runs them (the
generate_nocache workload): on all T positions of the sequence so far, the attention causal
over them.

--user adds the generic ops that benchmarks/torch_gpt.py's decoding step (the generate_user
workload: PyTorch-style code with its own static cache) calls beside those: split, view,
transpose, the cache's slice writes and reads, argmax and cat, counted per token from its code.
"""
import argparse
import collections
import os
import sys
import time

if __package__ in (None, ""):  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

C, HEADS, D_FF, VOCAB, CACHED = 128, 4, 512, 256, 48  # GPT-mini's widths; keys already cached


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1, help="rows decoded together (default 1)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--user", action="store_true",
                        help="also time generate_user's generic ops (benchmarks/torch_gpt.py)")
    parser.add_argument("--positions", type=int, default=1,
                        help="positions each op of part 2 runs on: 1 with the cache (default), "
                             "the sequence's length without it (generate_nocache)")
    args = parser.parse_args(argv)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, str(args.threads))  # before NumPy loads BLAS
    primitives, modules = count_calls(args.batch, tokens=16 if args.quick else 64)
    print(f"## Calls per decoded token (B={args.batch})\n")
    print(f"{sum(primitives.values()):.0f} primitive calls ("
          + ", ".join(f"{name} {n:g}" for name, n in primitives.most_common())
          + f"), {modules:.0f} module calls\n")
    repeats, calls = (3, 300) if args.quick else (9, 2000)
    title = ("One decoding step's ops alone" if args.positions == 1 else
             f"One no-cache decoding step's ops alone, T={args.positions}")
    print(op_table(lambda lib, batch: _ops(lib, batch, args.positions), title, args.batch,
                   repeats, calls, args.threads))
    if args.user:
        print()
        print(op_table(_user_ops, "torch_gpt.py's generic ops alone (generate_user)", args.batch,
                       repeats, calls, args.threads))


def count_calls(batch, tokens=64):
    """({primitive name: calls per token}, module calls per token) of greedy decoding."""
    import tensorgrad as tg
    tg.backend.tune_process()  # malloc and thread settings, as measured
    from tensorgrad import nn
    from tensorgrad.autograd import Primitive
    from tensorgrad.models import GPT, GPTConfig, generate

    model = GPT(GPTConfig.mini(block_size=16 + tokens)).eval()
    prompt = tg.randint(0, VOCAB, (batch, 16))
    primitives, modules = collections.Counter(), [0]
    primitive_call, module_call = Primitive.__call__, nn.Module.__call__

    def counted_primitive(self, *args, **kwargs):
        primitives[self.name] += 1
        return primitive_call(self, *args, **kwargs)

    def counted_module(self, *args, **kwargs):
        modules[0] += 1
        return module_call(self, *args, **kwargs)

    def decode(new):
        primitives.clear()
        modules[0] = 0
        generate(model, prompt, new, temperature=0.0)
        return collections.Counter(primitives), modules[0]

    Primitive.__call__, nn.Module.__call__ = counted_primitive, counted_module
    try:  # the difference of two lengths leaves the prompt's forward out
        (short, short_modules), (long, long_modules) = decode(1), decode(1 + tokens)
    finally:
        Primitive.__call__, nn.Module.__call__ = primitive_call, module_call
    per_token = collections.Counter({k: (long[k] - short[k]) / tokens for k in long})
    return +per_token, (long_modules - short_modules) / tokens


def _ops(lib, batch, positions=1):
    """{op: (calls per token, thunk)} of one decoding step, in tensorgrad ("tg") or torch: on
    one new position over the cached keys, or without the cache on all `positions`."""
    make = _library(lib)
    nn = make.nn
    F, randn = nn.functional, make.randn
    x, h = randn(batch, positions, C), randn(batch, positions, D_FF)
    qkv = randn(batch, positions, 3 * C)
    cache = randn(batch, HEADS, 2 * CACHED, C // HEADS)
    if positions == 1:  # one query over the cached keys
        q, keys, causal = randn(batch, HEADS, 1, C // HEADS), cache[:, :, :CACHED], False
    else:  # every position attends to those before it
        q = keys = randn(batch, HEADS, positions, C // HEADS)
        causal = True
    ids = make.zeros(batch, 1, dtype=make.int64)
    qkv_proj, out_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
    up, down, head = nn.Linear(C, D_FF), nn.Linear(D_FF, C), nn.Linear(C, VOCAB, bias=False)
    norm, table = nn.LayerNorm(C), nn.Embedding(VOCAB, C)
    return {
        "Linear 128->384 (qkv)": (4, lambda: qkv_proj(x)),
        "Linear 128->512 (up)": (4, lambda: up(x)),
        "Linear 512->128 (down)": (4, lambda: down(h)),
        "Linear 128->128 (out_proj)": (4, lambda: out_proj(x)),
        "Linear 128->256 (tied head)": (1, lambda: head(x)),
        "LayerNorm(128)": (9, lambda: norm(x)),
        "Embedding(256, 128)": (2, lambda: table(ids)),
        "tanh-GELU (512)": (4, lambda: F.gelu(h, approximate="tanh")),
        "scaled_dot_product_attention": (4, lambda: F.scaled_dot_product_attention(
            q, keys, keys, is_causal=causal)),
        "add (residual)": (9, lambda: x + x),
        "reshape into heads": (4, lambda: qkv.reshape(batch, positions, 3 * HEADS,
                                                      C // HEADS)),
        "slice (q/k/v, cache views)": (20, lambda: cache[:, :, :CACHED]),
    }


def _user_ops(lib, batch):
    """{op: (calls per token, thunk)} of the ops benchmarks/torch_gpt.py's decoding step calls
    besides _ops' (4 layers: per layer one split, three views and four transposes, two cache
    writes and two cache reads; per token one argmax and one cat)."""
    make = _library(lib)
    hs = C // HEADS
    qkv, q = make.randn(batch, 1, 3 * C), make.randn(batch, 1, C)
    heads, new = make.randn(batch, HEADS, 1, hs), make.randn(batch, HEADS, 1, hs)
    cache, logits = make.zeros(batch, HEADS, 2 * CACHED, hs), make.randn(batch, 1, VOCAB)
    ids, token = make.zeros(batch, 16, dtype=make.int64), make.zeros(batch, 1, dtype=make.int64)

    def write():
        cache[:, :, CACHED:CACHED + 1] = new

    return {
        "split into q, k, v": (4, lambda: qkv.split(C, dim=2)),
        "view into heads": (12, lambda: q.view(batch, 1, HEADS, hs)),
        "transpose(1, 2)": (16, lambda: heads.transpose(1, 2)),
        "cache write (slice assignment)": (8, write),
        "cache read (slice)": (8, lambda: cache[:, :, :CACHED + 1]),
        "argmax of the last logits": (1, lambda: logits[:, -1].argmax(dim=-1, keepdim=True)),
        "cat the token to the ids": (1, lambda: make.cat([ids, token], dim=1)),
    }


def _library(lib):
    """tensorgrad (with its nn loaded) for "tg", else torch."""
    if lib == "tg":
        import tensorgrad.nn
        return tensorgrad
    import torch
    return torch


def op_table(ops_of, title, batch, repeats, calls, threads):
    libs = ["tg"]
    try:
        import torch
        torch.set_num_threads(threads)
        libs.append("torch")
    except ImportError:
        pass
    import tensorgrad as tg
    tg.backend.tune_process()  # malloc and thread settings, as measured
    times = {}
    for lib in libs:
        ops = ops_of(lib, batch)
        guard = tg.no_grad() if lib == "tg" else torch.no_grad()
        with guard:
            for name, (count, thunk) in ops.items():
                times[lib, name] = (count, best_of(thunk, repeats, calls))
    lines = [f"## {title} (B={batch}), µs per call", "",
             "| op | per token | tensorgrad | torch | (tg - torch) x per token |",
             "|---|---:|---:|---:|---:|"]
    total = 0.0
    for (lib, name), (count, tg_us) in times.items():
        if lib != "tg":
            continue
        torch_us = times.get(("torch", name), (count, None))[1]
        gap = "" if torch_us is None else f"{(tg_us - torch_us) * count:+.0f}"
        total += 0.0 if torch_us is None else (tg_us - torch_us) * count
        lines.append(f"| {name} | {count} | {tg_us:.1f} | "
                     f"{'-' if torch_us is None else f'{torch_us:.1f}'} | {gap} |")
    if "torch" in libs:
        lines.append(f"| **sum** | | | | **{total:+.0f} µs** |")
    return "\n".join(lines)


def best_of(thunk, repeats, calls):
    """The least CPU time per call, in µs, over `repeats` runs of `calls` calls."""
    thunk()
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(calls):
            thunk()
        best = min(best, (time.process_time() - start) / calls)
    return best * 1e6


if __name__ == "__main__":
    main()
