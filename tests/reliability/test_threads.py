"""Grad mode, anomaly mode and the module scope belong to the thread that set them, as in PyTorch.

Each test drives real threads through a fixed interleaving with events, so it fails the same way
every time on an engine whose switches are process-wide, and finishes in well under a second.
"""
import sys
import threading

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.autograd import Primitive

WAIT = 5.0  # seconds an event may take before the test calls the interleaving broken


@pytest.fixture(autouse=True)
def _clean_modes():
    """A failing test must not leave this thread's grad mode or scope switched for the next."""
    yield
    tg.set_grad_enabled(True)
    tg.autograd.set_scope("")


def _run(*targets):
    """Run each target in its own thread; re-raise the first exception a thread hit."""
    errors = []

    def guarded(target):
        try:
            target()
        except BaseException as exc:  # noqa: BLE001  (handed to the test thread below)
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(t,), daemon=True) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(2 * WAIT)
        assert not thread.is_alive(), "a thread did not finish: the interleaving deadlocked"
    if errors:
        raise errors[0]


def _wait(event):
    assert event.wait(WAIT), "the other thread never reached its step"


def test_training_records_every_graph_while_another_thread_runs_no_grad_inference():
    w = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True)
    x = np.array([1.0, 2.0, 3.0])
    stop = threading.Event()
    steps, inferences = [], []

    def train():
        try:
            for step in range(300):
                w.grad = None
                loss = ((w * tg.tensor(x)) ** 2).sum()
                assert loss.grad_fn is not None, f"step {step}: the loss recorded no graph"
                loss.backward()
                np.testing.assert_allclose(w.grad.numpy(), 2 * x * x * w.detach().numpy())
                steps.append(step)
        finally:
            stop.set()

    def infer():
        while not stop.is_set():
            with tg.no_grad():
                y = (w * 2).sum()
            assert y.grad_fn is None and not y.requires_grad
            inferences.append(y)

    # Switch threads every few microseconds so no_grad regions overlap the training ops often.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        _run(train, infer)
    finally:
        sys.setswitchinterval(interval)
    assert len(steps) == 300 and inferences


def test_no_grad_in_one_thread_leaves_another_recording():
    entered, recorded = threading.Event(), threading.Event()
    seen = {}

    def inference():
        with tg.no_grad():
            entered.set()
            _wait(recorded)

    def training():
        _wait(entered)
        x = tg.ones(2, requires_grad=True)
        seen["grad_enabled"] = tg.is_grad_enabled()
        seen["recorded"] = (x * 3).grad_fn is not None
        recorded.set()

    _run(inference, training)
    assert seen == {"grad_enabled": True, "recorded": True}


def test_threads_leaving_no_grad_out_of_order_leave_grad_mode_on():
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    after = {}

    def first():  # enters first, leaves first
        with tg.no_grad():
            a_in.set()
            _wait(b_in)
        after["first"] = tg.is_grad_enabled()
        a_out.set()

    def second():  # enters inside first's region, leaves after it
        _wait(a_in)
        with tg.no_grad():
            b_in.set()
            _wait(a_out)
        after["second"] = tg.is_grad_enabled()

    _run(first, second)
    assert after == {"first": True, "second": True}
    assert tg.is_grad_enabled()


def _blocking_identity(inside, release):
    """An unregistered identity primitive whose VJP signals `inside` and waits for `release`:
    it holds one thread inside backward while another thread works."""
    prim = Primitive("blocking_identity", lambda xp, x: x.copy())

    @prim.defvjp
    def _vjp(ctx, g):
        inside.set()
        _wait(release)
        return g

    return prim


def test_backward_in_one_thread_leaves_grad_mode_on_in_another():
    inside, release = threading.Event(), threading.Event()
    identity = _blocking_identity(inside, release)
    x = tg.ones(3, requires_grad=True)
    seen = {}

    def backward():
        identity(x).sum().backward()

    def record():
        _wait(inside)
        try:
            y = tg.ones(2, requires_grad=True)
            seen["grad_enabled"] = tg.is_grad_enabled()
            seen["recorded"] = (y * y).grad_fn is not None
        finally:
            release.set()

    _run(backward, record)
    assert seen == {"grad_enabled": True, "recorded": True}
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3, dtype=np.float32))


def test_each_thread_records_its_own_scope():
    a_in, b_in, a_done = threading.Event(), threading.Event(), threading.Event()
    scopes = {}
    x = tg.ones(2, requires_grad=True)

    def encoder():
        with tg.scope("encoder.layers.0"):
            a_in.set()
            _wait(b_in)  # the other thread is inside its own scope now
            scopes["encoder"] = (tg.current_scope(), (x * 2).grad_fn.scope)
            a_done.set()

    def decoder():
        _wait(a_in)
        with tg.scope("decoder"):
            b_in.set()
            _wait(a_done)
            scopes["decoder"] = (tg.current_scope(), (x * 2).grad_fn.scope)

    _run(encoder, decoder)
    assert scopes == {"encoder": ("encoder.layers.0", "encoder.layers.0"),
                      "decoder": ("decoder", "decoder")}
    assert tg.current_scope() == ""


@pytest.mark.filterwarnings("ignore:.*encountered:RuntimeWarning")
def test_detect_anomaly_in_one_thread_does_not_reach_another():
    entered, computed = threading.Event(), threading.Event()
    seen = {}

    def watched():
        with tg.detect_anomaly():
            entered.set()
            _wait(computed)
            with pytest.raises(FloatingPointError, match="op 'log'"):
                tg.tensor([-1.0]).log()

    def unwatched():
        _wait(entered)
        try:
            seen["value"] = tg.tensor([-1.0]).log().item()  # NaN, and no error here
        finally:
            computed.set()

    _run(watched, unwatched)
    assert np.isnan(seen["value"])
    # Every thread left anomaly mode: ops are back to not looking up their switches for it.
    assert tg.autograd.grad_mode.anomaly_threads == [0]


def test_modules_called_in_two_threads_name_their_nodes_by_their_own_paths():
    from tensorgrad import nn

    class Pause(nn.Module):
        def __init__(self, arrived, go):
            super().__init__()
            self.arrived, self.go = arrived, go

        def forward(self, x):
            self.arrived.set()
            _wait(self.go)
            return x * 2

    class Net(nn.Module):
        def __init__(self, arrived, go):
            super().__init__()
            self.block = Pause(arrived, go)

        def forward(self, x):
            return self.block(x)

    a_in, a_go, b_in, b_go = (threading.Event() for _ in range(4))
    first, second = Net(a_in, a_go), Net(b_in, b_go)
    x = tg.ones(2, requires_grad=True)
    scopes = {}

    def call_first():
        scopes["first"] = first(x).grad_fn.scope

    def call_second():
        _wait(a_in)  # the first thread is inside first.block
        scopes["second"] = second(x).grad_fn.scope

    def conduct():  # both calls are inside their blocks: let them finish
        _wait(b_in)
        a_go.set()
        b_go.set()

    _run(call_first, call_second, conduct)
    assert scopes == {"first": "block", "second": "block"}
