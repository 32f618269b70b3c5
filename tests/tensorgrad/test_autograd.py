"""Engine semantics: graph shapes, accumulation, freeing, higher order, grad mode, errors, anomaly
detection and the names/scopes every node carries."""
from types import SimpleNamespace

import numpy as np
import pytest

import tensorgrad as tg

F64 = tg.float64


def arr(t):
    return np.asarray(t.detach())


# --- graph shapes ---------------------------------------------------------------------------------
def test_node_used_twice(device):
    a = tg.tensor([1.0, -2.0, 3.0], device=device, requires_grad=True)
    b = a + a
    c = b * b
    c.sum().backward()
    np.testing.assert_allclose(arr(a.grad), 8 * arr(a))  # c = 4a^2


def test_diamond(device):
    x = tg.tensor([0.5, -1.5], dtype=F64, device=device, requires_grad=True)
    left, right = x.exp(), x.sin()
    (left * right).sum().backward()
    v = arr(x)
    np.testing.assert_allclose(arr(x.grad), np.exp(v) * np.sin(v) + np.exp(v) * np.cos(v))


def test_shared_subgraph_matches_torch():
    torch = pytest.importorskip("torch")
    x0, w0 = np.random.default_rng(0).standard_normal((2, 3, 4))

    def f(x, w):
        h = (x @ w.mT).tanh()  # shared by both terms below
        return h.sum() + (h * h).mean() + (h @ x).square().sum()

    x, w = tg.tensor(x0, requires_grad=True), tg.tensor(w0, requires_grad=True)
    f(x, w).backward()
    xt, wt = torch.tensor(x0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    f(xt, wt).backward()
    np.testing.assert_allclose(arr(x.grad), xt.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(arr(w.grad), wt.grad.numpy(), rtol=1e-10)


def test_gradients_accumulate_over_backward_calls(device):
    x = tg.tensor([1.0, 2.0], device=device, requires_grad=True)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_allclose(arr(x.grad), 3 + 2 * arr(x))


def test_leaf_owns_a_writable_grad(device):
    # sum's gradient is a broadcast view and add hands one gradient to both inputs; the leaves
    # must still get their own writable .grad (optimizers and clipping update it in place).
    a = tg.ones(3, device=device, requires_grad=True)
    b = tg.ones(3, device=device, requires_grad=True)
    (a + b).sum().backward()
    a.grad.mul_(0.5)
    np.testing.assert_array_equal(arr(a.grad), 0.5)
    np.testing.assert_array_equal(arr(b.grad), 1.0)


def test_leaves_never_share_a_fresh_gradient(device):
    # mul's gradient is a fresh array that add hands to both leaves: the first leaf may keep
    # it, the second must get a copy; the caller's seed gradient is never taken.
    a = tg.ones(3, device=device, requires_grad=True)
    b = tg.ones(3, device=device, requires_grad=True)
    c = tg.full((3,), 2.0, device=device)
    ((a + b) * c).sum().backward()
    a.grad.mul_(0.5)
    np.testing.assert_array_equal(arr(b.grad), 2.0)
    seed = tg.full((3,), 3.0, device=device)
    x = tg.ones(3, device=device, requires_grad=True)
    x.backward(seed)
    seed.mul_(0.0)
    np.testing.assert_array_equal(arr(x.grad), 3.0)


def test_backward_from_a_leaf(device):
    x = tg.ones(2, 2, device=device, requires_grad=True)
    x.backward(tg.full((2, 2), 3.0, device=device))
    np.testing.assert_array_equal(arr(x.grad), 3.0)


def test_gradient_dtype_follows_the_input(device):
    x = tg.randn(3, device=device, requires_grad=True)
    (x.double() ** 2).sum().backward()
    assert x.grad.dtype == tg.float32


def test_long_chain_is_iterative():
    x = tg.tensor(1.0, dtype=F64, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.00001
    y.backward()  # a recursive engine would hit RecursionError here
    assert abs(x.grad.item() - 1.00001 ** 100_000) < 1e-9


# --- freeing, retain_graph ------------------------------------------------------------------------
def test_saved_tensors_are_freed_and_second_backward_fails(device):
    x = tg.randn(3, device=device, requires_grad=True)
    y = (x * x).exp()
    node = y.grad_fn
    y.sum().backward()
    assert node.saved is None and node.out_data is None
    with pytest.raises(RuntimeError, match="second time.*retain_graph=True"):
        y.sum().backward()


def test_retain_graph_allows_a_second_backward(device):
    x = tg.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(arr(x.grad), 4 * arr(x))


# --- higher order ---------------------------------------------------------------------------------
def test_second_derivative_through_backward(device):
    x = tg.tensor([0.5, -2.0], dtype=F64, device=device, requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    first = x.grad
    np.testing.assert_allclose(arr(first), 3 * arr(x) ** 2)
    assert first.requires_grad
    x.grad = None
    first.sum().backward()
    np.testing.assert_allclose(arr(x.grad), 6 * arr(x))


HVP = {
    "elementwise": lambda x, lib: (x.tanh() * x.sin() + x.exp() / (1 + x * x)
                                   + lib.gelu(x) + x.sigmoid() ** 2).sum(),
    "matmul": lambda x, lib: ((x @ x.mT).tanh() @ x).square().sum(),
    "reductions": lambda x, lib: (x.var(0).sum() + x.logsumexp(1).sum() * x.mean()
                                  + x.std() + x.amax(1).square().sum()),
    "softmax": lambda x, lib: (x.softmax(-1) * x).sum() + x.log_softmax(0).square().sum(),
    "cross_entropy": lambda x, lib: lib.cross_entropy(x, lib.tensor([0, 3, 1]),
                                                      label_smoothing=0.1),
    "layer_norm": lambda x, lib: (lib.layer_norm(x, (4,)) ** 3).sum(),
}


@pytest.mark.parametrize("name", list(HVP))
def test_hessian_vector_products_match_torch(name):
    torch = pytest.importorskip("torch")
    f = HVP[name]
    x0, v0 = np.random.default_rng(1).standard_normal((2, 3, 4))
    x = tg.tensor(x0, requires_grad=True)
    g, = tg.grad(f(x, tg), x, create_graph=True)
    hv, = tg.grad(g, x, tg.tensor(v0))
    ns = SimpleNamespace(gelu=torch.nn.functional.gelu, tensor=torch.tensor,
                         cross_entropy=torch.nn.functional.cross_entropy,
                         layer_norm=torch.nn.functional.layer_norm)
    _, expected = torch.autograd.functional.hvp(lambda t: f(t, ns), torch.tensor(x0),
                                                torch.tensor(v0))
    np.testing.assert_allclose(arr(hv), expected.numpy(), rtol=1e-8, atol=1e-10)


# --- tg.grad --------------------------------------------------------------------------------------
def test_grad_returns_without_touching_dot_grad(device):
    x = tg.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = tg.tensor([3.0], device=device, requires_grad=True)
    gx, gy = tg.grad((x * y).sum(), [x, y])
    np.testing.assert_allclose(arr(gx), [3.0, 3.0])
    np.testing.assert_allclose(arr(gy), [3.0])
    assert x.grad is None and y.grad is None and not gx.requires_grad


def test_grad_with_several_outputs_and_grad_outputs(device):
    x = tg.tensor([1.0, 2.0], device=device, requires_grad=True)
    gx, = tg.grad([x * 2, x * x], [x], [tg.tensor([1.0, 0.0], device=device),
                                       tg.tensor([1.0, 1.0], device=device)])
    np.testing.assert_allclose(arr(gx), [2 + 2, 0 + 4])


def test_grad_with_respect_to_an_intermediate(device):
    x = tg.tensor([1.0, 2.0], device=device, requires_grad=True)
    h = x * 3
    gh, = tg.grad((h * h).sum(), h)
    np.testing.assert_allclose(arr(gh), 2 * arr(h))


def test_grad_allow_unused(device):
    x = tg.ones(2, device=device, requires_grad=True)
    unused = tg.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="input 1 .* is not used.*allow_unused=True"):
        tg.grad(x.sum(), [x, unused])
    gx, gu = tg.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert gu is None
    np.testing.assert_allclose(arr(gx), [2.0, 2.0])


def test_grad_create_graph_then_differentiate(device):
    x = tg.tensor([0.3, -0.7], dtype=F64, device=device, requires_grad=True)
    g, = tg.grad(x.sin().sum(), x, create_graph=True)
    gg, = tg.grad(g.sum(), x)
    np.testing.assert_allclose(arr(gg), -np.sin(arr(x)))


def test_grad_of_input_not_requiring_grad_is_an_error(device):
    x = tg.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="input 0 .* does not require grad"):
        tg.grad(x.sum(), [tg.ones(2, device=device)])


# --- grad mode ------------------------------------------------------------------------------------
def test_no_grad_and_enable_grad_contexts(device):
    x = tg.ones(2, device=device, requires_grad=True)
    with tg.no_grad():
        y = x * 2
        with tg.enable_grad():
            z = x * 2
        assert not tg.is_grad_enabled()
    assert tg.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn.name == "mul"


def test_no_grad_and_enable_grad_decorators(device):
    x = tg.ones(2, device=device, requires_grad=True)

    @tg.no_grad()
    def evaluate(depth):  # recursion must not lose the outer mode
        return evaluate(depth - 1) if depth else x * 2

    @tg.enable_grad()
    def train_step():
        return x * 2

    assert not evaluate(3).requires_grad
    assert tg.is_grad_enabled()
    with tg.no_grad():
        assert train_step().requires_grad
        assert not tg.is_grad_enabled()


def test_set_grad_enabled_as_call_and_context():
    tg.set_grad_enabled(False)
    try:
        assert not tg.is_grad_enabled()
    finally:
        tg.set_grad_enabled(True)
    with tg.set_grad_enabled(False):
        assert not tg.is_grad_enabled()
    assert tg.is_grad_enabled()

    @tg.set_grad_enabled(False)
    def frozen():
        return tg.is_grad_enabled()

    assert tg.is_grad_enabled() and not frozen() and tg.is_grad_enabled()


def test_grad_mode_is_restored_after_an_exception():
    with pytest.raises(KeyError):
        with tg.no_grad():
            raise KeyError
    assert tg.is_grad_enabled()


# --- errors ---------------------------------------------------------------------------------------
def test_backward_of_non_scalar_needs_a_gradient(device):
    y = tg.ones(2, 3, device=device, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"single-element output, got shape \(2, 3\)"):
        y.backward()
    with pytest.raises(RuntimeError, match=r"gradient has shape \(3,\) but the output has shape"):
        y.backward(tg.ones(3, device=device))


def test_backward_without_graph_is_an_error(device):
    with pytest.raises(RuntimeError, match="does not require grad"):
        tg.ones(2, device=device).sum().backward()


def test_inplace_change_of_a_saved_tensor_is_caught(device):
    x = tg.randn(3, device=device, requires_grad=True)
    b = x * 2
    c = b * b  # saves b
    with tg.no_grad():
        b.add_(1)
    with pytest.raises(RuntimeError, match=r"mul: an input saved for backward was modified in "
                                           r"place \(version 0 -> 1\)"):
        c.sum().backward()


def test_inplace_change_through_a_view_or_detach_is_caught(device):
    w = tg.randn(2, 3, device=device)
    x = tg.randn(3, device=device, requires_grad=True)
    y = x * w  # saves w
    w.detach()[0].mul_(2)  # a view of a detached alias shares w's version counter
    with pytest.raises(RuntimeError, match="modified in place"):
        y.sum().backward()


# Ops whose VJP reads their own output: changing that output in place must not go unnoticed.
READS_OUTPUT = {
    "exp": lambda x: x.exp(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "sqrt": lambda x: x.sqrt(),
    "softmax": lambda x: x.softmax(-1),
    "log_softmax": lambda x: x.log_softmax(-1),
    "pow": lambda x: 2.0 ** x,  # the output is saved when the exponent wants a gradient
    "amax": lambda x: x.amax(0),
    "amin": lambda x: x.amin(-1, keepdim=True),
    # Its VJP reads the node's output array directly, not through ctx.out.
    "scaled_dot_product_attention": lambda x: tg.scaled_dot_product_attention(
        x[None], x[None], x[None]),
}


@pytest.mark.parametrize("name", list(READS_OUTPUT))
def test_inplace_change_of_a_saved_output_is_caught(device, name):
    x = (tg.rand(3, 4, dtype=F64, device=device) + 0.5).requires_grad_()
    y = READS_OUTPUT[name](x)
    assert y.grad_fn.prim.saves_out
    y.detach().mul_(0)  # shares y's version counter, as in PyTorch
    with pytest.raises(RuntimeError, match=rf"^{y.grad_fn.name}: the output saved for backward "
                                           r"was modified in place \(version 0 -> 1\); clone it"):
        y.sum().backward()


def test_inplace_change_of_a_saved_output_under_no_grad_or_through_a_view_is_caught(device):
    x = tg.randn(2, 3, device=device, requires_grad=True)
    y = x.exp()
    with tg.no_grad():
        y[0] = 1.0
    with pytest.raises(RuntimeError, match="exp: the output saved for backward was modified"):
        y.sum().backward()
    z = x.tanh()
    z.detach()[1].zero_()  # a view of a detached alias
    with pytest.raises(RuntimeError, match="tanh: the output saved for backward was modified"):
        z.sum().backward()


def test_saved_output_checks_leave_copies_and_second_order_alone(device):
    x = tg.tensor([0.5, -1.0], dtype=F64, device=device, requires_grad=True)
    y = x.exp()
    y.detach().clone().mul_(0)  # a copy has its own version counter
    (g,) = tg.grad(y.sum(), x, create_graph=True)  # g = exp(x), recorded from the saved output
    (gg,) = tg.grad(g.sum(), x)
    np.testing.assert_allclose(arr(gg), np.exp(arr(x)))
    y2 = x.exp()
    (g2,) = tg.grad(y2.sum(), x, create_graph=True)
    y2.detach().mul_(2)  # the graph of g2 saved y2 too: its own backward notices
    with pytest.raises(RuntimeError, match="modified in place"):
        g2.sum().backward()


def test_inplace_on_leaf_requiring_grad(device):
    p = tg.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="add_: a leaf Variable that requires grad is being used "
                                           "in an in-place operation.*no_grad"):
        p.add_(1)
    with tg.no_grad():
        p.add_(1)  # an optimizer step
        p -= 0.5
    np.testing.assert_array_equal(arr(p), 1.5)
    assert p.is_leaf and p.requires_grad


def test_inplace_on_graph_tensor_is_refused(device):
    # Autograd records no in-place ops, so allowing this would silently give wrong gradients.
    x = tg.ones(3, device=device, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="__setitem__: in-place update of a tensor made by "
                                           "'mul'.*out-of-place"):
        y[0] = 5.0
    y += 1  # rebinds to an out-of-place result, so it stays correct
    y.sum().backward()
    np.testing.assert_array_equal(arr(x.grad), 2.0)


# --- anomaly detection, names and scopes ----------------------------------------------------------
@pytest.mark.filterwarnings("ignore:.*encountered:RuntimeWarning")
def test_detect_anomaly_forward_names_op_and_scope(device):
    x = tg.zeros(3, device=device, requires_grad=True)
    with tg.detect_anomaly(), tg.scope("block.0"):
        with pytest.raises(FloatingPointError, match="op 'log' in scope 'block.0' in forward "
                                                     "produced NaN"):
            (x - 1.0).log()
    (x - 1.0).log()  # off again: no error outside


@pytest.mark.filterwarnings("ignore:.*encountered:RuntimeWarning")
def test_detect_anomaly_backward_names_the_vjp(device):
    x = tg.zeros(3, dtype=F64, device=device, requires_grad=True)
    with tg.scope("block.0"):
        y = x.sqrt().sum()  # finite forward, infinite gradient at 0
    with tg.detect_anomaly():
        with pytest.raises(FloatingPointError, match="the gradient of op 'sqrt' in scope "
                                                     "'block.0' produced Inf"):
            y.backward()


def test_nodes_record_op_name_and_scope(device):
    x = tg.randn(2, device=device, requires_grad=True)
    with tg.scope("encoder"):
        with tg.scope("layers.1"):
            y = x.exp()
            assert tg.current_scope() == "encoder.layers.1"
        with tg.scope("/decoder.attn"):
            z = y * 2
    w = z.sum()
    assert (y.grad_fn.name, y.grad_fn.scope) == ("exp", "encoder.layers.1")
    assert (z.grad_fn.name, z.grad_fn.scope) == ("mul", "decoder.attn")
    assert (w.grad_fn.name, w.grad_fn.scope) == ("sum", "")
    assert "grad_fn=<exp in encoder.layers.1>" in repr(y)
    assert tg.current_scope() == ""


def test_scope_is_restored_after_an_exception():
    with pytest.raises(KeyError):
        with tg.scope("a"):
            raise KeyError
    assert tg.current_scope() == ""


def test_errors_name_the_scope(device):
    with tg.scope("blocks.2.mlp"):
        with pytest.raises(ValueError, match=r"add: .* \(2, 3\) float32, \(4,\) float32 in scope "
                                             r"'blocks.2.mlp'"):
            tg.ones(2, 3, device=device) + tg.ones(4, device=device)


# --- gradients of the wrong shape ----------------------------------------------------------------
@pytest.fixture
def registry():
    """tg.autograd.PRIMITIVES, with any primitive a test registers removed afterwards (the op
    tests require a case for every registered primitive)."""
    before = set(tg.autograd.PRIMITIVES)
    yield tg.autograd.PRIMITIVES
    for name in set(tg.autograd.PRIMITIVES) - before:
        del tg.autograd.PRIMITIVES[name]


def test_custom_vjp_returning_a_gradient_of_the_wrong_shape_is_named(device, registry):
    @tg.autograd.primitive("scaled_pair_under_test")
    def scaled_pair(xp, x, w):
        return x * w

    @scaled_pair.defvjp
    def _(ctx, g):
        return g, g.sum(0)[:3]  # input 1 has shape (4,): (3,) cannot be summed back to it

    x = tg.randn(2, 4, device=device, requires_grad=True)
    w = tg.randn(4, device=device, requires_grad=True)
    with tg.scope("blocks.1.mlp"):
        y = scaled_pair(x, w)
    with pytest.raises(RuntimeError, match=r"^scaled_pair_under_test in scope 'blocks.1.mlp': its "
                                           r"VJP returned a gradient of shape \(3,\) for input 1, "
                                           r"which has shape \(4,\)"):
        y.sum().backward()


def test_a_gradient_with_the_right_size_but_the_wrong_shape_is_not_reshaped(device, registry):
    @tg.autograd.primitive("transposing_under_test")
    def transposing(xp, x):
        return x * 2

    transposing.defvjp(lambda ctx, g: (2 * g).reshape(4, 3))  # (3, 4) wanted: same size
    x = tg.randn(3, 4, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"transposing_under_test: its VJP returned a gradient "
                                           r"of shape \(4, 3\) for input 0, which has shape "
                                           r"\(3, 4\)"):
        transposing(x).sum().backward()


def test_a_broken_builtin_vjp_is_named_too(device, monkeypatch):
    exp = tg.autograd.PRIMITIVES["exp"]
    monkeypatch.setattr(exp, "vjp", lambda ctx, g: g[None].expand(2, 3).sum(1))
    x = tg.randn(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"exp: its VJP returned a gradient of shape \(2,\) for "
                                           r"input 0, which has shape \(3,\)"):
        x.exp().sum().backward()


def test_a_gradient_in_a_broadcast_shape_is_still_summed_back(device, registry):
    @tg.autograd.primitive("spreading_under_test")
    def spreading(xp, x):
        return x + 0

    spreading.defvjp(lambda ctx, g: g.expand(2, 3, 4))  # (3, 1) broadcasts to (2, 3, 4)
    x = tg.randn(3, 1, device=device, requires_grad=True)
    spreading(x).sum().backward()
    np.testing.assert_allclose(arr(x.grad), np.full((3, 1), 8.0))


def test_one_tensor_calls_and_calls_with_none_take_the_same_rules(device, registry):
    """A primitive called on one tensor, or on a tensor and a None, records, skips recording,
    shares a view's version and names its errors by the same rules."""
    @tg.autograd.primitive("halve_under_test", view=True)
    def halve(xp, x, w=None):
        if x.shape[-1] % 2:
            raise ValueError("odd last dim")
        return x[..., : x.shape[-1] // 2] if w is None else x * w

    halve.defvjp(lambda ctx, g: (tg.cat([g, tg.zeros_like(g)], -1), None))
    x = tg.randn(2, 4, device=device, requires_grad=True)
    for out in (halve(x), halve(x, None)):  # one tensor; one tensor and a None
        assert out.shape == (2, 2) and out.requires_grad and out.grad_fn.name == "halve_under_test"
        assert out._version is x._version
        grad, = tg.grad(out.sum(), x)
        np.testing.assert_array_equal(arr(grad), [[1, 1, 0, 0]] * 2)
    with tg.no_grad():
        out = halve(x)
    assert not out.requires_grad and out.grad_fn is None and out._version is x._version
    with pytest.raises(ValueError, match=r"^halve_under_test: odd last dim; got inputs \(3,\) "
                                         r"float32$"):
        halve(tg.ones(3, device=device))
