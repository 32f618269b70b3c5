"""
Autograd: from a scalar expression to tensors
=============================================

Reverse-mode automatic differentiation computes the gradient of one number (a loss) with respect
to every input in one backward pass, for about the cost of the forward. This tutorial builds it
up as micrograd does, from a scalar expression, then shows that nothing changes for tensors, and
draws every graph it talks about.
"""
import io

import matplotlib.pyplot as plt

import tensorgrad as tg


def show(graph, title=None, width=7):
    """Draws a graphviz graph (tg.viz.draw's result) as a matplotlib figure."""
    image = plt.imread(io.BytesIO(graph.pipe(format="png")))
    height = width * image.shape[0] / image.shape[1]
    fig, ax = plt.subplots(figsize=(width, max(height, 1.0)))
    ax.imshow(image)
    ax.axis("off")
    if title:
        ax.set_title(title)
    plt.show()


# %%
# A scalar expression
# -------------------
# Every operation on a tensor that requires grad records a node: the primitive's name and what
# its derivative will need. The result remembers the node that made it (``grad_fn``).

a = tg.tensor(2.0, requires_grad=True)
b = tg.tensor(-3.0, requires_grad=True)
c = tg.tensor(10.0, requires_grad=True)
e = a * b
d = e + c
f = tg.tensor(-2.0, requires_grad=True)
L = d * f
print(L, L.grad_fn)

# %%
# The graph, with each value and the gradient of ``L`` with respect to it (as in micrograd's
# diagrams). ``show_grad`` computes the gradients on a separate walk and leaves ``.grad`` alone.
show(tg.viz.draw(L, {"a": a, "b": b, "c": c, "f": f}, show_values=True, show_grad=True,
                 rankdir="LR"), "L = (a * b + c) * f")

# %%
# The same graph in the explorer (``tg.viz.explore``): hover a node for its values, toggle the
# backward view to see each gradient, or search by op name. One HTML file, nothing to serve.
tg.viz.explore(L, {"a": a, "b": b, "c": c, "f": f}, path="../generated/explore/autograd.html")

# %%
# .. raw:: html
#
#    <iframe src="../../autograd.html" width="100%" height="420"></iframe>

# %%
# The chain rule, by hand
# -----------------------
# ``backward()`` visits the nodes from ``L`` back to the leaves. At each it multiplies the
# gradient arriving from above by the local derivative (the vector-Jacobian product, VJP):
#
# - dL/dd = f = -2 and dL/df = d = 4
# - d = e + c passes its gradient through unchanged: dL/de = dL/dc = -2
# - e = a * b swaps its inputs: dL/da = b * dL/de = 6 and dL/db = a * dL/de = -4
L.backward()
print("dL/da", a.grad.item(), "dL/db", b.grad.item(), "dL/dc", c.grad.item(),
      "dL/df", f.grad.item())
assert (a.grad.item(), b.grad.item(), c.grad.item(), f.grad.item()) == (6.0, -4.0, -2.0, 4.0)

# %%
# The order backward walks: the gradient graph, each op numbered by when its VJP runs.
a.grad = b.grad = c.grad = f.grad = None
L = (a * b + c) * f
show(tg.viz.draw(L, {"a": a, "b": b, "c": c, "f": f}, backward=True, rankdir="LR"),
     "backward() runs the VJPs in reverse topological order")

# %%
# A value used twice
# ------------------
# When a value feeds two ops, its gradient is the sum over both paths. The engine sums the
# gradients arriving at each node before passing them on, so ``x * x`` gives 2x.
x = tg.tensor(3.0, requires_grad=True)
y = x * x + x
y.backward()
print("d(x*x + x)/dx at 3 =", x.grad.item())
assert x.grad.item() == 7.0

# %%
# Checked against finite differences
# ----------------------------------
# Every primitive's VJP is tested the same way: a central difference in float64 against the
# analytic gradient, also at second order. ``tg.gradcheck`` is that test.
def neuron(w, x):
    return (w * x).sum().tanh()


w = tg.randn(3, dtype=tg.float64, requires_grad=True)
xs = tg.randn(3, dtype=tg.float64)
print("gradcheck:", tg.gradcheck(neuron, (w, xs)), " gradgradcheck:",
      tg.gradgradcheck(neuron, (w, xs)))

# %%
# Tensors: the same engine
# ------------------------
# With tensors, each op's VJP is a matrix expression: for ``Y = X @ W`` the gradient flowing
# into ``W`` is ``X^T @ dY``. Broadcasting (adding a bias of shape (2,) to a (4, 2) matrix) is
# undone in one place, the engine, which sums the gradient back to the input's shape.
X = tg.randn(4, 3)
W = tg.randn(3, 2, requires_grad=True)
bias = tg.zeros(2, requires_grad=True)
loss = (X @ W + bias).relu().mean()
loss.backward()
print("W.grad", W.grad.shape, " bias.grad", bias.grad.shape)
dY = ((X @ W + bias) > 0).float() / 8        # d mean / d relu-input
assert tg.allclose(W.grad, X.T @ dY, atol=1e-6)
assert tg.allclose(bias.grad, dY.sum(0), atol=1e-6)

# %%
# The graph of that loss, with the shape of every tensor:
show(tg.viz.draw((X @ W + bias).relu().mean(), {"X": X, "W": W, "bias": bias}, rankdir="LR"),
     "a linear layer, ReLU and a mean")

# %%
# Gradients of gradients
# ----------------------
# VJPs are written in tensorgrad's own ops, so with ``create_graph=True`` the backward is itself
# a graph that can be differentiated: here the second derivative of tanh.
t = tg.tensor(0.5, requires_grad=True)
(g,) = tg.grad(t.tanh(), t, create_graph=True)
(h,) = tg.grad(g, t)
th = t.tanh().item()
print(f"tanh'(0.5) = {g.item():.6f} (1 - tanh^2 = {1 - th ** 2:.6f})")
print(f"tanh''(0.5) = {h.item():.6f} (-2 tanh (1 - tanh^2) = {-2 * th * (1 - th ** 2):.6f})")
assert abs(h.item() + 2 * th * (1 - th ** 2)) < 1e-6

# %%
# A module's graph
# ----------------
# Ops made inside a module's ``forward`` are grouped by the module path, so the picture of a
# model reads like its code. ``depth=1`` collapses each top-level module into one box.
from tensorgrad import nn  # noqa: E402

mlp = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 3))
out = nn.functional.cross_entropy(mlp(tg.randn(5, 4)), tg.tensor([0, 1, 2, 0, 1]))
show(tg.viz.draw(out, params=mlp), "an MLP's loss, grouped by module")
