"""The table of ops the graph fuzzer draws from: one `Op` per way of using an operation.

An entry is a template of Python source that reads the same in both frameworks: `T` is the
framework (tensorgrad or torch), `F` its functional module, `{0}`, `{1}`, ... the operands and
`{name}` a drawn parameter (written with repr, or as raw source for a `Code`). A failing example
therefore prints as a program that runs unchanged against either framework.

Adding an op is one entry:
- `accepts(shape)`: which values can be the first operand (e.g. ndim >= 2);
- `arity` and `partner(chosen_shapes, shape)`: how many operands and which values fit next to
  the ones already chosen (default: broadcastable with them);
- `params(draw, *shapes)`: a dict of the op's arguments drawn from the operand shapes;
- `smooth(operands, out, params)`: False where the op is not differentiable (a kink, a tie) or
  badly conditioned, evaluated on the actual torch values; the fuzzer then draws another op.
An op that needs a domain (log, sqrt, a divisor) is written on a guarded operand,
`({0} * {0} + 0.5)`, so every value it sees is inside it.
"""
import math
from dataclasses import dataclass
from itertools import zip_longest
from typing import Callable

from hypothesis import strategies as st

EPS = 1e-6  # how far (relative to the operand's scale) a value must stay from a kink or a tie

# Issue 13 item 4: reductions, softmax, flip, squeeze, movedim ... given an explicit dim fail on
# 0-d tensors (PyTorch takes dim 0 / -1 there), and cumsum(0) returns shape (1,). Until that is
# fixed the fuzzer gives explicit dims only to tensors with ndim >= 1; test_known_issues.py holds
# each failing case as a strict xfail, so the fix shows up as XPASS: then set this to True.
ZERO_D_DIMS = False
# Found by this fuzzer: scatter_add refuses an index smaller than src (PyTorch reads only the
# part of src the index covers: index.size(d) <= src.size(d)), with "the shapes cannot be
# broadcast together". Until then scatter_add gets a src of the index's shape.
SCATTER_PART_OF_SRC = False
# Found by this fuzzer: with create_graph=True, a fused primitive (layer_norm, rms_norm,
# scaled_dot_product_attention: those with a composite=) given one tensor in several operand
# slots returns that tensor's whole gradient once per slot, e.g. sdpa(q, q, q) gives 3x the
# gradient of q (autograd._composite_vjp). Until that is fixed their operands are distinct.
COMPOSITE_FAN_OUT = False


class Code(str):
    """A parameter written into the program as source text rather than as a quoted string."""

    def __repr__(self):
        return str(self)


@dataclass(frozen=True)
class Op:
    name: str
    expr: str
    arity: int = 1
    accepts: Callable = lambda shape: True
    partner: Callable = None  # default: broadcastable with every operand chosen so far
    params: Callable = lambda draw, *shapes: {}
    smooth: Callable = None
    distinct: bool = False  # each operand a different value (see COMPOSITE_FAN_OUT)

    def fits(self, chosen, shape):
        if self.partner is None:
            return broadcastable(*chosen, shape)
        return self.partner(chosen, shape)

    def render(self, operands, params):
        return self.expr.format(*operands, **{k: repr(v) for k, v in params.items()})


# --- shapes ---------------------------------------------------------------------------------
def broadcastable(*shapes):
    for sizes in zip_longest(*(reversed(s) for s in shapes), fillvalue=1):
        if len(set(sizes) - {1}) > 1:
            return False
    return True


def ndim_at_least(n):
    return lambda shape: len(shape) >= n


def has_dims(shape):
    """Can take an explicit dim (see ZERO_D_DIMS)."""
    return ZERO_D_DIMS or len(shape) >= 1


def same_shape(chosen, shape):
    return shape == chosen[0]


def matmul_fits(chosen, b):
    a = chosen[0]
    if not a or not b:
        return False
    k_b = b[0] if len(b) == 1 else b[-2]
    return a[-1] == k_b and broadcastable(a[:-2], b[:-2])


def cat_fits(chosen, shape):
    a = chosen[0]
    return len(a) == len(shape) >= 1 and sum(x != y for x, y in zip(a, shape)) <= 1


# --- parameters -----------------------------------------------------------------------------
def choice(**options):
    """params that pick each named argument from a list of values."""
    return lambda draw, *shapes: {k: draw(st.sampled_from(v)) for k, v in options.items()}


