"""Registry-driven op tests: one line per case, every primitive covered.

Differentiable primitives: first- and second-order gradient checks in float64 against central
differences (`tg.gradcheck`, `tg.gradgradcheck`), plus a float32 run that must stay float32.
Non-differentiable primitives: forward values against NumPy. A meta-test fails when a primitive
in `tg.PRIMITIVES` has no case, so a new primitive cannot land untested.
"""
from collections import namedtuple

import math
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.autograd import Node, sum_to
from tensorgrad.ops.conv import fold, unfold

F64 = tg.float64


# --- input specs: each makes a fresh tensor on the test's device ----------------------------------
def randn(*shape):
    """Standard normal float64 that requires grad."""
    return lambda device: tg.randn(*shape, dtype=F64, device=device, requires_grad=True)


def positive(*shape):
    """In [0.5, 2): for log, sqrt, pow bases and divisors."""
    return lambda device: (tg.rand(*shape, dtype=F64, device=device) * 1.5 + 0.5).requires_grad_()


def apart(*shape):
    """|x| in [0.2, 1.2): away from the kink at 0 (abs, relu)."""
    def make(device):
        x = tg.rand(*shape, dtype=F64, device=device) + 0.2
        return tg.where(tg.rand(*shape, device=device) > 0.5, x, -x).requires_grad_()
    return make


def leaf(values):
    """Fixed float64 values that require grad (ties, values away from clamp bounds)."""
    return lambda device: tg.tensor(values, dtype=F64, device=device, requires_grad=True)


def const(values, dtype=tg.int64):
    """A constant that does not require grad (indices, masks, targets, class weights)."""
    return lambda device: tg.tensor(values, dtype=dtype, device=device)


Case = namedtuple("Case", "prim fn inputs second_order")


def case(prim, fn, *inputs, second_order=True):
    """`prim` must appear in fn's graph; a bare tuple input is a randn of that shape."""
    inputs = tuple(randn(*spec) if isinstance(spec, tuple) else spec for spec in inputs)
    return Case(prim, fn, inputs, second_order)


def seeded_dropout(x, p=0.5):
    tg.manual_seed(7)  # the same mask on every call, so finite differences see one function
    return tg.dropout(x, p)


SPREAD = [[-1.2, -0.3, 0.1], [0.7, 2.0, -0.8]]  # away from the clamp bounds used below
ROUNDING = [[-1.26, -0.3, 0.12], [0.7, 2.33, -0.81]]  # away from integers, halves and tenths
SPREAD_UNIT = [[-0.8, -0.3, 0.1], [0.45, 0.7, -0.55]]  # inside (-1, 1): asin, acos, atanh, tan
MASK = [[True, False, True], [False, False, True]]
NUM, DEN = [[5.3, -5.3, 2.2], [-7.1, 0.8, 3.9]], [[2.0, 2.0, -1.5], [1.5, -0.3, 1.1]]
INDEX_ADD = tg.PRIMITIVES["index_add"]  # only reached through a VJP otherwise

