"""Per-op overhead: a chain of tiny elementwise ops, y = y * 1.0001 + 0.0001 on 16 elements.

The arithmetic is nothing; what is measured is the cost of one op call: dispatch, output
allocation and, with a gradient wanted, recording the graph and walking it back. "fwd" runs the
chain on a leaf that requires grad (as in training), its result dropped before the next chain
starts; "fwd+bwd" adds y.sum().backward(). The "result alive" cases keep the previous chain's
result while the next one is built, as the usual loop `res = fn()` or `loss = model(x)` does:
the old graph is torn down only when the new result replaces it. One repetition runs CHAINS
chains; the rows give the median with its quartiles. The NumPy floor is the same chain as bare
ufunc calls (its backward: the 100 products of 1.0001).
"""
from . import row
from ..timing import scale

FRAMEWORKS = ("tensorgrad", "torch", "numpy")
DESCRIPTION = "microseconds per tiny elementwise op, median and quartiles"
SIZES = {"full": 200, "quick": 200, "tiny": 20}  # ops in the chain (two per step)
CHAINS = 10  # chains per timed repetition: a few milliseconds, well above the clock's grain


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
            loss = forward().sum()
            loss.backward()
            return loss

    kept = [None]  # the previous chain's result, for the "result alive" cases

    def dropped(fn):
        def chains():
            for _ in range(CHAINS):
                fn()
        return chains

    def alive(fn):
        def chains():
            for _ in range(CHAINS):
                kept[0] = fn()
        return chains

    per_op = 1e6 / (n_ops * CHAINS)  # seconds per repetition -> microseconds per op
    cases = (("fwd", dropped(forward)), ("fwd, result alive", alive(forward)),
             ("fwd+bwd", dropped(forward_backward)),
             ("fwd+bwd, result alive", alive(forward_backward)))
    rows = []
    for case, chains in cases:
        rows.append(row(case, "us/op", scale(env.measure(chains), per_op), spread="quartiles"))
        kept[0] = None
    return rows
