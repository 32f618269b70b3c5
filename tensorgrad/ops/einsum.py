"""einsum: Einstein summation as one primitive, its VJP an einsum per operand."""
from ..autograd import primitive
from ..errors import OpError


@primitive("einsum", saves="all")
def _einsum(xp, *arrays, equation):
    return xp.einsum(equation, *arrays)


@_einsum.defvjp
def _einsum_vjp(ctx, g):
    inputs_spec, output_spec = ctx.attrs["equation"].split("->")
    specs = inputs_spec.split(",")
    operands = ctx.inputs
    grads = []
    for i, spec in enumerate(specs):
        if not ctx.needs_grad[i]:
            grads.append(None)
            continue
        others = [(s, t) for j, (s, t) in enumerate(zip(specs, operands)) if j != i]
        present = set(output_spec).union(*(set(s) for s, _ in others))
        kept = "".join(c for c in spec if c in present)
        equation = ",".join([output_spec] + [s for s, _ in others]) + "->" + kept
        grad = einsum(equation, g, *(t for _, t in others))
        if kept != spec:  # letters summed only within this operand: broadcast back
            shape = ctx.in_shapes[i]
            grad = grad.reshape(tuple(shape[k] if c in present else 1
                                      for k, c in enumerate(spec))).expand(shape)
        grads.append(grad)
    return tuple(grads)


def _explicit(equation, shapes):
    """Spell out '...' with letters and add the implicit output, so the VJP can rearrange it."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    specs = lhs.split(",")
    if len(specs) != len(shapes):
        raise OpError(f"einsum: equation {equation!r} names {len(specs)} operands, "
                      f"got {len(shapes)}")
    if any(spec.count("...") > 1 for spec in specs):
        raise OpError(f"einsum: equation {equation!r} has more than one '...' in an operand")
    used = set(c for c in equation if c.isalpha())
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    widest = max((len(shape) - len(spec.replace("...", "")) for spec, shape in zip(specs, shapes)
                  if "..." in spec), default=0)
    ellipsis = "".join(spare[:widest])
    expanded = []
    for spec, shape in zip(specs, shapes):
        if "..." in spec:
            n = len(shape) - len(spec.replace("...", ""))
            spec = spec.replace("...", ellipsis[widest - n:])
        if len(spec) != len(shape):
            raise OpError(f"einsum: operand spec {spec!r} has {len(spec)} letters but the "
                          f"operand has shape {shape}")
        expanded.append(spec)
    if arrow:
        rhs = rhs.replace("...", ellipsis)
    else:
        counts = {}
        for c in "".join(expanded):
            counts[c] = counts.get(c, 0) + 1
        rhs = ellipsis + "".join(sorted(c for c, n in counts.items()
                                        if n == 1 and c not in ellipsis))
    return ",".join(expanded) + "->" + rhs


def einsum(equation, *operands):
    """Einstein summation, e.g. einsum("bhqd,bhkd->bhqk", q, k); '...' broadcasts."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    equation = _explicit(equation, [t.shape for t in operands])
    lhs, rhs = equation.split("->")
    specs = lhs.split(",")
    if any(len(set(spec)) != len(spec) for spec in specs):
        pairs = [_diagonals(spec, t) for spec, t in zip(specs, operands)]
        equation = ",".join(spec for spec, _ in pairs) + "->" + rhs
        operands = [t for _, t in pairs]
    return _einsum(*operands, equation=equation)


def _diagonals(spec, operand):
    """A letter repeated within one operand ('ii->i', 'ii' a trace) reads its diagonal: the
    operand's diagonal over those dims, and its spec with the letter once (at the end, where
    `diagonal` puts that dim)."""
    while len(set(spec)) != len(spec):
        letter = next(c for c in spec if spec.count(c) > 1)
        d1 = spec.index(letter)
        d2 = spec.index(letter, d1 + 1)
        if operand.shape[d1] != operand.shape[d2]:
            raise OpError(f"einsum: subscript {letter!r} is repeated in operand spec {spec!r} "
                          f"over dims of sizes {operand.shape[d1]} and {operand.shape[d2]} "
                          f"(shape {operand.shape}); a diagonal needs them equal")
        operand = operand.diagonal(0, d1, d2)
        spec = spec[:d1] + spec[d1 + 1:d2] + spec[d2 + 1:] + letter
    return spec, operand
