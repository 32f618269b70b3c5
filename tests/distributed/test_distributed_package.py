"""tensorgrad.distributed without mpiexec: importing tensorgrad starts no MPI, a process on its
own is a job of one, and misuse gets clear errors."""
import os
import subprocess
import sys

import pytest

import tensorgrad as tg
import tensorgrad.distributed as dist


def _python(code):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, TENSORGRAD_NUMBA="0"))
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_import_tensorgrad_does_not_start_mpi():
    out = _python("import sys, tensorgrad as tg\n"
                  "print(tg.distributed.is_initialized(), 'mpi4py.MPI' in sys.modules)")
    assert out == ["False", "False"]


def test_a_process_started_alone_is_a_job_of_one():
    pytest.importorskip("mpi4py")
    out = _python("import tensorgrad as tg, tensorgrad.distributed as dist\n"
                  "dist.init()\n"
                  "x = tg.arange(3.0)\n"
                  "dist.all_reduce(x, op=dist.ReduceOp.AVG)\n"
                  "parts = [tg.zeros(3)]\n"
                  "dist.all_gather(parts, x)\n"
                  "dist.barrier()\n"
                  "net = tg.nn.Linear(3, 2)\n"
                  "(tg.nn.parallel.DistributedDataParallel(net)(x) ** 2).sum().backward()\n"
                  "alone = net.weight.grad.clone()\n"
                  "net.zero_grad()\n"
                  "(net(x) ** 2).sum().backward()\n"
                  "print(dist.get_rank(), dist.get_world_size(), dist.get_local_rank(),\n"
                  "      x.tolist() == parts[0].tolist() == [0.0, 1.0, 2.0],\n"
                  "      alone.tolist() == net.weight.grad.tolist())\n"
                  "dist.destroy_process_group()\n"
                  "print(dist.is_initialized())")
    assert out == ["0", "1", "0", "True", "True", "False"]


def test_errors_before_init_and_on_bad_arguments():
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="has not been initialized.*init"):
        dist.get_rank()
    with pytest.raises(RuntimeError, match="has not been initialized"):
        dist.all_reduce(tg.ones(2))
    with pytest.raises(ValueError, match="unknown backend 'gloo'"):
        dist.init("gloo")
    with pytest.raises(ValueError, match="timeout must be positive"):
        dist.init(timeout=0)
    with pytest.raises(ValueError, match="init_method='tcp://x:1' is not supported"):
        dist.init_process_group(init_method="tcp://x:1")
    with pytest.raises(TypeError, match="all_reduce: tensor must be a tensorgrad.Tensor"):
        dist.all_reduce([1.0])
    with pytest.raises(ValueError, match="unknown op 'median'"):
        dist.all_reduce(tg.ones(2), op="median")