def one_dim(draw, shape, extra=0):
    """A dim of `shape` (negative ones too; 0 or -1 for a 0-d tensor); extra=1 for ops that
    insert one (unsqueeze, stack)."""
    n = len(shape) + extra or 1
    return draw(st.integers(-n, n - 1))


def some_dims(draw, shape):
    """A non-empty tuple of distinct dims, each written positive or negative."""
    n = len(shape)
    dims = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    return tuple(d - n if draw(st.booleans()) else d for d in dims)


def reduce_params(draw, shape, required=False, extra=""):
    """A reduction's arguments: all dims, one dim or several, with or without keepdim.

    Returns {"args": the source text, with `extra` (e.g. "p=2") in front, "dims": the dims}.
    """
    kinds = ["one", "tuple"] if has_dims(shape) else []
    if not required or not kinds:
        kinds.append("all")
    kind = draw(st.sampled_from(kinds))
    dims, text = tuple(range(len(shape))), ""
    if kind != "all":
        dim = one_dim(draw, shape) if kind == "one" or not shape else some_dims(draw, shape)
        dims = dim if isinstance(dim, tuple) else (dim,)
        text = f"dim={dim!r}, keepdim={draw(st.booleans())}"
    return {"args": Code(", ".join(t for t in (extra, text) if t)), "dims": dims}


def reduction(required=False, extra=""):
    return lambda draw, shape: reduce_params(draw, shape, required, extra)


def spread_params(draw, shape):
    """var/std: dims, and a correction (Bessel's, or none) below the number of values reduced,
    since PyTorch warns and returns NaN otherwise."""
    params = reduce_params(draw, shape, required=True)
    count = math.prod(shape[d] for d in params["dims"])
    correction = draw(st.sampled_from([0, 1])) if count > 1 else 0
    params["args"] = Code(f"{params['args']}, correction={correction}")
    return params


def dim_param(draw, shape):
    return {"dim": one_dim(draw, shape)}


def dim_keepdim(draw, shape):
    dim = one_dim(draw, shape)
    return {"dim": dim, "keepdim": draw(st.booleans()), "dims": (dim,)}


def factor_shape(draw, numel):
    """A random shape with `numel` elements, maybe with one -1."""
    shape = []
    while numel > 1 and len(shape) < 3:
        divisors = [d for d in range(1, numel + 1) if numel % d == 0]
        d = draw(st.sampled_from(divisors))
        shape.append(d)
        numel //= d
    shape.append(numel)
    shape = [s for s in shape if s != 1 or draw(st.booleans())]
    if shape and draw(st.booleans()):
        shape[draw(st.integers(0, len(shape) - 1))] = -1
    return tuple(shape)


def permutation(draw, shape):
    return {"perm": tuple(draw(st.permutations(range(len(shape)))))}


def expand_shape(draw, shape):
    lead = draw(st.lists(st.integers(1, 3), max_size=2))
    rest = [draw(st.sampled_from([-1, 2, 3])) if s == 1 else draw(st.sampled_from([-1, s]))
            for s in shape]
    return {"shape": tuple(lead + rest)}


def basic_index(draw, shape):
    """x[...] with ints, slices (positive steps, as torch has), None and an Ellipsis."""
    items, dims = [], list(shape)
    while dims and draw(st.booleans()):
        size = dims.pop(0)
        kind = draw(st.sampled_from(["int", "slice", "none"]))
        if kind == "none":
            items.append("None")
            dims.insert(0, size)
        elif kind == "int":
            items.append(str(draw(st.integers(-size, size - 1))))
        else:
            start = draw(st.sampled_from(["", "1", "-2"]))
            stop = draw(st.sampled_from(["", "3", "-1"]))
            step = draw(st.sampled_from(["", ":2"]))
            items.append(f"{start}:{stop}{step}")
    if dims and draw(st.booleans()):
        items.append("...")
        items.append(str(draw(st.integers(-dims[-1], dims[-1] - 1))))
    return {"index": Code(", ".join(items) or "...")}


def tensor_index(draw, shape):
    """x[..., T.tensor([...]), ...]: one or two integer index tensors (repeats, negatives)."""
    dims = draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=2, unique=True))
    length = draw(st.integers(1, 4))
    items = [":"] * (max(dims) + 1)
    for d in dims:
        ids = draw(st.lists(st.integers(-shape[d], shape[d] - 1), min_size=length,
                            max_size=length))
        items[d] = f"T.tensor({ids})"
    return {"index": Code(", ".join(items))}