CASES = [
    # arithmetic, broadcasting in both directions, Python scalars on either side
    case("add", lambda a, b: a + b, (2, 3), (3,)),
    case("add", lambda a, b: tg.add(a, b, alpha=2.0), (2, 1), (1, 4)),
    case("add", lambda a: 1.5 + a, (3,)),
    case("sub", lambda a, b: a - b, (2, 1, 3), (4, 1)),
    case("sub", lambda a: 2.0 - a, (3,)),
    case("mul", lambda a, b: a * b, (3, 1), (1, 4)),
    case("mul", lambda a: a * a, (4,)),
    case("mul", seeded_dropout, (3, 4)),
    case("div", lambda a, b: a / b, (2, 3), positive(3)),
    case("reciprocal", lambda b: 2.0 / b, positive(2, 2)),
    case("reciprocal", lambda b: b.reciprocal(), positive(3)),
    case("div", lambda a, b: a.div(b).true_divide(b), (2, 3), positive(2, 3)),
    # rounded quotients (zero gradient) and remainders; quotients stay away from whole numbers
    case("div_rounded", lambda a, b: tg.div(a, b, rounding_mode="floor"), leaf(NUM), leaf(DEN)),
    case("div_rounded", lambda a, b: a.div(b, rounding_mode="trunc"), leaf(NUM), leaf(DEN[0])),
    case("div_rounded", lambda a: a // 1.5, leaf(NUM)),
    case("remainder", lambda a, b: a % b, leaf(NUM), leaf(DEN)),
    case("remainder", lambda a, b: tg.remainder(a, b), leaf(NUM), leaf([2.0, -1.7, 0.9])),
    case("remainder", lambda b: 7.3 % b, leaf(DEN)),
    case("fmod", lambda a, b: a.fmod(b), leaf(NUM), leaf(DEN)),
    case("fmod", lambda a, b: tg.fmod(a, b), leaf(NUM), leaf([2.0, -1.7, 0.9])),
    case("fmod", lambda a: a.fmod(-1.5), leaf(NUM)),
    case("neg", lambda a: -a, (2, 3)),
    case("pow", lambda a: a ** 3, (2, 3)),
    case("pow", lambda a, b: a ** b, positive(2, 3), (3,)),
    case("pow", lambda b: 2.0 ** b, (4,)),
    # unary math and the activations built on it
    case("exp", lambda a: a.exp(), (2, 3)),
    case("log", lambda a: a.log(), positive(2, 3)),
    case("sqrt", lambda a: a.sqrt(), positive(2, 3)),
    case("sqrt", lambda a: a.rsqrt(), positive(4)),
    case("abs", lambda a: a.abs(), apart(2, 3)),
    case("sin", lambda a: a.sin(), (2, 3)),
    case("cos", lambda a: a.cos(), (2, 3)),
    case("tanh", lambda a: a.tanh(), (2, 3)),
    case("gelu", lambda a: tg.gelu(a, approximate="tanh"), (2, 3)),
    case("linear", lambda x, w, b: tg.linear(x, w, b), (2, 3, 4), (5, 4), (5,)),
    case("linear", lambda x, w: tg.linear(x, w), (4,), (3, 4)),
    # one side frozen: only the other is saved
    case("linear", lambda x, w: tg.linear(x, w), (2, 3), const([[0.5, -1.0, 2.0]], F64)),
    case("linear", lambda x, w, b: tg.linear(x, w, b), const([[0.5, -1.0]], F64), (3, 2), (3,)),
    case("sigmoid", lambda a: a.sigmoid(), (2, 3)),
    case("sigmoid", lambda a: tg.silu(a), (2, 3)),
    case("relu", lambda a: a.relu(), apart(2, 3)),
    case("erf", lambda a: a.erf(), (2, 3)),
    case("tan", lambda a: a.tan(), leaf(SPREAD_UNIT)),
    case("asin", lambda a: a.asin(), leaf(SPREAD_UNIT)),
    case("acos", lambda a: a.arccos(), leaf(SPREAD_UNIT)),
    case("atan", lambda a: a.atan(), (2, 3)),
    case("sinh", lambda a: a.sinh(), (2, 3)),
    case("cosh", lambda a: a.cosh(), (2, 3)),
    case("asinh", lambda a: a.asinh(), (2, 3)),
    case("acosh", lambda a: (a + 1.0).acosh(), positive(2, 3)),
    case("atanh", lambda a: a.atanh(), leaf(SPREAD_UNIT)),
    case("erfinv", lambda a: a.erfinv(), leaf(SPREAD_UNIT)),
    case("log1p", lambda a: a.log1p(), positive(2, 3)),
    case("expm1", lambda a: a.expm1(), (2, 3)),
    case("expm1", lambda a: tg.elu(a), apart(2, 3)),
    case("log2", lambda a: a.log2(), positive(2, 3)),
    case("log10", lambda a: a.log10(), positive(2, 3)),
    case("exp2", lambda a: a.exp2(), (2, 3)),
    case("atan2", lambda a, b: a.atan2(b), (2, 3), (3,)),
    case("hypot", lambda a, b: tg.hypot(a, b), (2, 1), (1, 3)),
    case("copysign", lambda a, b: a.copysign(b), apart(2, 3), (3,)),
    case("copysign", lambda a: tg.copysign(a, -1.0), apart(3,)),
    case("logaddexp", lambda a, b: tg.logaddexp(a, b), (2, 3), (2, 1)),
    case("logaddexp", lambda a, b: a.logaddexp2(b), (3,), (2, 3)),
    case("gelu", lambda a: tg.gelu(a), (2, 3)),
    case("gelu", lambda a: tg.gelu(a * 4.0), (3, 4)),
    # selections: a tie is a kink, so tie cases stop at first order
    case("maximum", lambda a, b: tg.maximum(a, b), (2, 3), (3,)),
    case("minimum", lambda a, b: tg.minimum(a, b), (2, 1), (1, 3)),
    case("maximum", tg.maximum, leaf([1.0, 2.0, 3.0]), leaf([1.0, 0.0, 3.0]), second_order=False),
    case("minimum", tg.minimum, leaf([1.0, 2.0, 3.0]), leaf([1.0, 0.0, 3.0]), second_order=False),
    case("clamp", lambda a: a.clamp(-0.5, 0.5), leaf(SPREAD)),
    case("clamp", lambda a: a.clamp(min=0.0), leaf(SPREAD)),
    case("clamp", lambda a: tg.clamp(a, max=0.5), leaf(SPREAD)),
    case("maximum", lambda a, lo: a.clamp(lo, 1.5), leaf(SPREAD), (3,)),
    case("where", lambda a, b: tg.where(a > 0, a, b), (2, 3), (3,)),
    case("where", lambda a, b: a.where(b > 0, 0.0), (2, 3), (2, 1)),
    case("where", lambda a, m: a.masked_fill(m, -1.0), (2, 3), const(MASK, tg.bool)),
    case("where", lambda a: a.tril(), (3, 4)),
    case("where", lambda a: a.tril(-1), (2, 3, 3)),
    case("where", lambda a: a.triu(1), (3, 2)),
    # dtype / device moves and copies
    case("cast", lambda a: tg.cast(a, a.dtype), (2, 3)),
    case("to_device", lambda a: tg.to_device(a, tg.backend.get_backend("cpu")), (2, 3)),
    case("clone", lambda a: a.clone(), (2, 3)),
    # reductions (negative dims, keepdim, several dims) and their composites
    case("sum", lambda a: a.sum(), (2, 3)),
    case("sum", lambda a: a.sum(-1, keepdim=True), (2, 3)),
    case("sum", lambda a: a.sum((0, 2)), (2, 3, 2)),
    case("sum", lambda a: a.mean(1), (2, 3)),
    case("sum", lambda a: a.var(0), (3, 2)),
    case("sum", lambda a: a.std(-1, keepdim=True, correction=0), (2, 4)),
    case("amax", lambda a: a.amax(), (2, 3)),
    case("gather", lambda a: a.max(-1).values, (2, 3)),  # max(dim): gathered at the index
    case("amax", lambda a: a.amax((0, 1), keepdim=True), (2, 3, 2)),
    case("amax", lambda a: a.amax(1), leaf([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]),
         second_order=False),
    case("gather", lambda a: a.min(0, keepdim=True).values, (3, 2)),
    case("amin", lambda a: a.amin(), (4,)),
    case("amin", lambda a: a.min(), leaf([1.0, 0.0, 0.0]), second_order=False),
    case("log", lambda a: a.logsumexp(-1), (2, 3)),
    case("log", lambda a: a.logsumexp((0, 1), keepdim=True), (2, 3)),
    case("sqrt", lambda a: a.norm(dim=-1), (2, 3)),
    case("cumsum", lambda a: a.cumsum(-1), (2, 3)),
    case("cumsum", lambda a: a.cumsum(0), (3, 2)),
    # shapes
    case("reshape", lambda a: a.reshape(3, -1), (2, 3)),
    case("reshape", lambda a: a.view(6).unsqueeze(0).squeeze(), (2, 3)),
    case("reshape", lambda a: a.flatten(1), (2, 3, 2)),
    case("reshape", lambda a: a.unsqueeze(-1).squeeze(-1).unsqueeze(0), (2, 3)),
    case("permute", lambda a: a.permute(2, 0, 1), (2, 3, 4)),
    case("permute", lambda a: a.transpose(-1, 0), (2, 3, 2)),
    case("permute", lambda a: a.mT @ a, (3, 2)),
    case("permute", lambda a: a.movedim(0, -1), (2, 3, 2)),
    case("expand", lambda a: a.expand(2, -1, 4), (3, 1)),
    case("expand", lambda a: a.repeat(2, 1, 2), (3, 2)),
    case("cat", lambda a, b: tg.cat([a, b], dim=-1), (2, 3), (2, 1)),
    case("cat", lambda a, b: tg.cat([a, b, a]), (1, 3), (2, 3)),
    case("cat", lambda a, b: tg.stack([a, b], dim=1), (2, 3), (2, 3)),
    case("pad", lambda a: tg.pad(a, (1, 2)), (2, 3)),
    case("pad", lambda a: tg.pad(a, (0, 1, 2, 0), value=1.5), (2, 3)),
    case("flip", lambda a: a.flip(0), (3, 2)),
    case("flip", lambda a: a.flip((0, -1)), (2, 3)),
    # indexing: basic, repeated integer arrays, bool masks, split/chunk/unbind views
    case("getitem", lambda a: a[1], (3, 4)),
    case("getitem", lambda a: a[:, 1:3], (2, 4)),
    case("getitem", lambda a: a[..., None, ::2], (2, 3)),
    case("getitem", lambda a: a[-1, -2], (2, 3)),
    case("getitem", lambda a, i: a[i], (4, 2), const([0, 2, 0, 3])),
    case("getitem", lambda a, i: a[:, i], (2, 3), const([[1, 1], [0, 2]])),
    case("getitem", lambda a, i, j: a[i, j], (3, 3), const([0, 0, 2]), const([1, 1, 0])),
    case("getitem", lambda a: a[[2, 0, 2]], (3, 2)),
    case("getitem", lambda a, m: a[m], (2, 3), const(MASK, tg.bool)),
    case("getitem", lambda a: a.split([1, 2], dim=-1), (2, 3)),
    case("getitem", lambda a: a.split(2), (3, 2)),
    case("getitem", lambda a: a.chunk(2, 0), (3, 2)),
    case("getitem", lambda a: a.unbind(1), (2, 3)),
    case("getitem", lambda w, i: tg.embedding(i, w), (5, 3), const([[0, 4], [4, 2]])),
    # the padding row's gradient is zero by design (test_embedding_padding_idx), so none here
    case("where", lambda w, i: tg.embedding(i, w, padding_idx=0), (5, 3), const([[1, 4], [3, 2]])),
    case("index_add", lambda g, i: INDEX_ADD(g, shape=(4, 2), index=tg.array_index(i, g)), (3, 2),
         const([0, 3, 0])),
    case("index_add", lambda g: INDEX_ADD(g, shape=(4, 2), index=(slice(1, 3),)), (2, 2)),
    case("gather", lambda a, i: a.gather(1, i), (2, 3), const([[0, 0, 2, 1], [2, 2, 2, 0]])),
    case("gather", lambda a, i: a.gather(0, i), (3, 2), const([[2, 0], [2, 2]])),
    case("gather", lambda a, i: a.gather(-1, i), (2, 2, 3), const([[[1, 1]], [[0, 2]]])),
    case("scatter_add", lambda x, s, i: tg.scatter_add(x, 1, i, s), (2, 4), (2, 3),
         const([[0, 0, 3], [1, 1, 1]])),
    # ordering (ops/sort.py): values gathered at the sorted / selected indices
    case("gather", lambda a: a.sort(-1).values, (2, 3)),
    case("gather", lambda a: a.sort(0, descending=True, stable=True).values, (3, 2)),
    case("gather", lambda a: a.msort(), (3, 2)),
    case("gather", lambda a: a.topk(2).values, (2, 4)),
    case("gather", lambda a: a.topk(2, 0, largest=False).values, (4, 2)),
    case("gather", lambda a: a.kthvalue(2, 1, keepdim=True).values, (2, 3)),
    case("gather", lambda a: a.median(0).values, (3, 2)),
    case("gather", lambda a: a.nanmedian(-1).values, (2, 4)),
    case("gather", lambda a: a.mode(-1).values, (2, 4)),
    case("sum", lambda a: a.median(), (5,)),  # shares its gradient among tied elements
    # products and scans; zeros (one, several in a row) change cumprod's gradient formula
    case("cumprod", lambda a: a.cumprod(-1), (2, 3)),
    case("cumprod", lambda a: a.cumprod(1), leaf([[1.5, 0.0, 2.0, -1.0], [0.0, 0.0, 3.0, 0.5]])),
    case("cumprod", lambda a: a.prod(0), leaf([[1.5, 0.0], [0.0, 2.0], [0.0, -1.0]])),
    case("cumprod", lambda a: a.prod(), (2, 3)),
    case("cumprod", lambda a: a.prod(-1, keepdim=True), (2, 3)),
    case("gather", lambda a: a.cummax(-1).values, (2, 4)),
    case("gather", lambda a: a.cummin(0).values, (3, 2)),
    case("log", lambda a: a.logcumsumexp(-1), (2, 3)),
    case("sqrt", lambda a: tg.std_mean(a, 0)[0] * tg.var_mean(a, 0)[1], (3, 2)),
    case("where", lambda a: a.nansum(1) + a.nanmean(0).sum(), (2, 3)),
    # the scatter family: scatter writes, scatter_prod multiplies (zeros included)
    case("scatter", lambda x, s, i: x.scatter(1, i, s), (2, 4), (2, 2), const([[0, 2], [3, 1]])),
    case("scatter", lambda x, i: x.scatter(0, i, 1.5), (3, 2), const([[2, 0]])),
    case("scatter", lambda x, s, i: x.index_copy(1, i, s), (2, 3), (2, 2), const([2, 0])),
    case("scatter", lambda x, s, m: x.masked_scatter(m, s), (2, 3), (5,), const(MASK, tg.bool)),
    case("scatter_prod", lambda x, s, i: x.scatter_reduce(1, i, s, "prod"),
         leaf([[0.0, 2.0, 0.5], [1.5, 0.0, 3.0]]),
         leaf([[0.0, 1.5, 2.0, 0.0], [2.0, -1.0, 0.5, 1.2]]),
         const([[0, 0, 1, 0], [2, 2, 2, 0]])),
    case("scatter_prod", lambda x, s, i: x.scatter_reduce(0, i, s, "prod", include_self=False),
         (2, 3), (2, 3), const([[1, 1, 0], [1, 0, 0]])),
    case("scatter_add", lambda x, s, i: x.index_add(0, i, s, alpha=2.0), (3, 2), (3, 2),
         const([0, 2, 0])),
    case("scatter_add", lambda x, s, i: x.scatter_reduce(1, i, s, "mean", include_self=False),
         (2, 3), (2, 2), const([[0, 0], [2, 1]])),
    case("scatter_add", lambda x, s, i: x.scatter_reduce(1, i, s, "amax"), (2, 3), (2, 2),
         const([[0, 0], [2, 1]])),
    case("scatter_add", lambda x, s, i: x.scatter_reduce(1, i, s, "amin", include_self=False),
         (2, 3), (2, 2), const([[0, 0], [2, 1]])),
    case("getitem", lambda x, i: x.index_select(1, i), (2, 3), const([2, 0, 2])),
    case("getitem", lambda x, i: x.take(i), (2, 3), const([[5, 0], [0, 3]])),
    case("getitem", lambda x, m: x.masked_select(m), (2, 3), const([True, False, True], tg.bool)),
    case("gather", lambda x, i: x.take_along_dim(i, 1), (2, 3), const([[2, 0]])),
    case("where", lambda x, i: x.index_fill(0, i, -1.0), (3, 2), const([2])),
    # rearranging: composites of the shape and indexing primitives
    case("cat", lambda a: a.roll(1, -1) + a.roll((2, -1), (0, 1)), (3, 2)),
    case("cat", lambda a: a.roll(-2), (2, 3)),
    case("flip", lambda a: a.rot90() + a.rot90(-1).fliplr().flipud(), (3, 3)),
    case("getitem", lambda a: a.diagonal(1), (3, 4)),
    case("getitem", lambda a: a.diagonal(-1, 0, 2), (3, 2, 3)),
    case("index_add", lambda a: a.diag_embed(-1), (2, 3)),
    case("index_add", lambda a: tg.diag(a, 1), (3,)),
    case("getitem", lambda a: a.unfold(1, 2, 2), (2, 5)),
    case("getitem", lambda a, r: a.repeat_interleave(r, 0), (3, 2), const([2, 0, 1])),
    case("expand", lambda a, b: sum(g * g for g in tg.meshgrid(a, b, indexing="xy")), (2,), (3,)),
    case("cat", lambda a, b: tg.cartesian_prod(a, b), (2,), (3,)),
    case("cat", lambda a, b: tg.hstack([a, b]) * tg.column_stack([a, b]).sum(), (3,), (3,)),
    case("cat", lambda a, b: tg.dstack([a, b]) + tg.vstack([a, b]).sum(), (2, 3), (2, 3)),
    case("reshape", lambda a: a.unflatten(1, (2, -1)).tile((2, 1, 1, 1)), (2, 6)),
    # matrix products: plain, batched with broadcasting, every 1-D combination
    case("matmul", lambda a, b: a @ b, (2, 3), (3, 4)),
    case("matmul", lambda a, b: a @ b, (2, 1, 2, 3), (3, 3, 2)),
    case("matmul", tg.matmul, (3,), (3,)),
    case("matmul", tg.matmul, (3,), (3, 2)),
    case("matmul", tg.matmul, (2, 3), (3,)),
    case("matmul", tg.matmul, (3,), (2, 3, 2)),
    case("matmul", tg.matmul, (2, 2, 3), (3,)),
    case("einsum", lambda q, k: tg.einsum("bhqd,bhkd->bhqk", q, k), (1, 2, 3, 2), (1, 2, 2, 2)),
    case("einsum", lambda p, v: tg.einsum("bhqk,bhkd->bhqd", p, v), (1, 2, 3, 2), (1, 2, 2, 2)),
    case("einsum", lambda a, b: tg.einsum("ij,jk->i", a, b), (2, 3), (3, 2)),
    case("einsum", lambda a, b: tg.einsum("...ij,...jk", a, b), (2, 2, 3), (3, 2)),
    case("einsum", lambda a, b: tg.einsum("i,j->ij", a, b), (2,), (3,)),
    case("einsum", lambda a: tg.einsum("ij->", a), (2, 3)),
    # rounding: piecewise constant, zero gradient away from the jumps (PyTorch's convention)
    case("sign", lambda a: a.sign(), leaf(ROUNDING)),
    case("floor", lambda a: a.floor() * a, leaf(ROUNDING)),
    case("ceil", lambda a: a.ceil(), leaf(ROUNDING)),
    case("trunc", lambda a: a.trunc() + a, leaf(ROUNDING)),
    case("round", lambda a: a.round(), leaf(ROUNDING)),
    case("round", lambda a: a.round(decimals=1), leaf(ROUNDING)),
    # fused primitives
    case("softmax", lambda a: a.softmax(-1), (2, 3)),
    case("softmax", lambda a: tg.softmax(a, dim=0), (3, 2)),
    case("log_softmax", lambda a: a.log_softmax(1), (2, 3, 2)),
    case("log_softmax", lambda a, t: tg.cross_entropy(a, t), (2, 3),
         const([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]], F64)),
    case("cross_entropy", tg.cross_entropy, (3, 4), const([0, 3, 1])),
    case("cross_entropy", tg.cross_entropy, (4,), const(2)),
    case("cross_entropy", tg.cross_entropy, (2, 4, 3), const([[0, 3, 1], [2, 2, -100]])),
    case("cross_entropy", lambda a, t: tg.cross_entropy(a, t, ignore_index=1), (3, 4),
         const([1, 2, 0])),
    case("cross_entropy", lambda a, t: tg.cross_entropy(a, t, label_smoothing=0.1), (3, 4),
         const([0, 3, 1])),
    case("cross_entropy", lambda a, t, w: tg.cross_entropy(a, t, weight=w), (3, 4),
         const([0, 3, 1]), const([0.5, 1.0, 2.0, 1.5], F64)),
    case("cross_entropy", lambda a, t, w: tg.cross_entropy(a, t, weight=w, reduction="sum",
                                                           label_smoothing=0.2),
         (3, 4), const([0, -100, 1]), const([0.5, 1.0, 2.0, 1.5], F64)),
    case("cross_entropy", lambda a, t: tg.cross_entropy(a, t, reduction="none"), (3, 4),
         const([0, -100, 1])),
    case("layer_norm", lambda x, w, b: tg.layer_norm(x, 3, w, b), (2, 3), (3,), (3,)),
    case("layer_norm", lambda x: tg.layer_norm(x, (2, 3)), (2, 2, 3)),
    case("layer_norm", lambda x, w: tg.layer_norm(x, 3, weight=w), (2, 3), (3,)),
    case("layer_norm", lambda x, b: tg.layer_norm(x, 3, bias=b), (2, 3), (3,)),
    case("rms_norm", lambda x, w: tg.rms_norm(x, 3, w), (2, 3), (3,)),
    case("rms_norm", lambda x: tg.rms_norm(x, (2, 3), eps=1e-6), (2, 2, 3)),
    # convolution: the fused conv, im2col / col2im on their own (F.unfold / F.fold), transposes
    case("conv", lambda x, w, b: tg.conv2d(x, w, b, stride=2, padding=1), (2, 2, 5, 4),
         (3, 2, 3, 2), (3,)),
    case("conv", lambda x, w: tg.conv1d(x, w, padding="same", dilation=2, groups=2), (1, 4, 5),
         (2, 2, 2)),
    case("im2col", lambda x: unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=2),
         (1, 2, 4, 5)),
    case("col2im", lambda c: fold(c, (4, 3), 2, padding=1), (1, 8, 20)),
    case("col2im", lambda x, w, b: tg.conv_transpose2d(x, w, b, stride=2, output_padding=1,
                                                       groups=2), (1, 2, 3, 2), (2, 2, 2, 2), (4,)),
    case("scaled_dot_product_attention", lambda q, k, v, b: tg.scaled_dot_product_attention(
        q, k, v, attn_mask=b, is_causal=True), (2, 3, 2), (2, 4, 2), (2, 4, 3), (3, 4)),
    # activation recomputation (tensorgrad/utils/checkpoint.py): an argument and a closed-over leaf
    case("checkpoint", lambda x, w: tg.utils.checkpoint.checkpoint(
        lambda t: (t.tanh() * w).sum(-1), x, use_reentrant=False), (3, 4), (4,)),
]


