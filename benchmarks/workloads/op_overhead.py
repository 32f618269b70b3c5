"""Per-op overhead: a chain of tiny elementwise ops, y = y * 1.0001 + 0.0001 on 16 elements.

The arithmetic is nothing; what is measured is the cost of one op call: dispatch, output
allocation and, with a gradient wanted, recording the graph and walking it back. "fwd" runs the
chain on a leaf that requires grad (as in training); "fwd+bwd" adds y.sum().backward(). The
NumPy floor is the same chain as bare ufunc calls (its backward: the 100 products of 1.0001).
"""
from . import row
from ..timing import scale

FRAMEWORKS = ("tensorgrad", "torch", "numpy")
DESCRIPTION = "microseconds per tiny elementwise op"
SIZES = {"full": 200, "quick": 200, "tiny": 20}  # ops in the chain (two per step)


def run(env):
    n_ops = SIZES[env.mode]
    x = env.randn(16, requires_grad=env.framework != "numpy")

    def forward():
        y = x
        for _ in range(n_ops // 2):
            y = y * 1.0001 + 0.0001
        return y

    if env.framework == "numpy":
        def forward_backward():
            forward()
            grad = env.xp.ones_like(x)  # d sum(y) / dy
            for _ in range(n_ops // 2):
                grad = grad * 1.0001
            return grad
    else:
        def forward_backward():
            x.grad = None
            forward().sum().backward()

    per_op = 1e6 / n_ops  # seconds per chain -> microseconds per op
    return [row("fwd", "us/op", scale(env.measure(forward), per_op)),
            row("fwd+bwd", "us/op", scale(env.measure(forward_backward), per_op))]