def bool_mask(draw, shape):
    k = draw(st.integers(1, len(shape)))
    numel = math.prod(shape[:k])
    flat = draw(st.lists(st.booleans(), min_size=numel, max_size=numel).filter(any))
    return {"mask": Code(f"T.tensor({_nest(flat, shape[:k])})")}


def _nest(flat, shape):
    if len(shape) == 1:
        return list(flat)
    step = len(flat) // shape[0]
    return [_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def index_tensor(draw, sizes, bound):
    """An int64 index tensor of shape `sizes` with values in [0, bound)."""
    numel = math.prod(sizes)
    flat = draw(st.lists(st.integers(0, bound - 1), min_size=numel, max_size=numel))
    return Code(f"T.tensor({_nest(flat, sizes)})")


def gather_params(draw, shape):
    """x.gather(dim, index): index as many dims as x, no larger than x except along dim."""
    dim = one_dim(draw, shape)
    sizes = [draw(st.integers(1, s)) for s in shape]
    sizes[dim] = draw(st.integers(1, 4))
    return {"dim": dim, "index": index_tensor(draw, sizes, shape[dim])}


def scatter_params(draw, shape, src):
    """x.scatter_add(dim, index, src) with src of x's shape: index no larger than either."""
    dim = one_dim(draw, shape)
    sizes = [draw(st.integers(1, s)) for s in shape] if SCATTER_PART_OF_SRC else list(src)
    return {"dim": dim, "index": index_tensor(draw, sizes, shape[dim])}


def einsum_params(draw, *shapes):
    letters = "abcd"[:len(shapes[0])]
    out = draw(st.permutations(letters))[:draw(st.integers(0, len(letters)))]
    return {"equation": ",".join([letters] * len(shapes)) + "->" + "".join(out)}


def pieces_param(draw, shape, kind):
    dim = one_dim(draw, shape)
    size = shape[dim]
    if kind == "split":
        n = draw(st.integers(1, size))
        count = -(-size // n)
        return {"n": n, "dim": dim, "k": draw(st.integers(-count, count - 1))}
    n = draw(st.integers(1, 4))
    count = -(-size // -(-size // n))  # chunk gives ceil(size / ceil(size / n)) pieces
    return {"n": n, "dim": dim, "k": draw(st.integers(0, count - 1))}


def unbind_params(draw, shape):
    dim = one_dim(draw, shape)
    return {"dim": dim, "k": draw(st.integers(-shape[dim], shape[dim] - 1))}


def narrow_params(draw, shape):
    dim = one_dim(draw, shape)
    start = draw(st.integers(0, shape[dim] - 1))
    return {"dim": dim, "start": start, "length": draw(st.integers(1, shape[dim] - start))}


def flatten_params(draw, shape):
    n = len(shape)
    start = draw(st.integers(0, n - 1))
    end = draw(st.integers(start, n - 1))
    return {"start": start - n if draw(st.booleans()) else start, "end": end}


def cross_entropy_params(draw, shape):
    c_dim = 1 if len(shape) >= 2 else 0
    target_shape = shape[:c_dim] + shape[c_dim + 1:]
    numel = math.prod(target_shape)
    flat = draw(st.lists(st.integers(0, shape[c_dim] - 1), min_size=numel, max_size=numel))
    target = flat[0] if not target_shape else _nest(flat, target_shape)
    return {"target": Code(f"T.tensor({target})"),
            "reduction": draw(st.sampled_from(["mean", "sum", "none"])),
            "label_smoothing": draw(st.sampled_from([0.0, 0.1]))}


def sdpa_fits(chosen, shape):
    q = chosen[0]
    if len(chosen) == 1:  # key: same batch dims and feature size as the query
        return len(shape) == len(q) and shape[:-2] == q[:-2] and shape[-1] == q[-1]
    return shape[:-1] == chosen[1][:-1]  # value: one row per key


def norm_shape(draw, shape):
    return {"shape": shape[-draw(st.integers(1, len(shape))):]}


def weight_fits(chosen, shape):
    """An affine weight (and bias) of a norm: the trailing dims of the input."""
    if len(chosen) == 2:
        return shape == chosen[1]
    return 1 <= len(shape) <= len(chosen[0]) and chosen[0][-len(shape):] == shape


def pad_params(draw, shape):
    k = draw(st.integers(1, min(len(shape), 3)))
    return {"pad": tuple(draw(st.lists(st.integers(0, 2), min_size=2 * k, max_size=2 * k))),
            "value": draw(st.sampled_from([0.0, 1.5]))}


# --- smoothness -----------------------------------------------------------------------------
def _clear(gap, scale):
    return gap.numel() == 0 or bool((gap > EPS * (1 + scale)).all())


def away_from(point):
    """Every element of operand 0 away from `point` (abs, relu, a condition x > 0)."""
    return lambda ops, out, p: _clear((ops[0] - point).abs(), ops[0].abs().max())


def operand_away(index, point=0.0):
    return lambda ops, out, p: _clear((ops[index] - point).abs(), ops[index].abs().max())


def apart(ops, out, p):
    """maximum/minimum: the two operands never equal."""
    return _clear((ops[0] - ops[1]).abs(), ops[0].abs().max() + ops[1].abs().max())


def clamp_smooth(ops, out, p):
    x = ops[0]
    return all(_clear((x - b).abs(), x.abs().max()) for b in (p["lo"], p["hi"]) if b is not None)


def no_ties(ops, out, p):
    """amax, max(dim) ...: the largest and the smallest value of every reduced group unique
    (at a tie the two frameworks may route the gradient differently, both rightly)."""
    x = ops[0]
    dims = sorted({d % x.ndim for d in p.get("dims", range(x.ndim))}) if x.ndim else []
    if not dims:
        return True
    rest = [d for d in range(x.ndim) if d not in dims]
    groups = x.permute(rest + dims).reshape(-1, math.prod(x.shape[d] for d in dims))
    if groups.shape[1] < 2:
        return True
    ranked = groups.sort(dim=1).values
    scale = x.abs().max()
    return (_clear(ranked[:, -1] - ranked[:, -2], scale)
            and _clear(ranked[:, 1] - ranked[:, 0], scale))


def out_away_from_zero(ops, out, p):
    """norm, std: the derivative blows up where the result is 0."""
    return _clear(out.abs(), ops[0].abs().max())


GUARD = "({0} * {0} + 0.5)"  # a positive version of operand 0, for ops with a domain
SCALARS = [-1.5, 0.5, 2.0]
DIAGONALS = [-1, 0, 1]

OPS = [
    # elementwise, one operand
    Op("neg", "-{0}"),
    Op("exp", "{0}.exp()"),
    Op("log", GUARD + ".log()"),
    Op("sqrt", GUARD + ".sqrt()"),
    Op("rsqrt", GUARD + ".rsqrt()"),
    Op("reciprocal", GUARD + ".reciprocal()"),
    Op("tanh", "{0}.tanh()"),
    Op("sigmoid", "{0}.sigmoid()"),
    Op("sin", "{0}.sin()"),
    Op("cos", "{0}.cos()"),
    Op("erf", "{0}.erf()"),
    Op("square", "{0}.square()"),
    Op("abs", "{0}.abs()", smooth=away_from(0.0)),
    Op("relu", "{0}.relu()", smooth=away_from(0.0)),
    Op("gelu", "F.gelu({0}, approximate={approximate})",
       params=choice(approximate=["none", "tanh"])),
    Op("silu", "F.silu({0})"),
    Op("clamp", "{0}.clamp({lo}, {hi})", smooth=clamp_smooth,
       params=lambda draw, s: draw(st.sampled_from(
           [{"lo": -0.5, "hi": 0.7}, {"lo": None, "hi": 0.3}, {"lo": -0.2, "hi": None}]))),
    Op("clone", "{0}.clone()"),
    Op("pow", "{0} ** {p}", params=choice(p=[2, 3])),
    Op("pow", GUARD + " ** {p}", params=choice(p=[0.5, -1.5, 2.5])),
    Op("add", "{0} + {c}", params=choice(c=SCALARS)),
    Op("sub", "{c} - {0}", params=choice(c=SCALARS)),
    Op("mul", "{c} * {0}", params=choice(c=SCALARS)),
    Op("div", "{0} / {c}", params=choice(c=SCALARS)),
    Op("div", "{c} / " + GUARD, params=choice(c=SCALARS)),
    # elementwise, broadcasting
    Op("add", "{0} + {1}", arity=2),
    Op("add", "T.add({0}, {1}, alpha={alpha})", arity=2, params=choice(alpha=[2.0, -0.5])),
    Op("sub", "{0} - {1}", arity=2),
    Op("mul", "{0} * {1}", arity=2),
    Op("div", "{0} / ({1} * {1} + 0.5)", arity=2),
    Op("pow", GUARD + " ** {1}", arity=2),
    Op("maximum", "T.maximum({0}, {1})", arity=2, smooth=apart),
    Op("minimum", "T.minimum({0}, {1})", arity=2, smooth=apart),
    Op("where", "T.where({0} > 0, {1}, {2})", arity=3, smooth=away_from(0.0)),
    Op("masked_fill", "{0}.masked_fill({1} > 0, {value})", arity=2, smooth=operand_away(1),
       partner=lambda chosen, s: broadcastable(chosen[0], s) and len(s) <= len(chosen[0])
       and all(m in (1, x) for m, x in zip(reversed(s), reversed(chosen[0]))),
       params=choice(value=[0.0, -2.0])),
    # reductions
    Op("sum", "{0}.sum({args})", params=reduction()),
    Op("mean", "{0}.mean({args})", params=reduction()),
    Op("amax", "{0}.amax({args})", smooth=no_ties,
       params=reduction()),
    Op("amin", "{0}.amin({args})", smooth=no_ties,
       params=reduction()),
    Op("max", "{0}.max()", smooth=no_ties),
    Op("max", "{0}.max(dim={dim}, keepdim={keepdim})[0]", accepts=has_dims,
       smooth=no_ties, params=dim_keepdim),
    Op("min", "{0}.min(dim={dim}, keepdim={keepdim})[0]", accepts=has_dims,
       smooth=no_ties, params=dim_keepdim),
    Op("logsumexp", "{0}.logsumexp({args})", accepts=has_dims,
       params=reduction(required=True)),
    Op("var", "{0}.var({args})", accepts=has_dims, params=spread_params),
    Op("std", "{0}.std({args})", accepts=has_dims, smooth=out_away_from_zero,
       params=spread_params),
    Op("norm", "{0}.norm({args})", smooth=out_away_from_zero, params=reduction(extra="p=2")),
    Op("cumsum", "{0}.cumsum({dim})", accepts=has_dims, params=dim_param),
    Op("softmax", "{0}.softmax({dim})", accepts=has_dims, params=dim_param),
    Op("softmax", "T.softmax({0}, dim={dim})", accepts=has_dims, params=dim_param),
    Op("log_softmax", "F.log_softmax({0}, dim={dim})", accepts=has_dims, params=dim_param),
    # shapes
    Op("reshape", "{0}.reshape({shape})",
       params=lambda draw, s: {"shape": factor_shape(draw, math.prod(s))}),
    Op("permute", "{0}.permute({perm})", params=permutation),
    Op("transpose", "{0}.transpose({d0}, {d1})", accepts=has_dims,
       params=lambda draw, s: {"d0": one_dim(draw, s), "d1": one_dim(draw, s)}),
    Op("transpose", "{0}.mT", accepts=ndim_at_least(2)),
    Op("unsqueeze", "{0}.unsqueeze({dim})",
       params=lambda draw, s: {"dim": one_dim(draw, s, extra=1)}),
    Op("squeeze", "{0}.squeeze({dim})", accepts=has_dims, params=dim_param),
    Op("squeeze", "{0}.squeeze()"),
    Op("flatten", "{0}.flatten({start}, {end})", accepts=ndim_at_least(1), params=flatten_params),
    Op("expand", "{0}.expand({shape})", params=expand_shape),
    Op("movedim", "{0}.movedim({src}, {dst})", accepts=has_dims,
       params=lambda draw, s: {"src": one_dim(draw, s), "dst": one_dim(draw, s)}),
    Op("narrow", "{0}.narrow({dim}, {start}, {length})", accepts=ndim_at_least(1),
       params=narrow_params),
    Op("repeat", "{0}.repeat({reps})",
       params=lambda draw, s: {"reps": tuple(draw(st.lists(
           st.integers(1, 2), min_size=max(len(s), 1), max_size=len(s) + 1)))}),
    Op("tril", "{0}.tril({diagonal})", accepts=ndim_at_least(2), params=choice(diagonal=DIAGONALS)),
    Op("triu", "{0}.triu({diagonal})", accepts=ndim_at_least(2), params=choice(diagonal=DIAGONALS)),
    Op("flip", "{0}.flip({dims})", accepts=has_dims,
       params=lambda draw, s: {"dims": some_dims(draw, s) if s else (0,)}),
    Op("cat", "T.cat([{0}, {1}], dim={dim})", arity=2, partner=cat_fits,
       params=lambda draw, a, b: {"dim": next((i for i, (x, y) in enumerate(zip(a, b)) if x != y),
                                              one_dim(draw, a))}),
    Op("stack", "T.stack([{0}, {1}], dim={dim})", arity=2, partner=same_shape,
       params=lambda draw, a, b: {"dim": one_dim(draw, a, extra=1)}),
    Op("split", "{0}.split({n}, dim={dim})[{k}]", accepts=ndim_at_least(1),
       params=lambda draw, s: pieces_param(draw, s, "split")),
    Op("chunk", "{0}.chunk({n}, dim={dim})[{k}]", accepts=ndim_at_least(1),
       params=lambda draw, s: pieces_param(draw, s, "chunk")),
    Op("unbind", "{0}.unbind({dim})[{k}]", accepts=ndim_at_least(1), params=unbind_params),
    Op("pad", "F.pad({0}, {pad}, value={value})", accepts=ndim_at_least(1), params=pad_params),
    # indexing
    Op("getitem", "{0}[{index}]", params=basic_index),
    Op("getitem", "{0}[{index}]", accepts=ndim_at_least(1), params=tensor_index),
    Op("getitem", "{0}[{mask}]", accepts=ndim_at_least(1), params=bool_mask),
    Op("getitem", "{0}[{0} > 0]", accepts=ndim_at_least(1), smooth=away_from(0.0)),
    Op("gather", "{0}.gather({dim}, {index})", accepts=ndim_at_least(1), params=gather_params),
    Op("scatter_add", "{0}.scatter_add({dim}, {index}, {1})", arity=2, accepts=ndim_at_least(1),
       partner=same_shape, params=scatter_params),
    # linear algebra
    Op("matmul", "{0} @ {1}", arity=2, partner=matmul_fits),
    Op("matmul", "{0} @ {0}.mT", accepts=ndim_at_least(2)),
    Op("linear", "F.linear({0}, {1})", arity=2, accepts=ndim_at_least(1),
       partner=lambda chosen, s: len(s) == 2 and s[1] == chosen[0][-1]),
    Op("linear", "F.linear({0}, {1}, {2})", arity=3, accepts=ndim_at_least(1),
       partner=lambda chosen, s: (len(s) == 2 and s[1] == chosen[0][-1]) if len(chosen) == 1
       else s == chosen[1][:1]),
    Op("linear", "F.linear({0}, {0})", accepts=lambda shape: len(shape) == 2),
    Op("einsum", "T.einsum({equation}, {0})", accepts=ndim_at_least(1), params=einsum_params),
    Op("einsum", "T.einsum({equation}, {0}, {1})", arity=2, accepts=ndim_at_least(1),
       partner=same_shape, params=einsum_params),
    # normalisation, losses, attention
    Op("layer_norm", "F.layer_norm({0}, {shape})", accepts=ndim_at_least(1), params=norm_shape),
    Op("layer_norm", "F.layer_norm({0}, {1}.shape, {1}, {2})", arity=3,
       accepts=ndim_at_least(1), partner=weight_fits, distinct=not COMPOSITE_FAN_OUT),
    Op("rms_norm", "F.rms_norm({0}, {shape})", accepts=ndim_at_least(1), params=norm_shape),
    Op("rms_norm", "F.rms_norm({0}, {1}.shape, {1})", arity=2, accepts=ndim_at_least(1),
       partner=weight_fits, distinct=not COMPOSITE_FAN_OUT),
    Op("cross_entropy", "F.cross_entropy({0}, {target}, reduction={reduction}, "
       "label_smoothing={label_smoothing})", accepts=ndim_at_least(1), params=cross_entropy_params),
    Op("scaled_dot_product_attention", "F.scaled_dot_product_attention({0}, {1}, {2}, "
       "is_causal={is_causal})", arity=3, accepts=ndim_at_least(2), partner=sdpa_fits,
       params=choice(is_causal=[False, True]), distinct=not COMPOSITE_FAN_OUT),
    Op("scaled_dot_product_attention",
       "F.scaled_dot_product_attention({0}, 0.5 * {0}, -{0})", accepts=ndim_at_least(2)),
] + ([Op("scaled_dot_product_attention", "F.scaled_dot_product_attention({0}, {0}, {0})",
         accepts=ndim_at_least(2))] if COMPOSITE_FAN_OUT else [])

# Differentiable primitives no entry reaches, and why (a meta-test checks the rest are reached).
NOT_FUZZED = {
    "cast": "the fuzzer compares in float64 only; dtype changes are checked in test_ops",
    "to_device": "one device per run",
}
