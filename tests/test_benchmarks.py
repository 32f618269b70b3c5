"""The benchmark harness (benchmarks/): the NumPy floor's hand-derived gradients are right, the
three GPT-minis compute the same function, and run.py runs end to end on toy sizes."""
import json
import math
import subprocess
import sys

import numpy as np
import pytest

import tensorgrad as tg
from benchmarks import numpy_floor, run, workloads
from tensorgrad.models import GPT, GPTConfig
from tensorgrad.models.gpt import hf_names

ROOT = run.ROOT
TINY = dict(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=8, d_ff=12)


def _perturbed(state, rng, scale=0.1):
    """Host float64 copies of a state dict, nudged so that biases and LayerNorms are not 0/1."""
    return {k: np.asarray(v, dtype=np.float64) + scale * rng.standard_normal(np.shape(v))
            for k, v in state.items()}


def _floor_gpt(dtype=np.float64):
    return numpy_floor.GPT(**TINY, dtype=dtype)


# --- the floor against PyTorch --------------------------------------------------------------------
def test_floor_gpt_gradients_and_adamw_match_torch():
    torch = pytest.importorskip("torch")
    from benchmarks.torch_gpt import GPT as TorchGPT, Config

    torch.manual_seed(0)
    model = TorchGPT(Config(**TINY)).double()
    rng = np.random.default_rng(0)
    weights = _perturbed({k: v.numpy() for k, v in model.state_dict().items()}, rng)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()})
    floor = _floor_gpt()
    floor.state.load(weights)
    idx, targets = rng.integers(0, TINY["vocab_size"], (2, 2, 6))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    floor.optimizer.lr, floor.optimizer.wd = 1e-2, 0.1
    for step in range(3):
        optimizer.zero_grad()
        loss = model(torch.from_numpy(idx), torch.from_numpy(targets))[1]
        loss.backward()
        assert floor.loss_and_grads(idx, targets) == pytest.approx(loss.item(), rel=1e-12)
        for name, p in model.named_parameters():
            np.testing.assert_allclose(floor.state.grads[name], p.grad.numpy(), rtol=1e-9,
                                       atol=1e-12, err_msg=f"step {step}: {name}")
        optimizer.step()
        floor.optimizer.step()
    for name, p in model.named_parameters():
        np.testing.assert_allclose(floor.state.params[name], p.detach().numpy(), rtol=1e-9,
                                   atol=1e-12, err_msg=name)


