"""Wall-clock timing with warm-up and repetitions, and the process's memory high-water mark.

Only public tools: time.perf_counter; resource.getrusage for the peak RSS, /proc/self/statm for
the current RSS, and Linux's /proc/self/clear_refs to restart the peak from the current RSS.
"""
import os
import resource
import statistics
import time
from dataclasses import dataclass


@dataclass
class Budget:
    """How long to measure one thing: `warmup` untimed calls, then timed calls until at least
    `min_reps` calls AND `min_time` seconds are done, stopping at `max_reps` or `max_time`
    seconds of timed calls, whichever comes first."""

    warmup: int = 2
    min_reps: int = 5
    max_reps: int = 50
    min_time: float = 1.0
    max_time: float = 10.0

    def scaled(self, factor):
        """The same budget with the time limits multiplied by `factor` (a long workload)."""
        return Budget(self.warmup, self.min_reps, self.max_reps, self.min_time * factor,
                      self.max_time * factor)


FULL = Budget()
QUICK = Budget(warmup=1, min_reps=3, max_reps=20, min_time=0.3, max_time=2.0)
TINY = Budget(warmup=1, min_reps=2, max_reps=2, min_time=0.0, max_time=0.5)


def measure(fn, budget, sync=None):
    """Time `fn()` under `budget`; `sync()` (a GPU synchronise) runs before each clock read.

    Returns {"median", "q1", "q3", "min", "max", "reps"} in seconds per call (q1, q3: the
    quartiles).
    """
    for _ in range(budget.warmup):
        fn()
    if sync:
        sync()
    times = []
    started = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append(time.perf_counter() - t0)
        spent = time.perf_counter() - started
        if len(times) >= budget.max_reps or spent >= budget.max_time:
            break
        if len(times) >= budget.min_reps and spent >= budget.min_time:
            break
    q1, _, q3 = statistics.quantiles(times, n=4) if len(times) > 1 else times * 3
    return {"median": statistics.median(times), "q1": q1, "q3": q3, "min": min(times),
            "max": max(times), "reps": len(times)}


def scale(stats, factor):
    """Timing statistics converted to another unit (e.g. 1e3 / tokens for ms per token)."""
    return {**stats, **{k: stats[k] * factor for k in ("median", "q1", "q3", "min", "max")
                        if k in stats}}


def rate(stats, work):
    """Seconds per call -> work per second (GFLOP/s, tokens/s); min and max (q1 and q3) swap
    places."""
    swapped = {"median": "median", "min": "max", "max": "min", "q1": "q3", "q3": "q1"}
    return {**stats, **{k: work / stats[v] for k, v in swapped.items() if v in stats}}


def current_rss_mb():
    """Resident set size now, in MiB (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except OSError:
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb():
    """The process's resident-set high-water mark so far, in MiB (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak_rss():
    """Restart the high-water mark from the current RSS (Linux: writing 5 to
    /proc/self/clear_refs), so that a later `peak_rss_mb` says what happened since, even when
    an earlier moment (imports, a previous size) peaked higher. False where unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True
