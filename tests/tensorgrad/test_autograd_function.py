"""tg.autograd.Function against torch.autograd.Function: the same Function classes written for
both, values and gradients equal, the ctx API, double backward and the errors."""
import numpy as np
import pytest

import tensorgrad as tg


def _functions(lib):
    """The same user Functions written against `lib` (tensorgrad or torch)."""

    class Cube(lib.autograd.Function):  # a saved input, a non-tensor argument, double backward
        @staticmethod
        def forward(ctx, x, scale):
            ctx.save_for_backward(x)
            ctx.scale = scale
            return x ** 3 * scale

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * g * ctx.scale, None

    class ExpTimes(lib.autograd.Function):  # a saved output; needs_input_grad
        @staticmethod
        def forward(ctx, x, y):
            out = x.exp() * y
            ctx.save_for_backward(out, x, y)
            return out

        @staticmethod
        def backward(ctx, g):
            out, x, y = ctx.saved_tensors
            gx = g * out if ctx.needs_input_grad[0] else None
            gy = g * x.exp() if ctx.needs_input_grad[1] else None
            return gx, gy

    class SortWithIndex(lib.autograd.Function):  # two outputs, one non-differentiable
        @staticmethod
        def forward(ctx, x):
            values, index = x.sort(-1)
            ctx.mark_non_differentiable(index)
            ctx.save_for_backward(index)
            return values, index

        @staticmethod
        def backward(ctx, g_values, g_index):
            index, = ctx.saved_tensors
            return lib.zeros_like(g_values).scatter(-1, index, g_values)

    class SplitHalves(lib.autograd.Function):  # two differentiable outputs, None grads
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            n = x.shape[-1] // 2
            return x[..., :n] * 2, x[..., n:] * 3

        @staticmethod
        def backward(ctx, ga, gb):
            parts = [ga * 2 if ga is not None else None, gb * 3 if gb is not None else None]
            ref = ga if ga is not None else gb
            parts = [p if p is not None else lib.zeros_like(ref) for p in parts]
            return lib.cat(parts, -1)

    class Scaled(lib.autograd.Function):  # PyTorch 2's forward + setup_context style
        @staticmethod
        def forward(x, factor):
            return x * factor

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.factor = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.factor, None

    return dict(Cube=Cube, ExpTimes=ExpTimes, SortWithIndex=SortWithIndex,
                SplitHalves=SplitHalves, Scaled=Scaled)


def _run(lib, name, arrays, requires):
    fns = _functions(lib)
    inputs = [lib.tensor(a, requires_grad=r) for a, r in zip(arrays, requires)]
    extra = {"Cube": (1.5,), "Scaled": (2.5,)}.get(name, ())
    out = fns[name].apply(*inputs, *extra)
    outs = out if isinstance(out, tuple) else (out,)
    loss = sum((o * o).sum() for o in outs[:1]) + sum(o.sum() for o in outs[1:]
                                                      if o.is_floating_point())
    loss.backward()
    return [o.detach().numpy() for o in outs], [None if t.grad is None else t.grad.numpy()
                                                for t in inputs]


@pytest.mark.parametrize("name, shapes, requires", [
    ("Cube", [(3, 4)], [True]),
    ("ExpTimes", [(2, 5), (2, 5)], [True, True]),
    ("ExpTimes", [(2, 5), (5,)], [False, True]),
    ("SortWithIndex", [(3, 6)], [True]),
    ("SplitHalves", [(2, 6)], [True]),
    ("Scaled", [(4,)], [True]),
])
def test_values_and_gradients_equal_torch(name, shapes, requires):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    ours, theirs = _run(tg, name, arrays, requires), _run(torch, name, arrays, requires)
    for a, b in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_double_backward_through_a_backward_written_in_ops():
    torch = pytest.importorskip("torch")
    x0 = np.array([0.5, -1.0, 2.0])
    results = []
    for lib in (tg, torch):
        cube = _functions(lib)["Cube"]
        x = lib.tensor(x0, requires_grad=True)
        g, = lib.autograd.grad(cube.apply(x, 2.0).sum(), [x], create_graph=True)
        gg, = lib.autograd.grad((g * g).sum(), [x])
        results.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][1], results[1][1])


def test_ctx_flags_outputs_and_no_grad():
    exp_times = _functions(tg)["ExpTimes"]
    seen = []

    class Probe(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            seen.append((ctx.needs_input_grad, tg.is_grad_enabled()))
            return x * y * k

        @staticmethod
        def backward(ctx, g):
            return g, g, None

    x, y = tg.ones(2, requires_grad=True), tg.ones(2)
    out = Probe.apply(x, y, 3)
    assert seen[-1] == ((True, False, False), False)  # forward runs under no_grad
    assert out.requires_grad and out.grad_fn is not None
    with tg.no_grad():
        assert not Probe.apply(x, y, 3).requires_grad
    assert not exp_times.apply(tg.ones(2), tg.ones(2)).requires_grad
    values, index = _functions(tg)["SortWithIndex"].apply(tg.randn(3, requires_grad=True))
    assert values.requires_grad and not index.requires_grad


def test_errors_as_torch():
    cube = _functions(tg)["Cube"]
    x = tg.ones(3, requires_grad=True)
    y = cube.apply(x, 1.0)
    with tg.no_grad():
        x.mul_(2)  # an in-place write to the saved input
    with pytest.raises(RuntimeError, match="modified in place"):
        y.sum().backward()

    class TooFew(tg.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        TooFew.apply(tg.ones(2, requires_grad=True), tg.ones(2)).sum().backward()
    z = cube.apply(tg.ones(2, requires_grad=True), 1.0).sum()
    z.backward()
    with pytest.raises(RuntimeError, match="second time"):
        z.backward()
