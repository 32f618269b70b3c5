"""tensorgrad/backend/threads.py: set_num_threads / get_num_threads as torch's, the BLAS following
them, and the tiled attention path giving the same numbers on one thread or several."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.backend import threads


@pytest.fixture
def restore_threads():
    before = tg.get_num_threads()
    yield
    tg.set_num_threads(before)


def _blas_threads():
    """Each BLAS's thread count but OpenBLAS's once tune_process put it on one thread beside MKL:
    then it keeps NumPy's small products, on one thread whatever the count (checked here)."""
    from threadpoolctl import threadpool_info

    from tensorgrad.backend import threads
    counts = {lib["internal_api"]: lib["num_threads"] for lib in threadpool_info()
              if lib["user_api"] == "blas"}
    if threads._openblas_single:
        assert counts.pop("openblas", 1) == 1
    return counts


def test_the_count_starts_from_omp_num_threads():
    code = "import tensorgrad as tg; print(tg.get_num_threads())"
    for value, expected in (("3", "3"), ("", str(len(os.sched_getaffinity(0))))):
        env = dict(os.environ, OMP_NUM_THREADS=value)
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, check=True)
        assert done.stdout.strip() == expected


def test_set_num_threads_reaches_the_blas(restore_threads):
    tg.set_num_threads(1)
    assert tg.get_num_threads() == 1
    assert set(_blas_threads().values()) == {1}
    tg.set_num_threads(2)
    assert tg.get_num_threads() == 2
    assert set(_blas_threads().values()) == {2}


@pytest.mark.parametrize("bad, message", [(0, "a positive int, got 0"), (-1, "a positive int"),
                                          (1.5, "an int, got float"), ("2", "an int, got str"),
                                          (True, "an int, got bool"), (None, "an int")])
def test_set_num_threads_refuses_what_is_not_a_positive_int(bad, message, restore_threads):
    before = tg.get_num_threads()
    with pytest.raises(RuntimeError, match=f"set_num_threads: expected {message}"):  # as torch
        tg.set_num_threads(bad)
    assert tg.get_num_threads() == before


def test_map_matrices_runs_every_item_and_reraises(restore_threads):
    tg.set_num_threads(2)
    seen = []
    threads.map_matrices(lambda i, a, b: seen.append((i, a + b)), [(i, (i, 10)) for i in range(7)])
    assert sorted(seen) == [(i, i + 10) for i in range(7)]

    def fails(i):
        if i == 3:
            raise KeyError("item 3")
    with pytest.raises(KeyError, match="item 3"):
        threads.map_matrices(fails, [(i, ()) for i in range(5)])


def test_the_blas_is_one_thread_inside_a_parallel_map_and_restored_after(restore_threads):
    tg.set_num_threads(2)
    inside = []
    threads.map_matrices(lambda i: inside.append(_blas_threads()), [(0, ()), (1, ())])
    for seen in inside:  # MKL's count is per thread, set at each product: the test below
        seen.pop("mkl", None)
        assert set(seen.values()) <= {1}
    assert set(_blas_threads().values()) == {2}


@pytest.mark.parametrize("masked", [False, True])
def test_tiled_attention_is_the_same_on_one_thread_and_several(masked, restore_threads,
                                                               monkeypatch):
    """Each thread computes whole matrices, so the output and every gradient are bit for bit
    the ones a single thread gives (blocks of 4 x 8 so that T=20 is tiled)."""
    from tensorgrad.ops import attention
    monkeypatch.setattr(attention, "TILE", 4)
    monkeypatch.setattr(attention, "KEY_TILE", 8)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 20, 8)).astype(np.float32) for _ in range(3))
    bias = rng.standard_normal((3, 20, 20)).astype(np.float32) if masked else None
    probe = tg.tensor(rng.standard_normal((2, 3, 20, 8)).astype(np.float32))
    results = []
    for n in (1, 3):
        tg.set_num_threads(n)
        leaves = [tg.tensor(a, requires_grad=True) for a in (q, k, v)]
        mask = None if bias is None else tg.tensor(bias, requires_grad=True)
        out = tg.scaled_dot_product_attention(*leaves, attn_mask=mask, is_causal=True)
        assert out.grad_fn.extra.shape[-1] == 1  # the tiled path (row log-sum-exps saved)
        (out * probe).sum().backward()
        grads = [t.grad.numpy() for t in leaves] + ([mask.grad.numpy()] if masked else [])
        results.append([out.detach().numpy()] + grads)
    for one, several in zip(*results):
        np.testing.assert_array_equal(one, several)