def _case_id(cases):
    counts, ids = {}, []
    for c in cases:
        counts[c.prim] = counts.get(c.prim, 0) + 1
        ids.append(f"{c.prim}-{counts[c.prim]}")
    return ids


def _outputs(result):
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def _primitives_in(outputs):
    """Names of every primitive recorded in the graph behind `outputs`."""
    stack = [o.grad_fn for o in outputs if o.grad_fn is not None]
    names, seen = set(), set()
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            names.add(node.name)
            stack.extend(p for p in node.parents if isinstance(p, Node))
    return names


def _make(c, device, dtype=F64):
    inputs = [make(device) for make in c.inputs]
    if dtype == F64:
        return inputs
    return [x.detach().to(dtype).requires_grad_(x.requires_grad) if x.dtype == F64 else x
            for x in inputs]


@pytest.mark.parametrize("c", CASES, ids=_case_id(CASES))
def test_gradcheck(c, device):
    inputs = _make(c, device)
    assert c.prim in _primitives_in(_outputs(c.fn(*inputs))), f"the case never calls {c.prim}"
    assert tg.gradcheck(c.fn, inputs)


@pytest.mark.parametrize("c", [c for c in CASES if c.second_order],
                         ids=_case_id([c for c in CASES if c.second_order]))
def test_gradgradcheck(c, device):
    assert tg.gradgradcheck(c.fn, _make(c, device))


