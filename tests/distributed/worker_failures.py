"""Run under `mpiexec -n 2` by test_ddp_failures.py: one rank fails, the other waits in a
collective. `raise`: rank 1 raises (the abort hook must end the job). `timeout`: rank 1 goes
quiet without failing (rank 0's collective must time out)."""
import sys
import time

import tensorgrad as tg
import tensorgrad.distributed as dist

mode = sys.argv[1]
dist.init(timeout=1.0 if mode == "timeout" else None)
if dist.get_rank() == 1:
    if mode == "raise":
        raise ValueError("rank 1 fails on purpose")
    time.sleep(60)  # quiet, alive: only a timeout tells rank 0
x = tg.ones(3)
dist.all_reduce(x)  # rank 0 waits here
print("rank 0 was not stopped", flush=True)
