"""The kernels whose outer loop splits over the CPU threads (kernels/jit.py `threaded`): the
split loop against the plain one, and when a call must run the plain one (one thread, the
pool's threads, a forked child)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.backend import mkl_blas, threads

numba = pytest.importorskip("numba", reason="numba is not installed: the CPU backend runs "
                                            "without fused kernels (pip install tensorgrad[fast])")
from tensorgrad.backend import kernels  # noqa: E402  (needs numba)
from tensorgrad.backend.kernels import activation, attention, jit, layer_norm, loss, matmul  # noqa: E402,E501
from tensorgrad.backend.kernels import optim  # noqa: E402
from tensorgrad.backend.kernels import tiled_attention, whole_attention  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRAIN = jit.GRAIN  # two_threads sets it to 0


def _run(code, **env):
    """Run `code` in a fresh interpreter from the repository root, with `env` added; its stdout,
    stripped."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=ROOT, **env))
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def two_threads(monkeypatch):
    """Two threads, every call split (no grain), on Numba's OpenMP layer."""
    if mkl_blas.library() is None or not jit._on_openmp():
        pytest.skip("no MKL (pip install tensorgrad[mkl]; or TENSORGRAD_BLAS=numpy), or Numba's "
                    "threading layer is not OpenMP (no libgomp, or NUMBA_THREADING_LAYER chose "
                    "another): the kernels run their plain loops")
    before = tg.get_num_threads()
    monkeypatch.setattr(jit, "GRAIN", 0)
    tg.set_num_threads(2)
    yield
    tg.set_num_threads(before)


def _same_to_ulps(a, b, ulps=4):
    """a equals b to a few units in the last place, NaN where b has NaN."""
    np.testing.assert_allclose(a, b, rtol=ulps * np.finfo(b.dtype).eps, atol=0, equal_nan=True)


def _counting_splits(loops, monkeypatch):
    """The set that each of `loops` (threaded kernels) adds its name to when its split twin runs."""
    ran = set()
    for loop in loops:
        def parallel(*args, loop=loop, twin=loop.parallel):
            ran.add(loop.__name__)
            return twin(*args)
        monkeypatch.setattr(loop, "parallel", parallel)
    return ran


def _both(call, monkeypatch, loops):
    """call()'s arrays with the loops split over two threads, then on one; every one of `loops`
    must have run split in the first call."""
    ran = _counting_splits(loops, monkeypatch)
    split = [np.array(a) for a in call()]
    assert ran == {loop.__name__ for loop in loops}, f"ran split: {sorted(ran)}"
    monkeypatch.setattr(jit, "_threads_here", lambda: 1)
    return split, [np.array(a) for a in call()]