@pytest.mark.parametrize("c", CASES, ids=_case_id(CASES))
def test_float32_stays_float32(c, device):
    inputs = _make(c, device, tg.float32)
    outputs = _outputs(c.fn(*inputs))
    assert all(o.dtype == tg.float32 for o in outputs), [o.dtype for o in outputs]
    grads = tg.grad(outputs, [x for x in inputs if x.requires_grad],
                    [tg.ones_like(o) for o in outputs], allow_unused=True)
    assert all(g is None or g.dtype == tg.float32 for g in grads)


# --- non-differentiable primitives: forward values against NumPy ----------------------------------
ValueCase = namedtuple("ValueCase", "prim fn reference arrays")

A = np.array([[1.5, -2.0, 0.0], [2.5, 0.5, -0.5]])
B = np.array([1.5, 0.5, -1.0])
SPECIAL = np.array([1.0, np.nan, np.inf, -np.inf, -0.0])
P = np.array([[True, False, True], [False, False, True]])
Q = np.array([True, True, False])
INTS = np.array([[5, -5, 7], [0, 12, -1]])
SMALL = np.array([3, 0, 2])

VALUE_CASES = [
    ValueCase("eq", lambda a, b: a == b, np.equal, (A, B)),
    ValueCase("isin", lambda a, b: tg.isin(a, b), np.isin, (INTS, SMALL)),
    ValueCase("isin", lambda a, b: tg.isin(a, b, invert=True),
              lambda a, b: np.isin(a, b, invert=True), (INTS, SMALL)),
    ValueCase("ne", lambda a, b: a != b, np.not_equal, (A, B)),
    ValueCase("lt", lambda a, b: a < b, np.less, (A, B)),
    ValueCase("lt", lambda a: 0 > a, lambda a: a < 0, (A,)),
    ValueCase("le", lambda a, b: a <= b, np.less_equal, (A, B)),
    ValueCase("gt", lambda a: a > 0.5, lambda a: a > 0.5, (A,)),
    ValueCase("ge", lambda a, b: a >= b, np.greater_equal, (A, B)),
    ValueCase("logical_and", tg.logical_and, np.logical_and, (P, Q)),
    ValueCase("logical_or", lambda p, q: p.logical_or(q), np.logical_or, (P, Q)),
    ValueCase("logical_not", tg.logical_not, np.logical_not, (P,)),
    # bitwise on integers (negatives included), logical on bools, shifts past the bit width
    ValueCase("bitwise_and", lambda a, b: a & b, np.bitwise_and, (INTS, SMALL)),
    ValueCase("bitwise_and", lambda p, q: p & q, np.logical_and, (P, Q)),
    ValueCase("bitwise_or", lambda a, b: a | b, np.bitwise_or, (INTS, SMALL)),
    ValueCase("bitwise_or", lambda p, q: p | q, np.logical_or, (P, Q)),
    ValueCase("bitwise_xor", lambda a, b: a.bitwise_xor(b), np.bitwise_xor, (INTS, SMALL)),
    ValueCase("bitwise_xor", lambda p, q: p ^ q, np.logical_xor, (P, Q)),
    ValueCase("bitwise_not", lambda a: ~a, np.invert, (INTS,)),
    ValueCase("bitwise_not", lambda p: ~p, np.logical_not, (P,)),
    ValueCase("bitwise_left_shift", lambda a, b: a << b, np.left_shift, (INTS, SMALL)),
    ValueCase("bitwise_left_shift", lambda a: a << 64, lambda a: a * 0, (INTS,)),
    ValueCase("bitwise_right_shift", lambda a, b: a >> b, np.right_shift, (INTS, SMALL)),
    ValueCase("bitwise_right_shift", lambda a: a >> 99, lambda a: -(a < 0).astype(int), (INTS,)),
    ValueCase("isnan", lambda a: a.isnan(), np.isnan, (SPECIAL,)),
    ValueCase("isinf", lambda a: a.isinf(), np.isinf, (SPECIAL,)),
    ValueCase("isfinite", lambda a: a.isfinite(), np.isfinite, (SPECIAL,)),
    ValueCase("signbit", lambda a: a.signbit(), np.signbit, (SPECIAL,)),
    ValueCase("heaviside", lambda a, b: a.heaviside(b), np.heaviside, (A, B)),
    ValueCase("isclose", lambda a: a.isclose(a * 1.00002, equal_nan=True),
              lambda a: np.isclose(a, a * 1.00002, equal_nan=True), (SPECIAL,)),
    ValueCase("argmax", lambda a: a.argmax(), lambda a: np.argmax(a), (A,)),
    ValueCase("argmax", lambda a: a.argmax(-1, keepdim=True),
              lambda a: np.argmax(a, -1, keepdims=True), (A,)),
    ValueCase("argmax", lambda a: a.argmax(keepdim=True),
              lambda a: np.argmax(a).reshape(1, 1), (A,)),
    ValueCase("argmin", lambda a: a.argmin(0), lambda a: np.argmin(a, 0), (A,)),
    ValueCase("argmin", lambda a: tg.min(a, 1).indices, lambda a: np.argmin(a, 1), (A,)),
    ValueCase("argsort", lambda a: a.argsort(-1, stable=True),
              lambda a: np.argsort(a, -1, kind="stable"), (A,)),
    ValueCase("argsort", lambda a: a.argsort(0, descending=True), lambda a: np.argsort(-a, 0),
              (A,)),
    ValueCase("argpartition", lambda a: a.kthvalue(2, 1).indices,
              lambda a: np.argpartition(a, 1, axis=1)[:, 1], (A,)),
    ValueCase("cumulative_extreme_index", lambda a: a.cummax(1).indices,
              lambda a: np.array([[0, 0, 0], [0, 0, 0]]), (A,)),
    ValueCase("cumulative_extreme_index", lambda a: a.cummin(-1).indices,
              lambda a: np.array([[0, 1, 1], [0, 1, 2]]), (A,)),
    ValueCase("view_dtype", lambda a: a.view(tg.int64), lambda a: a.view(np.int64), (A,)),
    ValueCase("view_dtype", lambda a: a.float().view(tg.uint8),
              lambda a: a.astype(np.float32).view(np.uint8), (A,)),
    ValueCase("any", lambda p: p.any(), np.any, (P,)),
    ValueCase("any", lambda p: p.any(1, keepdim=True), lambda p: p.any(1, keepdims=True), (P,)),
    ValueCase("all", lambda p: p.all(0), lambda p: p.all(0), (P,)),
    ValueCase("all", lambda a: (a > -3).all(), lambda a: (a > -3).all(), (A,)),
]


