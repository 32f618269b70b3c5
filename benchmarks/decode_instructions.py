"""Instructions per forward pass of a decoding step without the cache (generate_nocache's model,
benchmarks/torch_gpt.py, over T positions), by library, tensorgrad beside torch, counted by
valgrind's callgrind: where a forward's work goes (the interpreter, the products, the kernels,
NumPy, torch's C++), in figures that stay put on a machine too noisy to time a few percent.

    python benchmarks/decode_instructions.py                  # T=16, 10 forwards each
    python benchmarks/decode_instructions.py --positions 64

Only the counted forwards: callgrind collects inside itertools.starmap's next, which runs the
forwards and nothing else, so imports, warm-up and kernel loading are left out. One BLAS thread,
under inference_mode, as generate_nocache decodes. Needs valgrind and torch. Numba keys its disk
cache on the CPU, and valgrind's is another: the first run compiles the kernels for it (minutes
under valgrind), later runs load them.
"""
import argparse
import collections
import importlib.util
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile

if __package__ in (None, ""):  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FRAMEWORKS = ("tensorgrad", "torch")
# (row, what a library's path contains), first match wins; code with no file is JIT-compiled
GROUPS = (("Python interpreter", ("libpython",)),
          ("matrix products (MKL, OpenBLAS)", ("libmkl", "openblas")),
          ("torch's C++", ("libtorch", "libc10")),
          ("NumPy", ("numpy/",)),
          ("compiled kernels and Numba's runtime", ("numba/", "???")),
          ("C, C++ and OpenMP runtimes",
           ("libc.so", "libm.so", "ld-linux", "libstdc++", "libgomp")))
OTHER = "other"


def forwards(framework, positions, count):
    """Build GPT-mini in `framework`, warm it up, then run `count` forwards inside
    itertools.starmap (what callgrind counts); returns the last logits."""
    from benchmarks import interleaved
    from benchmarks.workloads.gpt_step import MINI

    user = interleaved._user_model_module(framework)
    torch = user.torch
    torch.manual_seed(0)
    model = user.GPT(user.Config(**{**MINI, "block_size": max(MINI["block_size"], positions)}))
    model.eval()
    ids = torch.randint(0, MINI["vocab_size"], (1, positions))
    with torch.inference_mode():
        for _ in range(5):  # warm-up, not counted: kernels loaded, lazily built tables
            model(ids)
        # each forward's result dropped as the next starts, as a decoding loop drops it
        last = collections.deque(itertools.starmap(model, [(ids,)] * count), maxlen=1)
    return last[0][0]


def _child(framework, positions, count):
    """The process valgrind runs: one thread everywhere, as measured, then the forwards."""
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"  # before NumPy and torch load their BLAS
    import tensorgrad
    tensorgrad.backend.tune_process()  # malloc and thread settings, as measured
    tensorgrad.set_num_threads(1)
    if framework == "torch":
        import torch
        torch.set_num_threads(1)
    forwards(framework, positions, count)


def by_library(callgrind_out):
    """{object file: instructions} from a callgrind output file: each function's own cost
    (the cost lines after a `calls=` line are the callee's inclusive cost, counted there)."""
    names, costs = {}, collections.Counter()
    current, after_call = None, False
    with open(callgrind_out) as f:
        for line in f:
            found = re.match(r"(c?ob)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if found:
                kind, key, name = found.groups()
                if name:
                    names[key] = name
                if kind == "ob":
                    current = names.get(key)
                continue
            if line.startswith("calls="):
                after_call = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                fields = line.split()
                if after_call:
                    after_call = False
                elif len(fields) >= 2:
                    costs[current] += int(fields[1])
    return costs


def grouped(costs):
    """The rows of GROUPS (and OTHER) with their instructions, from by_library's counts."""
    rows = collections.Counter()
    for library, count in costs.items():
        path = library or "???"
        row = next((row for row, marks in GROUPS if any(m in path for m in marks)), OTHER)
        rows[row] += count
    return rows


def instructions(framework, positions, calls):
    """grouped() instructions per forward of `framework`'s model over `positions` positions,
    counted over `calls` forwards."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--collect-atstart=no",
             "--toggle-collect=starmap_next", f"--callgrind-out-file={out}",
             sys.executable, os.path.abspath(__file__), "--child", framework, str(positions),
             str(calls)],
            capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{framework}'s counted run failed: {done.stderr.strip()[-800:]}")
        rows = grouped(by_library(out))
    return {row: n / calls for row, n in rows.items()}


def table(counts, positions):
    """Markdown: one row per library group, millions of instructions per forward."""
    order = [row for row, _ in GROUPS] + [OTHER]
    lines = [f"Instructions per forward at T={positions} (millions; callgrind, one thread)", "",
             "| where | " + " | ".join(counts) + " |", "|---|" + "---:|" * len(counts)]
    for row in order + ["total"]:
        cells = [(sum(c.values()) if row == "total" else c.get(row, 0)) / 1e6
                 for c in counts.values()]
        if any(cells):
            lines.append(f"| {row} | " + " | ".join(f"{x:.2f}" for x in cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=16, help="sequence length T")
    parser.add_argument("--forwards", type=int, default=10, help="forwards counted")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        framework, positions, count = args.child
        _child(framework, int(positions), int(count))
        return
    if shutil.which("valgrind") is None:
        sys.exit("decode_instructions.py needs valgrind (apt-get install valgrind)")
    frameworks = [f for f in FRAMEWORKS if f != "torch" or importlib.util.find_spec("torch")]
    if len(frameworks) < len(FRAMEWORKS):
        print("torch is not installed: tensorgrad's column alone", file=sys.stderr)
    counts = {f: instructions(f, args.positions, args.forwards) for f in frameworks}
    print(table(counts, args.positions))


if __name__ == "__main__":
    main()