def test_a_forked_child_makes_its_own_pool(restore_threads):
    """A DataLoader worker is a fork: the parent's pool threads do not exist there."""
    import multiprocessing
    import time
    tg.set_num_threads(2)
    # slow items, so that the parent's pool starts both its threads (then idle at the fork)
    threads.map_matrices(lambda i: time.sleep(0.05), [(i, ()) for i in range(4)])
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as children:
        assert children.apply_async(_map_in_child).get(timeout=60) == [0, 1, 2]


def _map_in_child():
    seen = []
    threads.map_matrices(lambda i: seen.append(i), [(i, ()) for i in range(3)])
    return sorted(seen)


def test_in_pool_is_true_on_the_pool_threads_only(restore_threads):
    """MKL's products and the threaded kernels keep to one thread there (the pool splits the
    work already)."""
    tg.set_num_threads(2)
    seen = []
    threads.map_matrices(lambda i: seen.append(threads.in_pool()), [(i, ()) for i in range(4)])
    assert seen == [True] * 4
    assert not threads.in_pool()


def test_mkl_is_one_thread_in_the_pool_threads(restore_threads):
    from tensorgrad.backend import mkl_blas
    lib = mkl_blas.library()
    if lib is None:
        pytest.skip("MKL is not installed (pip install tensorgrad[mkl]) or TENSORGRAD_BLAS=numpy")
    tg.set_num_threads(2)
    assert lib.MKL_Get_Max_Threads() == 2
    a = np.ones((256, 4096), np.float32)

    def product_then_count(i):
        assert mkl_blas.matmul(a, a.T) is not None
        inside.append(lib.MKL_Get_Max_Threads())

    inside = []
    threads.map_matrices(product_then_count, [(0, ()), (1, ())])
    assert inside == [1, 1]
    assert mkl_blas.matmul(a, a.T) is not None
    assert lib.MKL_Get_Max_Threads() == 2


def test_per_thread_state_starts_at_its_defaults_on_every_thread():
    """backend/per_thread.py: an attribute reads its default on a thread that has not set it,
    and what one thread sets stays on that thread."""
    import threading

    from tensorgrad.backend.per_thread import per_thread

    state = per_thread(pool=False, threads=None)
    assert (state.pool, state.threads) == (False, None)
    state.pool, state.threads = True, 2
    seen = []
    worker = threading.Thread(target=lambda: seen.append((state.pool, state.threads)))
    worker.start()
    worker.join()
    assert seen == [(False, None)]
    assert (state.pool, state.threads) == (True, 2)
    other = per_thread(pool=False)
    assert other.pool is False  # each call makes its own state
    with pytest.raises(AttributeError):
        _ = state.warming  # a name without a default is not there, as with threading.local


def test_set_num_threads_is_the_count_every_thread_returns_to(restore_threads):
    """After set_num_threads(n), a plain product runs MKL on n threads, on this thread after a
    compiled loop's product put it on one, and on a thread started later."""
    import threading

    from tensorgrad.backend import mkl_blas
    lib = mkl_blas.library()
    if lib is None:
        pytest.skip("MKL is not installed (pip install tensorgrad[mkl]) or TENSORGRAD_BLAS=numpy")
    a = np.ones((256, 4096), np.float32)

    def count_on_a_new_thread():
        seen = []
        worker = threading.Thread(target=lambda: seen.append(
            (mkl_blas.matmul(a, a.T) is not None, lib.MKL_Get_Max_Threads())))
        worker.start()
        worker.join()
        return seen[0]

    # a count MKL does not hold now; MKL caps its process-wide count at the cores
    n = 1 if count_on_a_new_thread()[1] > 1 else 2
    if n > (os.cpu_count() or 1):
        pytest.skip("one core: MKL's count cannot change")
    tg.set_num_threads(n)
    mkl_blas._threads_for(True)  # what a compiled loop's product does: this thread on one
    assert lib.MKL_Get_Max_Threads() == 1
    assert mkl_blas.matmul(a, a.T) is not None
    assert lib.MKL_Get_Max_Threads() == n
    assert count_on_a_new_thread() == (True, n)