@pytest.mark.parametrize("c", VALUE_CASES, ids=_case_id(VALUE_CASES))
def test_values(c, device):
    inputs = [tg.tensor(a, device=device, requires_grad=a.dtype.kind == "f") for a in c.arrays]
    out = c.fn(*inputs)
    expected = np.asarray(c.reference(*c.arrays))
    assert not out.requires_grad and out.grad_fn is None
    assert out.device == tg.backend.normalize_device(device)
    assert out.shape == expected.shape
    assert out.dtype == (tg.int64 if c.prim in ("argmax", "argmin", "cumulative_extreme_index")
                         else expected.dtype)
    np.testing.assert_array_equal(np.asarray(out), expected)


def test_every_primitive_has_a_case():
    differentiable = {name for name, p in tg.PRIMITIVES.items() if p.differentiable}
    missing = sorted(differentiable - {c.prim for c in CASES})
    assert not missing, f"differentiable primitives without a gradient case: {missing}"
    missing = sorted(set(tg.PRIMITIVES) - differentiable - {c.prim for c in VALUE_CASES})
    assert not missing, f"non-differentiable primitives without a value case: {missing}"
    unknown = sorted({c.prim for c in CASES + VALUE_CASES} - set(tg.PRIMITIVES))
    assert not unknown, f"cases name primitives that are not registered: {unknown}"
    assert all(tg.PRIMITIVES[c.prim].vjp is not None for c in CASES)


