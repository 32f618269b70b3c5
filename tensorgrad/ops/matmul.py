"""Matrix products: matmul (batched, broadcast, 1-D cases), its strict forms mm, bmm and mv, and
linear (x @ W.T + b, fused).

mm, bmm and mv check their operands' ranks and sizes as strictly as PyTorch does (matmul's
broadcasting would otherwise accept what torch rejects)."""
from ..autograd import is_grad_enabled, primitive
from ..backend.overrides import overridable
from ..autograd.grad_mode import this_thread
from ..tensor import Tensor, from_array, tensor_method, tensor_reflected
from .operands import binary_operands


@primitive("matmul", saves=(0, 1), saves_when={0: (1,), 1: (0,)})
def _matmul(xp, a, b):
    return xp.matmul(a, b)


@_matmul.defvjp
def _matmul_vjp(ctx, g):
    a, b = ctx.inputs  # each saved only when the other's gradient is wanted
    na, nb = (len(shape) for shape in ctx.in_shapes)
    # Treat 1-D operands as matrices (a row, b a column) so one pair of formulas serves all
    # cases; the engine then sums broadcast batch dimensions away.
    g2 = g
    if na == 1:
        g2 = g2.unsqueeze(-1 if nb == 1 else -2)
    if nb == 1:
        g2 = g2.unsqueeze(-1)
    ga = gb = None
    if ctx.needs_grad[0]:
        b2 = b.unsqueeze(-1) if nb == 1 else b
        ga = g2 @ b2.mT  # (..., m, n) @ (..., n, k) -> (..., m, k)
        if na == 1:
            ga = ga.squeeze(-2)
    if ctx.needs_grad[1]:
        if nb == 2 and na > 2:  # a shared weight: one (k, B*m) @ (B*m, n) product
            gb = a.reshape(-1, a.shape[-1]).mT @ g2.reshape(-1, g2.shape[-1])
        else:
            a2 = a.unsqueeze(0) if na == 1 else a
            gb = a2.mT @ g2  # (..., k, m) @ (..., m, n) -> (..., k, n)
            if nb == 1:
                gb = gb.squeeze(-1)
    return ga, gb


