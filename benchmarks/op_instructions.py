"""Instructions per op of op_overhead's chain, counted by valgrind's callgrind: a steady figure
for the per-op cost on a machine too noisy to time a few microseconds (run.py's op_overhead).

    python benchmarks/op_instructions.py            # forward and forward+backward, 2,000 ops
    python benchmarks/op_instructions.py --ops 200  # quicker

The chain is op_overhead's: y = y * 1.0001 + 0.0001 on 16 float32 elements, from a leaf that
requires grad; "alive" keeps the previous chain's result while the next is built (run.py's
"result alive" case: the cyclic GC's passes over a live graph show up in the count);
forward+backward adds y.sum().backward(). Only the timed calls are counted:
callgrind collects inside functools.reduce, which runs the chain and nothing else, so imports
and warm-up are left out. TENSORGRAD_NUMBA=0 keeps the JIT out of the count. Needs valgrind.
"""
import argparse
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile

CHAIN = 100  # steps per chain, two ops each (op_overhead's 200 ops)


def _child(mode, chains):
    """Run `chains` chains inside functools.reduce (what callgrind counts); returns the leaf."""
    import tensorgrad as tg
    tg.backend.tune_process()  # malloc and thread settings, as measured
    x = tg.randn(16, requires_grad=True)

    def forward():
        y = x
        for _ in range(CHAIN):
            y = y * 1.0001 + 0.0001
        return y

    def forward_backward():
        x.grad = None
        forward().sum().backward()

    kept = [None]

    def forward_kept():  # the previous chain's result alive while the next is built (res = fn())
        kept[0] = forward()

    run = {"fwd": forward, "alive": forward_kept, "fwd+bwd": forward_backward}[mode]
    for _ in range(5):  # warm-up, not counted: caches, lazily built tables
        run()
    functools.reduce(lambda _, __: run(), range(chains), None)
    return x


def count(mode, ops):
    """Instructions per op for `mode` ('fwd', 'alive': fwd with the previous result kept, or
    'fwd+bwd') over `ops` ops."""
    chains = max(1, ops // (2 * CHAIN))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        env = dict(os.environ, TENSORGRAD_NUMBA="0")
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--collect-atstart=no",
             "--toggle-collect=functools_reduce", f"--callgrind-out-file={out}",
             sys.executable, os.path.abspath(__file__), "--child", mode, str(chains)],
            env=env, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    return int(found.group(1)) / (chains * 2 * CHAIN)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=2000, help="ops counted per mode")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], int(args.child[1]))
        return
    if shutil.which("valgrind") is None:
        sys.exit("op_instructions.py needs valgrind (apt-get install valgrind)")
    print("| mode | instructions per op |\n|---|---:|")
    for mode in ("fwd", "alive", "fwd+bwd"):
        print(f"| {mode} | {count(mode, args.ops):,.0f} |")


if __name__ == "__main__":
    main()