# --- fused primitives against their composite oracles ---------------------------------------------
def _composite_log_softmax(x, dim):
    return x - x.exp().sum(dim, keepdim=True).log()


def _composite_cross_entropy(logits, target, weight, ignore_index, label_smoothing, reduction):
    logp = _composite_log_softmax(logits, 1)
    classes = logits.shape[1]
    valid = target != ignore_index
    safe = tg.where(valid, target, 0)
    w = weight if weight is not None else tg.ones(classes, dtype=logits.dtype)
    w_t = w[safe] * valid.to(logits.dtype)
    nll = -logp.gather(1, safe.unsqueeze(1)).squeeze(1)
    smooth = -(logp * w).sum(1)
    loss = w_t * ((1 - label_smoothing) * nll) + valid.to(logits.dtype) * smooth * (
        label_smoothing / classes)
    if reduction == "none":
        return loss
    return loss.sum() / (w_t.sum() if reduction == "mean" else 1.0)


TARGET = tg.tensor([0, 2, 1, 2])
WEIGHT = tg.tensor([0.5, 2.0, 1.0], dtype=F64)
WEIGHT4 = tg.tensor([0.5, 2.0, 1.0, -1.0], dtype=F64)
BIAS4 = tg.tensor([0.1, 0.0, -0.3, 1.0], dtype=F64)
KERNEL = tg.tensor([[[[0.5, -1.0], [2.0, 0.3]]], [[[1.0, 0.0], [-0.2, 0.7]]]], dtype=F64)
FUSED = [
    ("softmax", lambda x: x.softmax(1),
     lambda x: x.exp() / x.exp().sum(1, keepdim=True), (3, 4)),
    ("log_softmax", lambda x: x.log_softmax(-1),
     lambda x: _composite_log_softmax(x, -1), (3, 4)),
    ("cross_entropy", lambda x: tg.cross_entropy(x, TARGET, weight=WEIGHT, label_smoothing=0.1),
     lambda x: _composite_cross_entropy(x, TARGET, WEIGHT, -100, 0.1, "mean"), (4, 3)),
    ("cross_entropy", lambda x: tg.cross_entropy(x, TARGET, reduction="none", ignore_index=2),
     lambda x: _composite_cross_entropy(x, TARGET, None, 2, 0.0, "none"), (4, 3)),
    ("layer_norm", lambda x: tg.layer_norm(x, 4, WEIGHT4, BIAS4),
     lambda x: (x - x.mean(-1, keepdim=True)) / (x.var(-1, keepdim=True, correction=0)
                                                 + 1e-5).sqrt() * WEIGHT4 + BIAS4, (3, 4)),
    ("gelu", lambda x: tg.gelu(x, approximate="tanh"),
     lambda x: 0.5 * x * (1 + (math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)).tanh()), (3, 4)),
    ("gelu", lambda x: tg.gelu(x), lambda x: 0.5 * x * (1 + (x / math.sqrt(2)).erf()), (3, 4)),
    ("conv", lambda x: tg.conv2d(x, KERNEL, BIAS4[:2], stride=(1, 2), padding=1),
     lambda x: (KERNEL.reshape(2, -1) @ unfold(x, 2, padding=1, stride=(1, 2))).reshape(
         3, 2, 4, 2) + BIAS4[:2].reshape(2, 1, 1), (3, 1, 3, 3)),
    ("rms_norm", lambda x: tg.rms_norm(x, 4, WEIGHT4, eps=1e-6),
     lambda x: x / ((x * x).mean(-1, keepdim=True) + 1e-6).sqrt() * WEIGHT4, (3, 4)),
]