@tensor_method
def matmul(a, b):
    """Matrix product with NumPy/PyTorch semantics: batched, broadcast, 1-D operands allowed."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        _same_dtype("matmul", a, b)
    a, b = binary_operands(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"matmul: both arguments need at least 1 dimension, got shapes "
                           f"{a.shape} and {b.shape}")
    k_a = a.shape[-1]
    k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if k_a != k_b:
        raise RuntimeError(f"matmul: inner dimensions differ: {a.shape} @ {b.shape} "
                           f"({k_a} != {k_b})")
    return _matmul(a, b)


tensor_method(matmul, "__matmul__")
tensor_reflected(matmul, "matmul")


def _same_dtype(op, a, b):
    # PyTorch promotes elementwise ops but not matrix products: a float64 batch through a float32
    # layer is an error there, so it is here (promoting would silently run the model in float64).
    # Inside autocast the product's primitive casts both operands (tensorgrad.amp): the dtypes
    # may differ if the casts make them one (float64 is never cast, so float64 with float32
    # stays an error, as in PyTorch).
    if a.data.dtype == b.data.dtype:  # the thread's autocast policy read only on a mismatch
        return
    policy = this_thread.switches.autocast
    if policy is None or not policy.covers(a) or len(
            {t.data.dtype for t in policy("linear" if op == "linear" else "matmul", (a, b))}) > 1:
        raise RuntimeError(f"{op}: expected both operands to have the same dtype, got {a.dtype} "
                           f"and {b.dtype} (shapes {a.shape} and {b.shape}); convert one with "
                           ".to(dtype)")


# --- mm, bmm, mv: matmul for exactly the ranks PyTorch's accept -----------------------------
# Checked here, they go to the primitive itself: matmul's looser checks would only repeat these.
def _require(op, cond, message, *tensors):
    if not cond:
        shapes = " and ".join(str(t.shape) for t in tensors)
        raise RuntimeError(f"{op}: {message} (got shapes {shapes})")


def _check_product(op, a, b, ranks, same_dtype=True):
    for t in (a, b):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected Tensors, got {type(t).__name__}")
    _require(op, (a.data.ndim, b.data.ndim) == ranks,
             f"expected a {ranks[0]}-D and a {ranks[1]}-D tensor", a, b)
    if same_dtype:
        _same_dtype(op, a, b)


@tensor_method
def mm(input, mat2):
    """(n, m) @ (m, p) -> (n, p); no broadcasting, no 1-D operands."""
    _check_product("mm", input, mat2, (2, 2))
    _require("mm", input.data.shape[1] == mat2.data.shape[0], "inner sizes differ", input, mat2)
    return _matmul(*binary_operands(input, mat2))


@tensor_method
def bmm(input, mat2):
    """(b, n, m) @ (b, m, p) -> (b, n, p); the batch sizes must be equal (no broadcasting)."""
    _check_product("bmm", input, mat2, (3, 3))
    _require("bmm", input.shape[0] == mat2.shape[0] and input.shape[2] == mat2.shape[1],
             "expected batch2 of shape (b, m, p) for batch1 of shape (b, n, m)", input, mat2)
    return _matmul(*binary_operands(input, mat2))


@tensor_method
def mv(input, vec):
    """(n, m) @ (m,) -> (n,)."""
    _check_product("mv", input, vec, (2, 1))
    _require("mv", input.data.shape[1] == vec.data.shape[0], "sizes differ", input, vec)
    return _matmul(*binary_operands(input, vec))


# --- linear: x @ W.T + b as one primitive -------------------------------------------------------
# Fused because every Linear layer is exactly this: one GEMM over all leading rows with the bias
# added (the backend's `linear`), and a VJP that gets the weight gradient as one GEMM instead of
# a batched product summed afterwards (benchmarks/: mlp_step, gpt_step). The VJP works on arrays
# (seven fewer op calls per layer), and in tensorgrad ops under create_graph. It saves x only
# for the weight's gradient and the weight only for x's, as PyTorch's addmm does (a frozen layer
# keeps no activations); hence no composite, whose replay would need both.
@overridable("linear.column_sums")
def _column_sums(xp, g):
    """g (N, C) summed over its rows: as a product, BLAS reads g once where sum(axis=0) does not
    (gpt_step)."""
    return xp.matmul(xp.ones(g.shape[0], g.dtype), g)  # (N,) @ (N, C)


@primitive("linear", saves=(0, 1), saves_when={0: (1,), 1: (0,)})
def _linear(xp, x, weight, bias):
    out = xp.linear(x.reshape(-1, x.shape[-1]), weight, bias)  # (N, in) @ (in, out) + bias
    return out.reshape(x.shape[:-1] + (weight.shape[0],))


@_linear.defvjp
def _linear_vjp(ctx, g):
    x, weight = ctx.inputs  # each saved only when the other's gradient is wanted
    if is_grad_enabled():  # create_graph: the same products in tensorgrad ops
        g2 = g.reshape(-1, g.shape[-1])  # (N, out)
        return (g @ weight if ctx.needs_grad[0] else None,
                g2.mT @ x.reshape(-1, x.shape[-1]) if ctx.needs_grad[1] else None,
                g2.sum(0) if ctx.needs_grad[2] else None)
    xp = ctx.backend
    g2 = g.data.reshape(-1, g.shape[-1])  # (N, out)
    gx = gw = gb = None
    if ctx.needs_grad[0]:
        gx = xp.matmul(g2, weight.data).reshape(ctx.in_shapes[0])  # (N, out) @ (out, in)
    if ctx.needs_grad[1]:
        gw = xp.matmul(g2.T, x.data.reshape(-1, x.shape[-1]))  # (out, N) @ (N, in)
    if ctx.needs_grad[2]:
        gb = _column_sums(xp, g2)
    return tuple(None if a is None else from_array(a, xp) for a in (gx, gw, gb))


def linear(input, weight, bias=None):
    """input @ weight.T + bias. input: (*, in_features), weight: (out_features, in_features),
    bias: (out_features,) -> (*, out_features)."""
    # Each array read once (linear runs for every layer: generate, 17 calls per token)
    x, w, b = input.data, weight.data, None if bias is None else bias.data
    if x.ndim == 0 or w.ndim != 2 or x.shape[-1] != w.shape[1]:
        raise ValueError(f"linear: input of shape {input.shape} needs last dimension "
                         f"{weight.shape[-1]} to match weight of shape {weight.shape} "
                         "(out_features, in_features)")
    if b is not None and b.shape != w.shape[:1]:
        raise ValueError(f"linear: bias must have shape ({weight.shape[0]},), got {bias.shape}")
    dtype = x.dtype
    if w.dtype != dtype or (b is not None and b.dtype != dtype):
        # the checks are called only on a mismatch: linear runs for every layer (decoding)
        _same_dtype("linear", input, weight)
        if bias is not None:
            _same_dtype("linear", input, bias)
    return _linear(input, weight, bias)
