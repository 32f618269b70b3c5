"""Data-parallel training over MPI: steps/s of one process against two (one thread each), and
all_reduce's bandwidth against mpi4py's own call on the same buffers.

    .venv/bin/python benchmarks/distributed.py             # GPT-mini step, 1-100 MB, 3 rounds
    .venv/bin/python benchmarks/distributed.py --quick     # fewer sizes and repetitions
    .venv/bin/python benchmarks/distributed.py --tiny      # checks the harness (the test suite)
    .venv/bin/python benchmarks/distributed.py --only allreduce --rounds 5

Steps/s: a GPT-mini training step (forward, backward, clip, AdamW) on a global batch of
--batch-size windows: one plain process with the whole batch, then two processes under
`mpiexec -n 2`, each a DistributedDataParallel replica with half of it. Rounds alternate the
two (1, 2, 1, 2, ...) and the speed-up is the median of each round's ratio, so a slow spell on
a shared machine hits both sides. Every process runs one BLAS/OpenMP thread: two processes use
two cores where one uses one, which is the point of the comparison.

Bandwidth: on two ranks, `tensorgrad.distributed.all_reduce` of a float32 tensor and mpi4py's
`Allreduce(IN_PLACE, ...)` of a NumPy array of the same size take turns, each call after a
barrier. Bandwidth is the buffer's bytes over the time of one call (with two ranks, NCCL-tests'
"bus bandwidth" is the same number).
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # `python benchmarks/distributed.py` from anywhere

from benchmarks.timing import Budget, measure  # noqa: E402

MARK = "BENCHMARK-RESULT "
SIZES_MB = {"full": [1, 4, 16, 64, 100], "quick": [1, 10, 100], "tiny": [1]}
# Fixed repetition counts, never time limits: every rank must make the same calls, or one
# waits forever in a collective the others never start.
BUDGETS = {mode: Budget(warmup=warmup, min_reps=reps, max_reps=reps, min_time=0,
                        max_time=float("inf"))
           for mode, warmup, reps in (("full", 3, 30), ("quick", 2, 10), ("tiny", 1, 2))}
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                     "MKL_NUM_THREADS")}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true")
    size.add_argument("--tiny", action="store_true")
    p.add_argument("--rounds", type=int, default=None, help="default 3 (1 with --quick/--tiny)")
    p.add_argument("--batch-size", type=int, default=16, help="global batch of the step")
    p.add_argument("--only", choices=["steps", "allreduce"], help="one of the two parts")
    p.add_argument("--json", help="save every figure here")
    p.add_argument("--timeout", type=int, default=900, help="seconds per launch")
    p.add_argument("--worker", choices=["step", "allreduce"], help=argparse.SUPPRESS)
    p.add_argument("--mode", default="full", help=argparse.SUPPRESS)
    return p.parse_args(argv)


# --- workers (run under mpiexec) --------------------------------------------------------------
def step_worker(args):
    import tensorgrad as tg
    import tensorgrad.distributed as dist
    tg.backend.tune_process()  # malloc and thread settings, as measured
    from tensorgrad import nn
    from tensorgrad.models import GPT, GPTConfig

    dist.init()
    rank, world = dist.get_rank(), dist.get_world_size()
    tiny = args.mode == "tiny"
    config = GPTConfig.mini(vocab_size=96, block_size=16 if tiny else 64, n_layer=1 if tiny else 4,
                            n_head=2 if tiny else 4, n_embd=16 if tiny else 128,
                            d_ff=64 if tiny else 512, dropout=0.0)
    tg.manual_seed(0)
    model = GPT(config)
    replica = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    optimizer = nn.optim.AdamW(model.parameters(), lr=1e-3)
    rows = args.batch_size // world
    g = tg.Generator().manual_seed(1)
    ids = tg.randint(0, 96, (args.batch_size, config.block_size + 1), generator=g)
    x, y = ids[rank * rows:(rank + 1) * rows, :-1], ids[rank * rows:(rank + 1) * rows, 1:]

    def step():
        _, loss = replica(x, targets=y)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        dist.barrier()  # the step ends when the slowest rank's does

    stats = measure(step, BUDGETS[args.mode])
    if rank == 0:
        print(MARK + json.dumps({"processes": world, "seconds": stats}), flush=True)


def allreduce_worker(args):
    import numpy as np
    from mpi4py import MPI

    import tensorgrad as tg
    import tensorgrad.distributed as dist
    tg.backend.tune_process()  # malloc and thread settings, as measured

    dist.init()
    comm, budget, rows = MPI.COMM_WORLD, BUDGETS[args.mode], []
    for mb in SIZES_MB[args.mode]:
        n = mb * 2**20 // 4
        tensor, array = tg.zeros(n), np.zeros(n, dtype=np.float32)  # 0 + 0 stays finite
        calls = {"tensorgrad": lambda t=tensor: dist.all_reduce(t),
                 "mpi4py": lambda a=array: comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM)}
        # The two take turns call by call (in alternating order: ABBA...), each right after a
        # barrier (not timed), so that a slow spell of the machine falls on both.
        times = {name: [] for name in calls}
        for rep in range(budget.warmup + budget.max_reps):
            for name, call in list(calls.items())[::1 if rep % 2 else -1]:
                comm.Barrier()
                began = time.perf_counter()
                call()
                if rep >= budget.warmup:
                    times[name].append(time.perf_counter() - began)
        ratios = [a / b for a, b in zip(times["tensorgrad"], times["mpi4py"])]
        rows.append({"mb": mb, **{f"{name}_s": statistics.median(t) for name, t in times.items()},
                     "ratio": statistics.median(ratios)})
    if comm.Get_rank() == 0:
        print(MARK + json.dumps({"allreduce": rows}), flush=True)


# --- driver -----------------------------------------------------------------------------------
def launch(args, worker, processes, mode):
    mpiexec = pathlib.Path(sys.executable).parent / "mpiexec"
    mpiexec = str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec")
    if mpiexec is None:
        raise SystemExit("no mpiexec: pip install 'tensorgrad[distributed]' (or a system MPI)")
    command = [mpiexec, "-n", str(processes), sys.executable, __file__, "--worker", worker,
               "--mode", mode, "--batch-size", str(args.batch_size)]
    env = dict(os.environ, PYTHONPATH=str(ROOT), **ONE_THREAD)
    done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout,
                          env=env, cwd=ROOT)
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    if done.returncode or not lines:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n"
                         f"{done.stderr}")
    return json.loads(lines[-1][len(MARK):])


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return {"step": step_worker, "allreduce": allreduce_worker}[args.worker](args)
    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    rounds = args.rounds or (3 if mode == "full" else 1)
    print(f"benchmarks/distributed.py: {mode}, {rounds} round(s), global batch "
          f"{args.batch_size}, one thread per process, {os.cpu_count()} CPUs", file=sys.stderr)

    results = {"mode": mode, "rounds": rounds, "batch_size": args.batch_size}
    if args.only != "allreduce":
        results.update(steps_part(args, mode, rounds))
    if args.only != "steps":
        results.update(allreduce_part(args, mode, rounds))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return results


def steps_part(args, mode, rounds):
    steps = {1: [], 2: []}
    for r in range(rounds):
        for processes in (1, 2):
            print(f"  round {r + 1}: step on {processes} process(es)", file=sys.stderr)
            steps[processes].append(launch(args, "step", processes, mode)["seconds"])
    speedups = [one["median"] / two["median"] for one, two in zip(steps[1], steps[2])]
    print(f"\nGPT-mini training step, global batch {args.batch_size}, one thread per process "
          f"({rounds} round(s), median [min-max] of the rounds' medians)\n")
    print("| processes | steps/s | ms/step |")
    print("|---|---|---|")
    for processes, runs in steps.items():
        rates = sorted(1 / s["median"] for s in runs)
        print(f"| {processes} | {statistics.median(rates):.2f} [{rates[0]:.2f}-{rates[-1]:.2f}] "
              f"| {1e3 / statistics.median(rates):.1f} |")
    ordered = sorted(speedups)
    print(f"\nspeed-up, 2 processes over 1 (paired by round): {statistics.median(ordered):.2f}x "
          f"[{ordered[0]:.2f}-{ordered[-1]:.2f}]\n")
    return {"steps": steps, "speedup": speedups}


def allreduce_part(args, mode, rounds):
    print("  all_reduce bandwidth on 2 processes", file=sys.stderr)
    bandwidth = [launch(args, "allreduce", 2, mode)["allreduce"] for _ in range(rounds)]
    print("| MB | tensorgrad all_reduce GB/s | mpi4py Allreduce GB/s | time ratio (tg / mpi4py) |")
    print("|---|---|---|---|")
    table = []
    for i, mb in enumerate(SIZES_MB[mode]):
        gb = mb * 2**20 / 1e9
        rates = {name: sorted(gb / run[i][f"{name}_s"] for run in bandwidth)
                 for name in ("tensorgrad", "mpi4py")}
        ratios = sorted(run[i]["ratio"] for run in bandwidth)
        table.append({"mb": mb, **{f"{k}_gbps": statistics.median(v) for k, v in rates.items()},
                      "ratio": statistics.median(ratios)})
        cells = [f"{statistics.median(v):.2f} [{v[0]:.2f}-{v[-1]:.2f}]" for v in rates.values()]
        print(f"| {mb} | {cells[0]} | {cells[1]} | {statistics.median(ratios):.2f} "
              f"[{ratios[0]:.2f}-{ratios[-1]:.2f}] |")
    return {"allreduce": table, "allreduce_runs": bandwidth}


if __name__ == "__main__":
    main()
