"""Where the time goes in one gpt_step: forward, backward and optimizer, per op family.

    python benchmarks/profile_step.py                 # GPT-mini, B=16, T=128, 10 steps, 1 thread
    python benchmarks/profile_step.py --steps 20 --cpu --json profile.json

The same step as the gpt_step workload (benchmarks/workloads/gpt_step.py: GPT-mini, AdamW). Every
primitive's array-level forward and every VJP rule is timed (a wrapper around each, two clock
reads a call); a primitive's family is the tensorgrad/ops file it is defined in (matmul: linear
and matmul; layer_norm; attention; activation; loss; index: embedding and slicing; ...). A VJP is
timed whole, the ops it calls included, under its primitive's family. What a phase spends
outside them is the Python around the arrays: modules, op wrappers, dispatch, graph recording
(forward) and the engine's walk (backward). The optimizer phase is AdamW's step (one fused
kernel per parameter when Numba is on). Figures are per step, the median over --steps steps
after two warm-up steps. Prints a markdown table.
"""
import argparse
import collections
import json
import os
import statistics
import sys
import time

if __package__ in (None, ""):  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="timed steps (default 10)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    parser.add_argument("--cpu", action="store_true",
                        help="CPU time of this process (time.process_time) instead of wall "
                             "time: steadier on a machine shared with other work")
    parser.add_argument("--tiny", action="store_true", help="toy sizes (checks the script)")
    parser.add_argument("--json", metavar="PATH", help="also save the figures as JSON")
    args = parser.parse_args(argv)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, str(args.threads))  # before NumPy loads BLAS
    profile = Profile(time.process_time if args.cpu else time.perf_counter)
    per_step = profile.run(args.steps, args.tiny)
    print(table(per_step, "CPU" if args.cpu else "wall"))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(per_step, f, indent=1)


class Profile:
    """Wraps every primitive's forward and VJP to add its time to (phase, family)."""

    def __init__(self, clock):
        self.clock = clock
        self.phase = "forward"
        self.inside_vjp = False
        self.spent = collections.Counter()

    def run(self, steps, tiny):
        import tensorgrad as tg
        tg.backend.tune_process()  # malloc and thread settings, as measured
        from tensorgrad import nn
        from tensorgrad.autograd import PRIMITIVES
        from tensorgrad.models import GPT, GPTConfig
        from benchmarks.workloads.gpt_step import LR, SIZES, WEIGHT_DECAY

        config, batch = SIZES["tiny" if tiny else "full"]
        tg.manual_seed(0)
        model = GPT(GPTConfig.mini(**config))
        optimizer = nn.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
        idx, targets = (tg.randint(0, config["vocab_size"], (batch, config["block_size"]))
                        for _ in range(2))
        originals = {name: (prim.forward, prim.vjp) for name, prim in PRIMITIVES.items()}
        for prim in PRIMITIVES.values():
            self._wrap(prim)
        try:
            return _medians(self._steps(steps, model, optimizer, idx, targets))
        finally:  # the primitives as they were (the tests run this in their own process)
            for name, (forward, vjp) in originals.items():
                PRIMITIVES[name].forward, PRIMITIVES[name].vjp = forward, vjp

    def _steps(self, steps, model, optimizer, idx, targets):
        rows = []
        for step in range(steps + 2):
            self.spent.clear()
            phases = {}
            loss = self._timed(phases, "forward", lambda: model(idx, targets)[1])
            self._timed(phases, "backward", loss.backward)
            self._timed(phases, "optimizer", lambda: (optimizer.step(), optimizer.zero_grad()))
            if step >= 2:  # two warm-up steps: compilation, first allocations
                rows.append((phases, dict(self.spent)))
        return rows

    def _timed(self, phases, phase, work):
        self.phase = phase
        started = self.clock()
        out = work()
        phases[phase] = self.clock() - started
        return out

    def _wrap(self, prim):
        family = prim.forward.__module__.rsplit(".", 1)[-1]
        forward, vjp = prim.forward, prim.vjp

        def timed_forward(*args, **attrs):
            if self.inside_vjp:  # counted in the VJP that called it
                return forward(*args, **attrs)
            started = self.clock()
            try:
                return forward(*args, **attrs)
            finally:
                self.spent[self.phase, family] += self.clock() - started

        def timed_vjp(ctx, g):
            if self.inside_vjp:  # a VJP run by a composite's VJP: counted in the outer one
                return vjp(ctx, g)
            self.inside_vjp = True
            started = self.clock()
            try:
                return vjp(ctx, g)
            finally:
                self.spent[self.phase, family] += self.clock() - started
                self.inside_vjp = False

        prim.forward = timed_forward
        if vjp is not None:
            prim.vjp = timed_vjp


def _medians(rows):
    """{phase: {"total": ms, "families": {family: ms}}}, each the median over the steps."""
    out = {}
    for phase in rows[0][0]:
        families = sorted({f for _, spent in rows for p, f in spent if p == phase})
        out[phase] = {
            "total": statistics.median(r[0][phase] for r in rows) * 1e3,
            "families": {f: statistics.median(r[1].get((phase, f), 0.0) for r in rows) * 1e3
                         for f in families}}
    return out


def table(per_step, clock):
    """Markdown: one row per op family, ms per step in the forward and the backward."""
    phases = ("forward", "backward")
    families = sorted({f for p in phases for f in per_step[p]["families"]},
                      key=lambda f: -sum(per_step[p]["families"].get(f, 0.0) for p in phases))
    total = sum(v["total"] for v in per_step.values())
    lines = [f"{clock} time per step: {total:.1f} ms (median of the steps)", "",
             "| where | forward ms | backward ms | share |", "|---|---:|---:|---:|"]
    for f in families:
        ms = [per_step[p]["families"].get(f, 0.0) for p in phases]
        lines.append(f"| ops/{f}.py | {ms[0]:.1f} | {ms[1]:.1f} | {sum(ms) / total:.0%} |")
    outside = [per_step[p]["total"] - sum(per_step[p]["families"].values()) for p in phases]
    lines.append(f"| Python outside the primitives (modules, wrappers, dispatch, graph / "
                 f"engine) | {outside[0]:.1f} | {outside[1]:.1f} | {sum(outside) / total:.0%} |")
    lines.append(f"| **phase total** | **{per_step['forward']['total']:.1f}** | "
                 f"**{per_step['backward']['total']:.1f}** | |")
    opt = per_step["optimizer"]["total"]
    lines.append(f"| optimizer (AdamW step + zero_grad) | {opt:.1f} | | {opt / total:.0%} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