def test_floor_mlp_gradients_and_sgd_match_torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    sizes = (7, 5, 6, 3)
    model = torch.nn.Sequential(torch.nn.Linear(7, 5), torch.nn.ReLU(), torch.nn.Linear(5, 6),
                                torch.nn.ReLU(), torch.nn.Linear(6, 3)).double()
    floor = numpy_floor.MLP(sizes, lr=0.1, dtype=np.float64)
    floor.state.load({f"layers.{int(k.split('.')[0]) // 2}.{k.split('.')[1]}": v.numpy()
                      for k, v in model.state_dict().items()})
    x = torch.randn(4, 7, dtype=torch.float64)
    y = torch.tensor([0, 2, 1, 2])
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    assert floor.step(x.numpy(), y.numpy()) == pytest.approx(loss.item(), rel=1e-12)
    for name, p in model.named_parameters():
        i, kind = int(name.split(".")[0]) // 2, name.split(".")[1]
        np.testing.assert_allclose(floor.state.grads[f"layers.{i}.{kind}"], p.grad.numpy(),
                                   rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(floor.state.params[f"layers.{i}.{kind}"],
                                   (p - 0.1 * p.grad).detach().numpy(), rtol=1e-12)


def test_torch_gpt_generates_the_same_tokens_with_and_without_cache():
    torch = pytest.importorskip("torch")
    from benchmarks.torch_gpt import GPT as TorchGPT, Config

    torch.manual_seed(0)
    model = TorchGPT(Config(**{**TINY, "block_size": 16})).eval()
    prompt = torch.randint(0, TINY["vocab_size"], (2, 3))
    cached = model.generate(prompt, 10, use_cache=True)
    assert cached.shape == (2, 13)
    assert torch.equal(cached, model.generate(prompt, 10, use_cache=False))
    assert torch.equal(cached, model.generate(prompt, 10, use_cache=True, static_cache=True))


# --- the floor against tensorgrad's GPT: the benchmark races one function ------------------------
def test_floor_gpt_matches_tensorgrad_gpt():
    model = GPT(GPTConfig.mini(**TINY), dtype=tg.float64)
    ours = {hf.removeprefix("transformer."): name for hf, name in hf_names(TINY["n_layer"]).items()}
    rng = np.random.default_rng(1)
    weights = _perturbed({k: model.state_dict()[v].numpy() for k, v in ours.items()}, rng)
    model.load_state_dict({ours[k]: tg.tensor(v) for k, v in weights.items()})
    floor = _floor_gpt()
    floor.state.load(weights)
    idx, targets = rng.integers(0, TINY["vocab_size"], (2, 3, 8))
    loss = model(tg.tensor(idx), tg.tensor(targets))[1]
    loss.backward()
    assert floor.loss_and_grads(idx, targets) == pytest.approx(loss.item(), rel=1e-10)
    params = dict(model.named_parameters())
    for name, theirs in ours.items():
        np.testing.assert_allclose(floor.state.grads[name], params[theirs].grad.numpy(),
                                   rtol=1e-8, atol=1e-12, err_msg=name)


def test_floor_stays_float32():
    floor = numpy_floor.GPT(**TINY)
    idx = np.zeros((2, 8), dtype=np.int64)
    floor.step(idx, idx)
    assert floor.state.flat.dtype == np.float32
    assert all(p.dtype == np.float32 for p in floor.state.params.values())
    assert floor.optimizer.m.dtype == floor.optimizer.v.dtype == np.float32


# --- the harness ----------------------------------------------------------------------------------
def test_harness_runs_every_workload_on_tiny_sizes(tmp_path):
    """run.py end to end, children and all, for the frameworks that start fast."""
    out = tmp_path / "results.json"
    done = subprocess.run([sys.executable, "benchmarks/run.py", "--tiny", "--frameworks",
                           "tensorgrad,numpy", "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    saved = json.loads(out.read_text())
    for name in workloads.NAMES:
        module = workloads.load(name)
        for framework in set(module.FRAMEWORKS) & {"tensorgrad", "numpy"}:
            rows = saved["results"][name][framework]["rows"]
            assert rows and all(r["median"] >= 0 and r["min"] <= r["median"] <= r["max"]
                                for r in rows if not math.isnan(r["median"])), (name, framework)
        assert f"| {name} |" in done.stdout
    assert "Targets:" in done.stdout and len(saved["targets"]) == len(run.TARGETS) + len(run.LIMITS)
    assert saved["meta"]["tensorgrad BLAS (float matmul)"].startswith(("MKL ", "NumPy's "))


@pytest.mark.parametrize("name", [n for n in workloads.NAMES if n != "attention"])
def test_torch_side_of_each_workload_runs(name):
    """The torch half in this process (a child per workload would re-import torch each time);
    attention's torch half is the other helper's benchmarks/attention.py, run by the test above
    for tensorgrad."""
    pytest.importorskip("torch")
    module = workloads.load(name)
    if "torch" not in module.FRAMEWORKS:
        pytest.skip(f"{name} has no torch side")
    rows = module.run(workloads.Env("torch", "cpu", "tiny"))
    assert rows and all(r["median"] >= 0 for r in rows)


def _result(rows):
    return {"rows": [workloads.row(case, metric, workloads.single(value), better)
                     for case, metric, value, better in rows]}


def test_report_marks_targets_met_and_not_met():
    results = {
        "gpt_step": {"tensorgrad": _result([("B=2", "ms/step", 30.0, "lower")]),
                     "torch": _result([("B=2", "ms/step", 10.0, "lower")]),
                     "numpy": _result([("B=2", "ms/step", 40.0, "lower")])},
        "generate": {"tensorgrad": _result([("B=8 KV cache, torch static", "tokens/s", 200.0,
                                              "higher")]),
                     "torch": _result([("B=8 KV cache, torch static", "tokens/s", 100.0,
                                        "higher")])},
    }
    text, targets = run.report(results, {"mode": "tiny", "device": "cpu"})
    status = {(t["workload"], t["metric"], t["against"]): t["status"] for t in targets}
    assert status["gpt_step", "ms/step", "numpy"] == "met (0.75x)"
    assert status["gpt_step", "ms/step", "torch"] == "NOT met (3.00x)"
    assert status["gpt_step", "peak RSS MiB", "torch"].startswith("no ")
    assert status["generate", "tokens/s", "torch"] == "met (2.00x)"  # B=8, listed last
    assert status["attention", "ms fwd+bwd", "torch"] == "not run"
    assert "| gpt_step | B=2 | ms/step ↓ | 30 | 10 | 40 | 3.00 | 0.75 |" in text


def test_rounds_merge_into_medians_of_medians_and_extremes():
    def timed(median, low, high, reps):
        return {"rows": [{"case": "B=2", "metric": "ms/step", "better": "lower",
                          "median": median, "min": low, "max": high, "reps": reps}],
                "wall_s": 1.0, "peak_rss_mb": median}
    merged = run.merge_rounds([timed(30, 29, 31, 5), timed(50, 45, 60, 5), timed(32, 30, 40, 6)])
    assert merged["rows"][0] == {"case": "B=2", "metric": "ms/step", "better": "lower",
                                 "median": 32, "min": 29, "max": 60, "reps": 16,
                                 "round_medians": [30, 50, 32]}
    assert merged["wall_s"] == 3.0 and merged["peak_rss_mb"] == 50
    failed = {"error": "exit 1: boom", "wall_s": 0.5}
    assert run.merge_rounds([timed(30, 29, 31, 5), failed]) is failed
    assert run.parse_args([]).rounds == 3 and run.parse_args(["--quick"]).rounds == 1
    with pytest.raises(SystemExit, match="at least 1"):
        run.parse_args(["--rounds", "0"])


def test_ratios_pair_the_rounds():
    # The machine slowed down during rounds 2 and 3 for tensorgrad but only during round 3 for
    # torch: the medians say 3x, each round's pair says 1x (or 3x once).
    ours = {"median": 30, "round_medians": [10, 30, 30]}
    theirs = {"median": 10, "round_medians": [10, 10, 30]}
    assert run.ratio(ours, theirs) == 1.0
    assert run.ratio({"median": 30}, {"median": 10}) == 3.0  # one round: the medians
    # a growth of 0 MiB has no ratio (it was a ZeroDivisionError that lost the whole report)
    assert math.isnan(run.ratio({"median": 5}, {"median": 0.0}))
    assert math.isnan(run.ratio({"round_medians": [4, 5], "median": 4.5},
                                {"round_medians": [2, 0.0], "median": 1}))


def test_bad_workload_name_is_a_clear_error():
    with pytest.raises(SystemExit, match="unknown name"):
        run.parse_args(["--only", "gpt_stpe"])


def test_profile_step_accounts_for_the_step(tmp_path, capsys):
    """benchmarks/profile_step.py on toy sizes: every phase is timed, the families' time fits
    inside their phase, and the primitives are left as they were."""
    from benchmarks import profile_step
    from tensorgrad.autograd.graph import PRIMITIVES

    before = {name: (p.forward, p.vjp) for name, p in PRIMITIVES.items()}
    out = tmp_path / "profile.json"
    profile_step.main(["--tiny", "--steps", "2", "--cpu", "--json", str(out)])
    per_step = json.loads(out.read_text())
    assert set(per_step) == {"forward", "backward", "optimizer"}
    for phase in ("forward", "backward"):
        families = per_step[phase]["families"]
        assert {"matmul", "attention", "layer_norm"} <= set(families)
        assert sum(families.values()) <= per_step[phase]["total"] * 1.01
    assert "| ops/matmul.py |" in capsys.readouterr().out
    assert {name: (p.forward, p.vjp) for name, p in PRIMITIVES.items()} == before


def test_blas_shapes_times_every_product_of_the_step(capsys):
    """benchmarks/blas_shapes.py on toy sizes: one row per product, with the step's totals."""
    pytest.importorskip("torch")
    from benchmarks import blas_shapes

    numpy_us, torch_us = blas_shapes.main(["--tiny"])
    assert numpy_us > 0 and torch_us > 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert len(rows) == 2 + len(blas_shapes.products(**blas_shapes.TINY))  # header, total
    assert any("qkv fwd x @ W.T" in row for row in rows)
    assert "tensorgrad: " + tg.backend.get_backend("cpu").blas_name() in out  # which BLAS ran


def test_blas_shapes_sums_a_no_cache_decodes_products_by_layer(capsys):
    """--workload generate_nocache: one row per Linear product, summed over the sequence
    lengths the decode runs (toy: 4 to 11 rows, every fourth timed for four)."""
    pytest.importorskip("torch")
    from benchmarks import blas_shapes

    listed = blas_shapes.decode_products(**blas_shapes.TINY_DECODE)
    assert sum(count for name, count, *_ in listed if name.startswith("qkv")) == 8  # 8 steps
    assert {a[0] for _, _, a, _, _ in listed} == {4, 8}
    numpy_us, torch_us = blas_shapes.main(["--tiny", "--workload", "generate_nocache"])
    assert numpy_us > 0 and torch_us > 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + 5 + 1  # header, qkv / attn out / ffn up / ffn down / head, total
    assert rows[1].startswith("| qkv x @ W.T | 8 | (4-8, 16) @ (16, 48) |")


def test_output_alignment_times_each_product_at_each_offset(capsys):
    """benchmarks/output_alignment.py on toy sizes: every product at every offset from a
    64-byte boundary, through MKL into the output at that offset; MKL's size threshold is
    back as it was afterwards. Without MKL it says so and times nothing."""
    from benchmarks import output_alignment as oa
    from tensorgrad.backend import mkl_blas

    least = mkl_blas.MIN_WORK
    table = oa.main(["--tiny"])
    assert mkl_blas.MIN_WORK == least
    out = capsys.readouterr().out
    if mkl_blas.library() is None:
        assert table == {} and "MKL is not loaded" in out
        return
    listed = oa.products(tiny=True)
    assert list(table) == [name for name, *_ in listed]
    assert any(name.startswith("mlp") for name in table)
    assert any(name.startswith("gpt") for name in table)
    assert all(set(us) == set(oa.OFFSETS) and min(us.values()) > 0 for us in table.values())
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + len(listed)  # the header, a row each
    outs = oa._outputs(3, 5, np.dtype(np.float32))
    assert {o: a.__array_interface__["data"][0] % 64 for o, a in outs.items()} == {
        o: o for o in oa.OFFSETS}


def test_profile_decode_counts_a_tokens_calls_and_restores_them(capsys):
    """benchmarks/profile_decode.py --quick: GPT-mini's per-token calls (4 layers: 17 linear,
    9 layer norms, 4 attentions), one timed row per op, and Primitive / Module calls unpatched
    afterwards."""
    from benchmarks import profile_decode
    from tensorgrad import nn
    from tensorgrad.autograd.graph import Primitive

    calls = (Primitive.__call__, nn.Module.__call__)
    primitives, modules = profile_decode.count_calls(batch=2, tokens=4)
    assert (primitives["linear"], primitives["layer_norm"]) == (17, 9)
    assert primitives["scaled_dot_product_attention"] == 4 and modules == 40
    assert (Primitive.__call__, nn.Module.__call__) == calls
    profile_decode.main(["--quick", "--user"])
    out = capsys.readouterr().out
    assert "| LayerNorm(128) | 9 |" in out and "| scaled_dot_product_attention | 4 |" in out
    # --user: torch_gpt.py's generic ops, a second table (4 layers: 3 views, 4 transposes each)
    assert "## torch_gpt.py's generic ops alone (generate_user)" in out
    assert "| view into heads | 12 |" in out and "| transpose(1, 2) | 16 |" in out
    # --positions: the same ops at a no-cache step's shapes, the attention causal over them
    profile_decode.main(["--quick", "--positions", "8"])
    out = capsys.readouterr().out
    assert "## One no-cache decoding step's ops alone, T=8 (B=1)" in out
    assert "| Linear 128->384 (qkv) | 4 |" in out and "| scaled_dot_product_attention | 4 |" in out


def test_op_instructions_child_runs_the_chain_with_gradients():
    """benchmarks/op_instructions.py's counted code (the part valgrind runs) on its own: a chain
    with backward leaves the leaf's gradient, the product of the 100 factors."""
    from benchmarks import op_instructions

    x = op_instructions._child("fwd+bwd", 1)
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), np.full(16, 1.0001 ** 100), rtol=1e-5)


def test_op_instructions_alive_mode_keeps_each_chain_until_the_next():
    from benchmarks import op_instructions

    assert op_instructions._child("alive", 2).grad is None  # forward only, nothing backward


@pytest.mark.slow
@pytest.mark.skipif(not __import__("shutil").which("valgrind"), reason="needs valgrind")
def test_op_instructions_counts_under_callgrind():
    from benchmarks import op_instructions

    count = op_instructions.count("fwd", 200)
    assert 1_000 < count < 1_000_000  # thousands of instructions an op, not the whole process


def test_interleaved_pairs_both_frameworks_on_each_case(capsys, monkeypatch):
    """benchmarks/interleaved.py on toy sizes: every case times both frameworks in turn and
    reports the median ratio inside its quartiles."""
    pytest.importorskip("torch")
    from benchmarks import interleaved

    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "1")  # main() sets them; restored after the test
    rows = interleaved.main(["--tiny", "--pairs", "3"])
    assert [r["workload"] for r in rows] == ["gpt_step", "mlp_step", "generate", "generate"]
    for r in rows:
        assert r["tensorgrad"] > 0 and r["torch"] > 0 and r["pairs"] == 3
        assert r["q1"] <= r["ratio"] <= r["q3"]
    assert "| gpt_step | B=2 T=16 |" in capsys.readouterr().out
    user, nocache = interleaved.main(["--tiny", "--pairs", "2", "--only",
                                      "generate_user,generate_nocache"])
    assert (user["case"], nocache["case"]) == ("B=1 KV cache, static", "B=1 no cache")
    assert user["torch"] > 0 and nocache["tensorgrad"] > 0
    # each copy of the user's model got its own framework, and the real torch is back after
    import torch
    assert interleaved._user_model_module("tensorgrad").torch.__name__.startswith("tensorgrad")
    assert interleaved._user_model_module("torch").torch is torch
    assert sys.modules["torch"] is torch and not torch.__name__.startswith("tensorgrad")
    attention, = interleaved.main(["--tiny", "--pairs", "2", "--only", "attention"])
    assert attention["case"] == "T=320 causal fwd+bwd" and attention["torch"] > 0
    with pytest.raises(SystemExit):
        interleaved.main(["--only", "matmul"])


