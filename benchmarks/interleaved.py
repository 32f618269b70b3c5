"""tensorgrad and torch in one process, their calls taking turns: a steadier ratio than run.py's.

    python benchmarks/interleaved.py                    # gpt_step, mlp_step, generate (B=1, B=8)
    python benchmarks/interleaved.py --only generate_user,generate_nocache --threads 2
    python benchmarks/interleaved.py --only generate_nocache --full --pairs 10   # 256 tokens
    python benchmarks/interleaved.py --only gpt_step --pairs 50
    python benchmarks/interleaved.py --only attention --pairs 10 --threads 2   # T=4096

run.py gives each framework a process of its own (so that a memory figure is that framework's
alone) and pairs rounds taken seconds to minutes apart. On a machine whose speed drifts by tens
of percent within a minute, as the 2-core virtual machine these figures come from does, such a
ratio still moves by 10-20% from one run to the next. Here both frameworks live in one process
and each pair of calls (tensorgrad's, then torch's, the same workload code and inputs as run.py's)
is over within a second, so a drift slows both alike; the figure is the median of the pairs'
ratios, with its quartiles. What this gives up: the frameworks share the process (its caches, its
allocator policy, the libraries loaded), which is how neither runs for a user. run.py stays the
measurement of record; this one says whether a ratio that run.py scatters around 1 is above or
below it. At more than one thread the two frameworks share one GNU OpenMP runtime. Numba's
OpenMP layer turned nested parallel regions on in it as it started, and torch's decoding then took
20 times its one-thread time here, until tensorgrad put that setting back
(tests/tensorgrad/test_threaded_kernels.py). torch's GEMM calls, in a process where tensorgrad
loaded the mkl wheel first, were seen in a debugger running in that wheel's library, not in
torch's own copy of MKL: another way in which one process is not how either runs.
"""
import argparse
import importlib.util
import os
import statistics
import sys
import time

if __package__ in (None, ""):  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FRAMEWORKS = ("tensorgrad", "torch")
WORKLOADS = ("gpt_step", "mlp_step", "generate", "generate_user", "generate_nocache", "attention")
DEFAULT = ("gpt_step", "mlp_step", "generate")  # attention at T=4096 takes a minute more


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(DEFAULT),
                        help=f"workloads, comma-separated, from {','.join(WORKLOADS)} "
                             f"(default: {','.join(DEFAULT)})")
    parser.add_argument("--pairs", type=int, default=30, help="timed pairs per case (default 30)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS and torch threads (default 1)")
    parser.add_argument("--tiny", action="store_true", help="toy sizes (checks the script)")
    parser.add_argument("--full", action="store_true",
                        help="run.py's full sizes (generate: 256 tokens) instead of --quick's")
    args = parser.parse_args(argv)
    names = args.only.split(",")
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; expected some of "
                     f"{', '.join(WORKLOADS)}")
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(args.threads)  # before NumPy or torch load a BLAS
    mode = "tiny" if args.tiny else "full" if args.full else "quick"
    rows = [result for name in names for result in _CASES[name](mode, args.pairs)]
    print(table(rows, args.threads))
    return rows


def _envs(mode):
    from benchmarks.workloads import Env
    return {f: Env(f, "cpu", mode) for f in FRAMEWORKS}  # each seeded: the same inputs


def _gpt_step(mode, pairs):
    from benchmarks.workloads import gpt_step

    config, batch = gpt_step.SIZES[mode]
    calls = {}
    for f, env in _envs(mode).items():
        step = gpt_step._STEPS[f](env, config)
        idx = env.randint(config["vocab_size"], batch, config["block_size"])
        targets = env.randint(config["vocab_size"], batch, config["block_size"])
        calls[f] = lambda step=step, idx=idx, targets=targets: step(idx, targets)
    return [_timed("gpt_step", f"B={batch} T={config['block_size']}", "ms/step", calls, pairs)]


def _mlp_step(mode, pairs):
    from benchmarks.workloads import mlp_step

    sizes, batch = mlp_step.SIZES[mode]
    calls = {}
    for f, env in _envs(mode).items():
        step = mlp_step._STEPS[f](env, sizes)
        x, y = env.randn(batch, sizes[0]), env.randint(sizes[-1], batch)
        calls[f] = lambda step=step, x=x, y=y: step(x, y)
    return [_timed("mlp_step", f"B={batch}", "ms/step", calls, pairs)]


def _generate(mode, pairs):
    """Greedy decoding with the KV cache, against torch's preallocated cache (run.py's target
    row); the figure is tokens/s, so the ratio is torch's time over tensorgrad's."""
    from benchmarks.workloads import generate

    config, prompt_len, new, batches = generate.SIZES[mode]
    config = {**config, "block_size": max(config["block_size"], prompt_len + new)}
    envs = _envs(mode)
    decoders = {f: generate._GENERATORS[f](env, config) for f, env in envs.items()}
    rows = []
    for batch in batches:
        calls = {}
        for f, env in envs.items():
            prompt = env.randint(config["vocab_size"], batch, prompt_len)
            calls[f] = lambda d=decoders[f], p=prompt: d(p, new, True, True)
        rows.append(_timed("generate", f"B={batch} KV cache, torch static", "ms/call", calls,
                           pairs, higher_is_better=True))
    return rows