@pytest.mark.parametrize("name, fused, composite, shape", FUSED,
                         ids=[f[0] + f"-{i}" for i, f in enumerate(FUSED)])
def test_fused_matches_composite(name, fused, composite, shape):
    x = (tg.randn(*shape, dtype=F64) * 3).requires_grad_()
    got, expected = fused(x), composite(x)
    assert name in _primitives_in([got])
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    probe = tg.randn(*got.shape, dtype=F64)
    g1, = tg.grad(got, x, probe)
    g2, = tg.grad(expected, x, probe)
    np.testing.assert_allclose(g1.numpy(), g2.numpy(), rtol=1e-9, atol=1e-12)


def test_softmax_does_not_overflow(device):
    x = tg.tensor([[1000.0, 0.0, -1000.0]], device=device)
    np.testing.assert_allclose(np.asarray(x.softmax(-1)), [[1.0, 0.0, 0.0]])
    np.testing.assert_allclose(np.asarray(x.log_softmax(-1)), [[0.0, -1000.0, -2000.0]])
    loss = tg.cross_entropy(x, tg.tensor([1], device=device))
    assert np.isfinite(loss.item()) and abs(loss.item() - 1000.0) < 1e-3


# --- dropout: a random op checked through a fixed seed --------------------------------------------
def test_dropout_mask_is_deterministic_and_scaled(device):
    x = tg.ones(64, 64, device=device, requires_grad=True)
    tg.manual_seed(3)
    first = tg.dropout(x, 0.25)
    tg.manual_seed(3)
    second = tg.dropout(x, 0.25)
    a, b = np.asarray(first.detach()), np.asarray(second.detach())
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((a == 0).mean() - 0.25) < 0.03
    first.sum().backward()
    np.testing.assert_array_equal(np.asarray(x.grad), a)  # gradient flows through kept units only
    assert first.dtype == tg.float32


