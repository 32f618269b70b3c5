"""Compile the CPU kernels ahead of time: `python -m tensorgrad.warmup [--dtype float64]`.

With Numba installed, the compiled kernels are built the first time a process on this machine
needs them and kept in Numba's disk cache. On a cold cache a run starts on NumPy's code while a
background thread builds them (backend/kernel_loading.py); this command builds them now instead,
so that a benchmark or a demo starts at full speed.

What it runs is one small Transformer training step written in tensorgrad's ops: the embedding
and its gradient, linear layers, both norms, both GELUs, ReLU, softmax, attention (the whole-
matrix path and the tiled one), cross-entropy, and the AdamW and SGD updates, at a size that
reaches the threaded twins of the kernels when more than one thread is allowed and at a tiny
one that reaches the plain loops. Its numbers come from `arange`, never from the random
generator, so a warm-up leaves a run's random stream as it was.
"""
import argparse
import math
import sys
import time

from . import ops
from .autograd import enable_grad
from .creation import arange


def _weight(dtype, *shape, scale=0.1):
    n = math.prod(shape)
    return ((arange(n, dtype=dtype) * 0.731).sin() * scale).reshape(*shape).requires_grad_()


def _block(x, params, heads):
    """One pre-norm Transformer block on x (B, T, C)."""
    B, T, C = x.shape
    h = ops.layer_norm(x, (C,), params["ln1_w"], params["ln1_b"])
    q, k, v = ops.linear(h, params["qkv_w"], params["qkv_b"]).split(C, dim=-1)
    q, k, v = (t.reshape(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
    a = ops.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, heads, T, C/heads)
    x = x + ops.linear(a.transpose(1, 2).reshape(B, T, C), params["proj_w"])
    h = ops.rms_norm(x, (C,), params["ln2_w"])
    h = ops.gelu(ops.linear(h, params["fc_w"], params["fc_b"]), approximate="tanh")
    h = ops.relu(h) + ops.gelu(h)
    return x + ops.linear(h, params["out_w"])


def _training_step(dtype, batch, length, width, heads=2, vocab=64):
    params = {"wte": _weight(dtype, vocab, width), "ln1_w": _weight(dtype, width),
              "ln1_b": _weight(dtype, width), "qkv_w": _weight(dtype, 3 * width, width),
              "qkv_b": _weight(dtype, 3 * width), "proj_w": _weight(dtype, width, width),
              "ln2_w": _weight(dtype, width), "fc_w": _weight(dtype, 2 * width, width),
              "fc_b": _weight(dtype, 2 * width), "out_w": _weight(dtype, width, 2 * width)}
    ids = arange(batch * length).reshape(batch, length) % vocab
    x = ops.embedding(ids, params["wte"])
    logits = ops.linear(_block(x, params, heads), params["wte"])  # tied, as GPT's
    loss = ops.cross_entropy(logits.reshape(-1, vocab), ids.reshape(-1))
    loss = loss + ops.softmax(logits, dim=-1).mean()
    loss.backward()
    for p in params.values():
        ops.adam_step_(p.detach(), p.grad, p.detach() * 0, p.detach() * 0, step=1, lr=1e-3,
                       weight_decay=0.1, decoupled=True)
        p.detach().add_(p.grad, alpha=-1e-3)  # SGD's update


def step(dtype):
    """Run the warm-up step for `dtype` in this thread (grad mode on whatever the caller's)."""
    with enable_grad():
        _training_step(dtype, batch=2, length=64, width=256)  # threaded twins: 32768 elements
        _training_step(dtype, batch=1, length=8, width=32)  # the plain loops (decoding's size)
        # past one tile of queries and keys: the tiled attention loops
        q, k, v = (_weight(dtype, 1, 2, 300, 16) for _ in range(3))
        ops.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
        # one query against a cache's views and against whole arrays: decoding's loop
        for keys in (k[:, :, :40], k):
            ops.scaled_dot_product_attention(q[:, :, :1], keys, keys)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m tensorgrad.warmup", description=__doc__.split("\n\n")[1],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--dtype", action="append", choices=["float32", "float64"],
                        help="the dtype to compile for; repeat for both (default: float32)")
    args = parser.parse_args(argv)
    from .backend import kernel_loading
    if kernel_loading.load() is None:
        print("tensorgrad: no compiled kernels to build (Numba is not installed, or "
              "TENSORGRAD_NUMBA=0)")
        return 0
    for dtype in args.dtype or ["float32"]:
        start = time.perf_counter()
        print(f"tensorgrad: compiling CPU kernels for {dtype} ...", end=" ", flush=True)
        kernel_loading.warm_up(dtype)
        print(f"done in {time.perf_counter() - start:.1f} s (cached for later runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