def _generate_user(mode, pairs, use_cache=True):
    """The PyTorch-style GPT-mini decoding of run.py's generate_user (use_cache) and
    generate_nocache rows: benchmarks/torch_gpt.py loaded twice, once with `import torch`
    giving tensorgrad (tensorgrad.as_torch) and once giving torch."""
    from benchmarks.workloads import generate_user

    config, prompt_len, new = generate_user.SIZES[mode]
    calls = {}
    for f, env in _envs(mode).items():
        user = _user_model_module(f)
        model = user.GPT(user.Config(**{**config, "block_size": prompt_len + new})).eval()
        prompt = env.randint(config["vocab_size"], 1, prompt_len)

        def decode(user=user, model=model, prompt=prompt):
            with user.torch.inference_mode():
                return model.generate(prompt, new, use_cache=use_cache, static_cache=use_cache)
        calls[f] = decode
    name, case = (("generate_user", "B=1 KV cache, static") if use_cache
                  else ("generate_nocache", "B=1 no cache"))
    return [_timed(name, case, "ms/call", calls, pairs, higher_is_better=True)]


def _user_model_module(framework):
    """A fresh copy of benchmarks/torch_gpt.py, unchanged user code, whose `import torch` gave
    `framework`: for tensorgrad, as_torch is installed for that one import, with the real torch's
    modules (imported by now for the other side) set aside meanwhile and put back after."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_gpt.py")
    spec = importlib.util.spec_from_file_location(f"benchmarks.torch_gpt_on_{framework}", path)
    module = importlib.util.module_from_spec(spec)
    if framework != "tensorgrad":
        spec.loader.exec_module(module)
        return module
    import warnings

    import tensorgrad.as_torch
    real = {name: sys.modules.pop(name) for name in list(sys.modules)
            if name == "torch" or name.startswith("torch.")}
    try:
        with warnings.catch_warnings():  # it says an installed PyTorch is shadowed: meant here
            warnings.simplefilter("ignore")
            tensorgrad.as_torch.install()
        spec.loader.exec_module(module)
    finally:
        tensorgrad.as_torch.uninstall()
        sys.modules.update(real)
    if not module.torch.__name__.startswith("tensorgrad"):
        raise RuntimeError("interleaved generate_user: the model module did not get tensorgrad")
    return module


def _attention(mode, pairs):
    """Causal attention forward + backward at the target length (benchmarks/attention.py's
    step, against torch's fused scaled_dot_product_attention)."""
    from benchmarks import attention

    T = 320 if mode == "tiny" else 4096  # tiny: still past one tile, the tiled path
    calls = {"tensorgrad": attention.step_for("tensorgrad", T),
             "torch": attention.step_for("torch sdpa", T)}
    return [_timed("attention", f"T={T} causal fwd+bwd", "ms/step", calls, pairs)]


_CASES = {"gpt_step": _gpt_step, "mlp_step": _mlp_step, "generate": _generate,
          "generate_user": _generate_user,
          "generate_nocache": lambda mode, pairs: _generate_user(mode, pairs, use_cache=False),
          "attention": _attention}


def _timed(workload, case, unit, calls, pairs, higher_is_better=False):
    """Warm both up, then `pairs` times: tensorgrad's call, torch's call. The ratio of a pair is
    tensorgrad's time over torch's (torch's over tensorgrad's for a throughput)."""
    for _ in range(3):
        for f in FRAMEWORKS:
            calls[f]()
    times = {f: [] for f in FRAMEWORKS}
    ratios = []
    for _ in range(pairs):
        spent = {}
        for f in FRAMEWORKS:
            started = time.perf_counter()
            calls[f]()
            spent[f] = time.perf_counter() - started
            times[f].append(spent[f])
        ratio = spent["tensorgrad"] / spent["torch"]
        ratios.append(1 / ratio if higher_is_better else ratio)
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    return {"workload": workload, "case": case, "unit": unit, "pairs": pairs,
            "metric": "tokens/s" if higher_is_better else "time",
            **{f: statistics.median(times[f]) * 1e3 for f in FRAMEWORKS},
            "ratio": statistics.median(ratios), "q1": quartiles[0], "q3": quartiles[-1]}


def table(rows, threads):
    """Markdown: one row per case, the frameworks' median times and the pairs' ratio."""
    lines = [f"tensorgrad and torch in one process, calls taking turns; {threads} thread(s); "
             "tg/torch is the median of the pairs' ratios [quartiles], of times (tokens/s for "
             "generate rows)", "",
             "| workload | case | tensorgrad ms | torch ms | tg/torch | pairs |",
             "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['workload']} | {r['case']} | {r['tensorgrad']:.3g} | "
                     f"{r['torch']:.3g} | {r['ratio']:.3f} [{r['q1']:.3f}-{r['q3']:.3f}] "
                     f"{r['metric']} | {r['pairs']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