ELEMENTWISE = {
    "relu": (lambda x, g: (kernels.relu(x), kernels.relu_backward(x, g)),
             [activation._relu_loop, activation._relu_backward_loop]),
    "gelu tanh": (lambda x, g: (*kernels.gelu_tanh(x),
                                kernels.gelu_tanh_backward(x, kernels.gelu_tanh(x)[1], g)),
                  [activation._gelu_tanh_loop, activation._gelu_backward_loop]),
    "gelu exact": (lambda x, g: (*kernels.gelu_erf(x),
                                 kernels.gelu_erf_backward(x, kernels.gelu_erf(x)[1], g)),
                   [activation._gelu_erf_backward_loop]),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_kernels_split_give_the_same_values(name, dtype, two_threads, monkeypatch):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((37, 129)) * 3).astype(dtype)  # parts of unequal lengths
    x[0, :3] = [np.nan, np.inf, -np.inf]
    g = rng.standard_normal(x.shape).astype(dtype)
    fn, loops = ELEMENTWISE[name]
    split, plain = _both(lambda: fn(x, g), monkeypatch, loops)
    for a, b in zip(split, plain):
        _same_to_ulps(a, b)  # one formula per element, but two compilations, which may
        # vectorise it differently


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("center", [True, False])
def test_norm_kernels_split_give_the_same_values(center, dtype, two_threads, monkeypatch):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 41, 64)) * 2 + 1).astype(dtype)
    w, b = (rng.standard_normal(64).astype(dtype) for _ in range(2))
    g = rng.standard_normal(x.shape).astype(dtype)

    def call():
        y, mean, rstd = kernels.norm_rows(x, w, b if center else None, 1e-5, (2,), center)
        return (y, mean, rstd) + kernels.norm_rows_backward(
            x, mean if center else None, rstd, w, g, (2,), center, True, center)[:2 + center]

    split, plain = _both(call, monkeypatch,
                         [layer_norm._norm_loop, layer_norm._norm_backward_loop])
    for a, b in zip(split[:4], plain[:4]):  # y, the statistics and gx: row by row, alike
        _same_to_ulps(a, b)
    for a, b in zip(split[4:], plain[4:]):  # the weight's and bias's sums, added in parts
        np.testing.assert_allclose(a, b, rtol=1e-12 if dtype == np.float64 else 1e-6)
    # and the parts' sums are the whole sums: against the array formula
    xhat = (x - split[1]) * split[2]
    np.testing.assert_allclose(split[4], (g * xhat).sum((0, 1)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_optimizer_kernels_split_give_the_same_values(dtype, two_threads, monkeypatch):
    rng = np.random.default_rng(4)
    start = [rng.standard_normal((33, 65)).astype(dtype) for _ in range(4)]

    def call():
        param, grad, exp_avg, exp_avg_sq = (a.copy() for a in start)
        exp_avg_sq = np.abs(exp_avg_sq)
        kernels.adam_step(param, grad, exp_avg, exp_avg_sq, 1e-2, (0.9, 0.99), 1e-8, 0.1, True, 3)
        return param, exp_avg, exp_avg_sq, kernels.add_scaled_(grad, exp_avg, -0.5)

    split, plain = _both(call, monkeypatch,
                         [optim._adam_loop, optim._add_scaled_loop])
    for a, b in zip(split, plain):
        _same_to_ulps(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_kernels_split_give_the_same_values(dtype, two_threads, monkeypatch):
    rng = np.random.default_rng(7)
    out = rng.standard_normal((53, 31)).astype(dtype)
    bias = rng.standard_normal(31).astype(dtype)
    split, plain = _both(lambda: (kernels.add_to_rows_(out.copy(), bias),
                                  kernels.column_sums(out)), monkeypatch,
                         [matmul._add_to_rows_loop, matmul._column_sums_loop])
    for a, b in zip(split, plain):
        _same_to_ulps(a, b)
    np.testing.assert_allclose(split[1], out.sum(0), rtol=1e-5)


def test_cross_entropy_kernels_split_give_the_same_values(two_threads, monkeypatch):
    rng = np.random.default_rng(6)
    logits = (rng.standard_normal((45, 67)) * 3).astype(np.float32)
    scale = rng.standard_normal(45).astype(np.float32)

    def call():
        top, total = kernels.max_and_sum_exp(logits)
        return top, total, kernels.scaled_softmax(logits, top, total, scale)

    split, plain = _both(call, monkeypatch,
                         [loss._max_and_sum_loop, loss._scaled_softmax_loop])
    for a, b in zip(split, plain):
        _same_to_ulps(a, b)


@pytest.mark.parametrize("causal", [True, False])
def test_softmax_kernels_split_give_the_same_values(causal, two_threads, monkeypatch):
    rng = np.random.default_rng(2)
    s = rng.standard_normal((3, 2, 33, 33)).astype(np.float32)
    dp = rng.standard_normal(s.shape).astype(np.float32)
    delta = rng.standard_normal(s.shape[:-1] + (1,)).astype(np.float32)

    def call():
        p = kernels.softmax_rows(s.copy(), causal, scale=0.5)
        return p, kernels.softmax_rows_backward(dp.copy(), p, delta, scale=0.5)

    split, plain = _both(call, monkeypatch,
                         [attention._softmax_loop, attention._softmax_backward_loop])
    for a, b in zip(split, plain):
        _same_to_ulps(a, b)


@pytest.mark.parametrize("shape", [(3, 5, 16, 8), (7, 32, 16)])
def test_whole_attention_loops_split_give_the_same_values(shape, two_threads, monkeypatch):
    if mkl_blas.gemm_address(np.dtype(np.float32)) is None:
        pytest.skip("MKL is not installed (pip install tensorgrad[mkl]) or TENSORGRAD_BLAS=numpy")
    rng = np.random.default_rng(3)
    q, k, v, g = (rng.standard_normal(shape).astype(np.float32) for _ in range(4))

    def call():
        out, p = kernels.whole_forward(q, k, v, True, 0.3)
        return (out, p) + kernels.whole_backward(q, k, v, g, out, p, 0.3, True, True, True)

    split, plain = _both(call, monkeypatch,
                         [whole_attention._forward_loop, whole_attention._backward_loop])
    for a, b in zip(split, plain):  # each matrix made alike, on whichever thread
        _same_to_ulps(a, b)


@pytest.mark.parametrize("shapes", [((2, 3, 300, 8),) * 2, ((2, 3, 300, 8), (2, 1, 300, 8)),
                                    ((2, 2, 3, 300, 8), (2, 2, 1, 300, 8))])
def test_tiled_attention_loops_split_give_the_same_values(shapes, two_threads, monkeypatch):
    """Over a batch, k and v broadcast over the heads or not, or grouped (grouped-query
    attention's three batch dims); tiles of 128 x 64 (several per matrix, one cut at the causal
    diagonal)."""
    if mkl_blas.gemm_address(np.dtype(np.float32)) is None:
        pytest.skip("MKL is not installed (pip install tensorgrad[mkl]) or TENSORGRAD_BLAS=numpy")
    rng = np.random.default_rng(5)
    q, g = (rng.standard_normal(shapes[0]).astype(np.float32) for _ in range(2))
    k, v = (rng.standard_normal(shapes[1]).astype(np.float32) for _ in range(2))

    def call():
        out, lse = tiled_attention.tiled_forward(q, k, v, True, 0.3, 128, 64)
        return (out, lse) + tiled_attention.tiled_backward(q, k, v, g, out, lse, True, 0.3,
                                                           True, True, True, 128, 64)

    split, plain = _both(call, monkeypatch, [tiled_attention._forward_matrices,
                                             tiled_attention._backward_matrices])
    for a, b in zip(split, plain):  # each matrix made alike, on whichever thread
        _same_to_ulps(a, b)


@pytest.mark.parametrize("shape, splits", [((1, 4, 64, 32), True), ((1, 4, 8, 32), False)])
def test_whole_attention_splits_by_its_products_not_by_the_size_of_q(shape, splits, two_threads,
                                                                     monkeypatch):
    # (1, 4, 64, 32): q has fewer than GRAIN elements, Q K^T 4 * 64 * 64 * 32 multiply-adds
    if mkl_blas.gemm_address(np.dtype(np.float32)) is None:
        pytest.skip("MKL is not installed (pip install tensorgrad[mkl]) or TENSORGRAD_BLAS=numpy")
    monkeypatch.setattr(jit, "GRAIN", GRAIN)
    q, k, v = (np.random.default_rng(4).standard_normal(shape).astype(np.float32)
               for _ in range(3))
    assert q.size < GRAIN
    ran = _counting_splits([whole_attention._forward_loop], monkeypatch)
    kernels.whole_forward(q, k, v, True, 0.3)
    assert ran == ({"_forward_loop"} if splits else set())


def test_one_thread_and_the_pool_threads_run_the_plain_loop(two_threads):
    assert jit._threads_here() == 2
    assert numba.get_num_threads() == 2  # the count reaches Numba, for this thread
    seen = []
    threads.map_matrices(lambda i: seen.append(jit._threads_here()), [(i, ()) for i in range(4)])
    assert seen == [1] * 4
    tg.set_num_threads(1)
    assert jit._threads_here() == 1


def test_a_forked_child_runs_the_kernels_after_the_parent_split_them():
    """GNU OpenMP does not survive fork, and Numba ends a forked child's first parallel loop
    (SIGTERM) once the parent has run one: a DataLoader worker forked after training steps would
    die. The child runs the plain loops."""
    out = _run("""
        import multiprocessing
        import numpy as np
        import tensorgrad as tg
        from tensorgrad.backend import kernels
        from tensorgrad.backend.kernels import activation, jit

        def gelu(seed):
            x = np.random.default_rng(seed).standard_normal(1 << 16)
            exact = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
            return float(np.abs(kernels.gelu_tanh(x.astype(np.float32))[0] - exact).max())

        if __name__ == "__main__":
            tg.set_num_threads(2)
            gelu(0)
            # the parent splits only where MKL's threads are Numba's OpenMP pool
            split = jit._threads_here() > 1
            assert len(activation._gelu_tanh_loop.parallel.signatures) == split
            with multiprocessing.get_context("fork").Pool(2) as pool:
                print(max(pool.map_async(gelu, range(4)).get(timeout=120)) < 1e-5)
    """)
    assert out == "True"


@pytest.mark.parametrize("threads", ["1", "2"])
def test_starting_the_threads_leaves_torch_its_thread_count(threads):
    """Numba's OpenMP layer sets the thread's OpenMP count to every CPU as it starts, and beside
    PyTorch that count was torch's: torch.get_num_threads() went from 1 to 2."""
    pytest.importorskip("torch")
    out = _run("""
        import tensorgrad as tg
        import torch
        torch.set_num_threads(1)
        from tensorgrad.backend.kernels import jit
        before = torch.get_num_threads()
        jit._on_openmp()
        print(before, torch.get_num_threads())
    """, OMP_NUM_THREADS=threads)
    assert out == "1 1"


@pytest.mark.parametrize("torch_first", [False, True])
def test_starting_the_threads_leaves_nested_parallel_regions_off(torch_first):
    """Numba's OpenMP layer turns nested regions on as it starts (omp_set_nested(1)): then each
    of torch's attention threads called MKL on a team of its own, 50x slower on two cores
    (benchmarks/profile_decode.py --threads 2 after tensorgrad's kernels)."""
    if torch_first:
        pytest.importorskip("torch")
    out = _run(f"""
        import ctypes
        {"import torch" if torch_first else ""}
        import tensorgrad as tg
        from tensorgrad.backend.kernels import jit
        try:
            gomp = ctypes.CDLL("libgomp.so.1")
        except OSError:
            print("no libgomp")
            raise SystemExit
        before = (gomp.omp_get_nested(), gomp.omp_get_max_active_levels())
        jit._on_openmp()
        print(before == (gomp.omp_get_nested(), gomp.omp_get_max_active_levels()), before)
    """, OMP_NUM_THREADS="2")
    if out == "no libgomp":
        pytest.skip("no GNU OpenMP runtime here: Numba has no OpenMP layer to start")
    assert out.startswith("True"), out


def test_split_kernels_called_from_two_threads_at_once(two_threads, monkeypatch):
    """Each calling thread leads its own OpenMP team (Numba's OpenMP layer is thread-safe, its
    default fallback layer is not: the kernels run only on OpenMP)."""
    import threading

    rng = np.random.default_rng(8)
    xs = [rng.standard_normal(1 << 16).astype(np.float32) for _ in range(2)]
    expected = [kernels.gelu_tanh(x)[0] for x in xs]
    errors = []
    ran = _counting_splits([activation._gelu_tanh_loop], monkeypatch)

    def work(i):
        try:
            for _ in range(20):
                np.testing.assert_array_equal(kernels.gelu_tanh(xs[i])[0], expected[i])
        except Exception as error:  # noqa: BLE001  (reported below, in the test's thread)
            errors.append(error)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors
    assert ran == {activation._gelu_tanh_loop.__name__}


@pytest.mark.parametrize("env", [{"TENSORGRAD_BLAS": "numpy"}, {"MKL_THREADING_LAYER": "INTEL"}])
def test_without_mkl_on_gnu_openmp_the_kernels_keep_to_one_thread(env):
    """Then other threads run the products (NumPy's OpenBLAS, Intel's OpenMP), which spin between
    calls; Numba's OpenMP threads beside them fought them for the cores (gpt_step 3x slower at
    two threads, OpenBLAS)."""
    out = _run("""
        import tensorgrad as tg
        from tensorgrad.backend.kernels import jit
        tg.set_num_threads(2)
        print(jit._threads_here())
    """, **env)
    assert out == "1"


def test_numba_is_asked_for_openmp_first_unless_the_user_chose():
    """With the mkl wheel's tbb installed, Numba's own order picked TBB, and the kernels never
    split; a layer or order the user names is left as it is."""
    code = """
        from tensorgrad.backend.kernels import jit
        import numba
        jit._on_openmp()
        print(numba.config.THREADING_LAYER_PRIORITY[0])
    """
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_THREADING_LAYER")}
    for chosen, first in ((None, "omp"), ("workqueue tbb omp", "workqueue")):
        env = dict(clean, PYTHONPATH=ROOT)
        if chosen:
            env["NUMBA_THREADING_LAYER_PRIORITY"] = chosen
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split()[-1] == first
