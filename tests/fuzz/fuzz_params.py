"""What the op table (fuzz_ops.py) is built from: shape predicates, parameter drawers and
smoothness checks, plus the flags that keep the fuzzer away from mismatches it found and the
engine has not fixed yet (each has a strict xfail in test_known_issues.py)."""
import math
import string
from itertools import zip_longest

from hypothesis import strategies as st

EPS = 1e-6  # how far (relative to the operand's scale) a value must stay from a kink or a tie


class Code(str):
    """A parameter written into the program as source text rather than as a quoted string."""

    def __repr__(self):
        return str(self)


# --- shapes ---------------------------------------------------------------------------------
def broadcastable(*shapes):
    for sizes in zip_longest(*(reversed(s) for s in shapes), fillvalue=1):
        if len(set(sizes) - {1}) > 1:
            return False
    return True


def ndim_at_least(n):
    return lambda shape: len(shape) >= n


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
    kinds = ["one", "tuple"] + ([] if required else ["all"])
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
    count = math.prod(shape[d] for d in params["dims"]) if shape else 1
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
    sizes = list(src)  # torch's backward refuses an index smaller than src (its forward takes it)
    return {"dim": dim, "index": index_tensor(draw, sizes, shape[dim])}


def einsum_params(draw, *shapes):
    letters = string.ascii_lowercase[:len(shapes[0])]
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


def jumps_away(value_of=lambda ops, p: ops[0], offset=0.0):
    """floor, round, remainder ...: the rounded quantity away from where it jumps (integers,
    or half-integers with offset=0.5), where the two frameworks could round apart."""
    def smooth(ops, out, p):
        q = value_of(ops, p) - offset
        return _clear((q - q.round()).abs(), 1.0)
    return smooth


def quotient(ops, p):
    """a / (b * b + 0.5): what div_rounded, remainder and fmod round (see DIVISOR)."""
    return ops[0] / (ops[1] * ops[1] + 0.5)


# --- convolution ----------------------------------------------------------------------------
def ndim_is(n):
    return lambda shape: len(shape) == n


def conv_fits(chosen, shape):
    """conv weight (C_out, C_in, *kernel) no larger than the input; then a bias (C_out,)."""
    x = chosen[0]
    if len(chosen) == 2:
        return shape == chosen[1][:1]
    return (len(shape) == len(x) and shape[1] == x[1]
            and all(k <= s for k, s in zip(shape[2:], x[2:])))


def conv_params(draw, x, w, *bias):
    """stride, padding and a dilation the input still fits."""
    padding = draw(st.integers(0, 1))
    fits = [d for d in (1, 2)
            if all((k - 1) * d + 1 <= s + 2 * padding for k, s in zip(w[2:], x[2:]))]
    return {"stride": draw(st.integers(1, 2)), "padding": padding,
            "dilation": draw(st.sampled_from(fits))}


def transpose_weight_fits(chosen, shape):
    """conv_transpose weight (C_in, C_out, *kernel)."""
    x = chosen[0]
    return len(shape) == len(x) and shape[0] == x[1]


def unfold_params(draw, x):
    kernel = tuple(draw(st.integers(1, s)) for s in x[2:])
    return {"kernel": kernel, "padding": draw(st.integers(0, 1)),
            "stride": draw(st.integers(1, 2))}