def test_recurrent_benchmark_runs_on_tiny_sizes(capsys):
    pytest.importorskip("torch")
    from benchmarks import recurrent
    recurrent.main(["--tiny"])
    out = capsys.readouterr().out
    assert "| (2, 3, 4, 5, 1) |" in out and "| True |" in out


def test_decode_instructions_counts_each_library_once(tmp_path):
    """benchmarks/decode_instructions.py reads callgrind's output: a function's own cost lines
    count for its object; the line after `calls=` is the callee's inclusive cost, counted where
    the callee's own lines are, not again; names given once are reused by their number."""
    from benchmarks import decode_instructions as di

    out = tmp_path / "callgrind.out"
    out.write_text("\n".join([
        "events: Ir", "ob=(1) /usr/lib/libpython3.11.so.1.0", "fl=(1) ceval.c",
        "fn=(1) _PyEval_EvalFrameDefault", "10 100", "+2 50",
        "cob=(2) /venv/lib/libmkl_avx2.so.3", "cfn=(2) sgemm", "calls=3 0", "12 7000",
        "ob=(2)", "fn=(2)", "0 7000", "ob=(3) ???", "fn=(3) 0x1234", "0 30",
        "ob=(4) /venv/site-packages/numpy/_core/_multiarray_umath.so", "fn=(4) f", "* 20",
        "totals: 7200", ""]))
    costs = di.by_library(out)
    assert costs == {"/usr/lib/libpython3.11.so.1.0": 150, "/venv/lib/libmkl_avx2.so.3": 7000,
                     "???": 30, "/venv/site-packages/numpy/_core/_multiarray_umath.so": 20}
    rows = di.grouped(costs)
    assert rows == {"Python interpreter": 150, "matrix products (MKL, OpenBLAS)": 7000,
                    "compiled kernels and Numba's runtime": 30, "NumPy": 20}
    text = di.table({"tensorgrad": {k: v * 1e3 for k, v in rows.items()}}, 16)
    assert "| Python interpreter | 0.15 |" in text and "| total | 7.20 |" in text
    assert "torch's C++" not in text  # a group no framework ran is left out


def test_decode_instructions_forwards_run_the_user_model():
    """The counted part (what valgrind runs) on its own: the PyTorch-style GPT-mini on
    tensorgrad, forwards over T positions under inference_mode."""
    from benchmarks import decode_instructions as di

    logits = di.forwards("tensorgrad", 4, 2)
    assert isinstance(logits, tg.Tensor) and logits.shape == (1, 4, 256)
    assert not logits.requires_grad and np.isfinite(logits.numpy()).all()