def test_dropout_identity_cases(device):
    x = tg.randn(3, 4, device=device)
    assert tg.dropout(x, 0.0) is x
    assert tg.dropout(x, 0.5, training=False) is x
    assert not np.asarray(tg.dropout(x, 1.0)).any()
    with pytest.raises(ValueError, match="dropout: p must be in"):
        tg.dropout(x, 1.5)


def test_embedding_padding_idx(device):
    weight = tg.randn(5, 3, device=device, requires_grad=True)
    index = tg.tensor([[0, 4], [4, 2]], device=device)
    out = tg.embedding(index, weight, padding_idx=-1)
    np.testing.assert_array_equal(np.asarray(out.detach()), np.asarray(weight.detach())[[[0, 4],
                                                                                       [4, 2]]])
    (out * out).sum().backward()
    grad, w = np.asarray(weight.grad), np.asarray(weight.detach())
    np.testing.assert_array_equal(grad[4], 0)  # padding_idx=-1 is row 4
    np.testing.assert_allclose(grad[[0, 2]], 2 * w[[0, 2]], rtol=1e-6)
    np.testing.assert_array_equal(grad[[1, 3]], 0)


def test_rounding_values_follow_numpy():
    values = np.array([[1.5, -2.0, 0.0], [2.5, 0.5, -0.55]])
    x = tg.tensor(values)
    for name in ("sign", "floor", "ceil", "trunc", "round"):
        np.testing.assert_array_equal(np.asarray(getattr(x, name)()), getattr(np, name)(values))
    np.testing.assert_array_equal(np.asarray(x.round(decimals=1)), np.round(values, 1))


# --- fused primitives against their composites ----------------------------------------------------
COMPOSITE_PRIMITIVES = sorted(name for name, p in tg.PRIMITIVES.items() if p.composite is not None)


def _recorded_node(outputs, name):
    stack, seen = [o.grad_fn for o in outputs if o.grad_fn is not None], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.name == name:
            return node
        stack.extend(p for p in node.parents if isinstance(p, Node))
    raise AssertionError(f"no {name} node in the graph")


@pytest.mark.parametrize("name", COMPOSITE_PRIMITIVES)
def test_fused_primitive_agrees_with_its_composite(name, device):
    """A fused primitive's array forward and array VJP against its `composite=` (the function
    create_graph differentiates instead), and second order through the composite."""
    prim = tg.PRIMITIVES[name]
    cases = [c for c in CASES if c.prim == name]
    assert cases, f"{name} names a composite but has no case in CASES"
    for c in cases:
        recorded = _recorded_node(_outputs(c.fn(*_make(c, device))), name)
        saved = recorded.inputs  # composites need every input saved (the engine relies on it)
        assert len(saved) == len(recorded.parents)
        inputs = [None if t is None else t.detach().requires_grad_(need)
                  for t, need in zip(saved, recorded.needs_grad)]  # fresh leaves, same values
        out = prim(*inputs, **recorded.attrs)
        node = out.grad_fn
        reference = prim.composite(*inputs, **node.attrs)
        np.testing.assert_allclose(np.asarray(out.detach()), np.asarray(reference.detach()),
                                   rtol=1e-10, atol=1e-12)
        g = tg.randn(*out.shape, dtype=out.dtype, device=device)
        wanted = [i for i, (t, need) in enumerate(zip(inputs, node.needs_grad)) if need]
        ours = _outputs(prim.vjp(node, g))
        theirs = tg.grad(reference, [inputs[i] for i in wanted], g)
        for i, expected in zip(wanted, theirs):
            mine = sum_to(ours[i], inputs[i].shape)  # as the engine undoes broadcasting
            np.testing.assert_allclose(np.asarray(mine.detach()), np.asarray(expected),
                                       rtol=1e-9, atol=1e-11, err_msg=f"{name}: input {i}")
        assert tg.gradgradcheck(_with_leaves(prim, inputs, wanted, node.attrs),
                                [inputs[i] for i in wanted])


def _with_leaves(prim, inputs, wanted, attrs):
    """prim as a function of the inputs at positions `wanted`, the others held fixed."""
    def call(*xs):
        args = list(inputs)
        for i, x in zip(wanted, xs):
            args[i] = x
        return prim(*args, **attrs)
    return call
