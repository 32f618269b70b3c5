"""Compile the CPU kernels ahead of time: `python -m tensorgrad.warmup [--dtype float64]`.

With Numba installed, the compiled kernels are built the first time a process on this machine
needs them and kept in Numba's disk cache. A run builds only the families of kernels it uses,
each in a background thread at the first op that could use it, while the op runs NumPy's code
(backend/kernel_loading.py); this command builds every family now instead, so that a benchmark
or a demo starts at full speed.

A family is what one op's compiled overrides share (the name before the dot in
`backend/overrides.py`: "layer_norm" for "layer_norm" and "layer_norm.vjp"). Its recipe below
runs that op forward and backward the way a Transformer training step calls it (a (B, T, C)
activation, heads sliced out of one projection), at a size that reaches the threaded twins of
the kernels and at decoding's tiny size that reaches the plain loops: each compiled signature a
run meets is built here. Its numbers come from `arange`, never from the random generator, so a
warm-up leaves a run's random stream as it was.
"""
import math
import sys
import time

from . import ops
from .autograd import enable_grad
from .creation import arange

SIZES = ((2, 64, 256), (1, 8, 32))  # (B, T, C): 32768 elements (the threaded loops), and tiny


def _weight(dtype, *shape, scale=0.1):
    n = math.prod(shape)
    return ((arange(n, dtype=dtype) * 0.731).sin() * scale).reshape(*shape).requires_grad_()


def _backward(y):
    """Backpropagate from y with a dense gradient (not the broadcast one of a bare sum)."""
    probe = _weight(y.dtype, *y.shape).detach()
    (y * probe).sum().backward()


def _embedding(dtype, B, T, C, vocab=64):
    ids = arange(B * T).reshape(B, T) % vocab
    _backward(ops.embedding(ids, _weight(dtype, vocab, C)))


def _linear(dtype, B, T, C):
    for x in (_weight(dtype, B, T, C), _weight(dtype, 1, C)):  # many rows, and one (decoding)
        _backward(ops.linear(x, _weight(dtype, 3 * C, C), _weight(dtype, 3 * C)))  # with a bias
        _backward(ops.linear(x, _weight(dtype, C, C)))


def _matmul(dtype, B, T, C):
    # the backend's large 2-D products, which MKL's GEMM makes from compiled code (kernels/
    # matmul.py `gemm`): a transposed weight forward, row- and column-major operands backward
    _backward(ops.matmul(_weight(dtype, B * T, C), _weight(dtype, 3 * C, C).mT))


def _layer_norm(dtype, B, T, C):
    _backward(ops.layer_norm(_weight(dtype, B, T, C), (C,), _weight(dtype, C), _weight(dtype, C)))


def _rms_norm(dtype, B, T, C):
    _backward(ops.rms_norm(_weight(dtype, B, T, C), (C,), _weight(dtype, C)))


def _gelu(dtype, B, T, C):
    x = _weight(dtype, B, T, 2 * C)
    _backward(ops.gelu(x, approximate="tanh"))
    _backward(ops.gelu(x))


def _relu(dtype, B, T, C):
    _backward(ops.relu(_weight(dtype, B, T, 2 * C)))


def _heads(qkv, heads):
    """q, k, v (B, heads, T, E) sliced out of one (B, T, 3C) projection, as views."""
    B, T, C = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
    return [t.reshape(B, T, heads, C // heads).transpose(1, 2) for t in qkv.split(C, dim=-1)]


def _attention(dtype, B, T, C, heads=2):
    q, k, v = _heads(_weight(dtype, B, T, 3 * C), heads)
    a = ops.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, heads, T, C/heads)
    _backward(a.transpose(1, 2).reshape(B, T, C))  # its gradient comes back a transposed view
    whole = k.contiguous()  # one query against every key, as decoding reads its cache:
    for keys in (whole[:, :, :T // 2 + 1], whole):  # the cache's views and whole arrays
        ops.scaled_dot_product_attention(q[:, :, :1], keys, keys)
    if T > 8:  # past one tile of queries and keys: the tiled loops, on views and whole arrays
        views = _heads(_weight(dtype, 1, 300, 3 * 32), heads)
        for q, k, v in (views, [_weight(dtype, 1, heads, 300, 16) for _ in range(3)]):
            _backward(ops.scaled_dot_product_attention(q, k, v, is_causal=True))


def _cross_entropy(dtype, B, T, C, vocab=256):
    logits = _weight(dtype, B * T * C // vocab, vocab)  # a language model's rows
    targets = arange(logits.shape[0]) % vocab
    ops.cross_entropy(logits, targets).backward()


def _adam_step(dtype, B, T, C):
    for shape in ((3 * C, C), (C,)):
        p = _weight(dtype, *shape).detach()
        ops.adam_step_(p, p * 0.5, p * 0, p * 0, step=1, lr=1e-3, weight_decay=0.1,
                       decoupled=True)


def _add_scaled(dtype, B, T, C):
    for shape in ((3 * C, C), (C,)):
        p = _weight(dtype, *shape).detach()
        p.add_(p * 0.5, alpha=-1e-3)  # SGD's update


RECIPES = {"embedding": _embedding, "linear": _linear, "matmul": _matmul,
           "layer_norm": _layer_norm, "rms_norm": _rms_norm, "gelu": _gelu, "relu": _relu,
           "attention": _attention,
           "cross_entropy": _cross_entropy, "adam_step": _adam_step, "add_scaled_": _add_scaled}


def run(family, dtype):
    """Run `family`'s recipe for `dtype` in this thread (grad mode on whatever the caller's)."""
    with enable_grad():
        for B, T, C in SIZES:
            RECIPES[family](dtype, B, T, C)


def main(argv=None):
    import argparse  # here: a run reads RECIPES at its first kernel, and needs no parser
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
