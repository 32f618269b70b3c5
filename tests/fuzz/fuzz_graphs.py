"""Random op graphs, built once in tensorgrad and once in PyTorch from one description.

A `Graph` is a small program: inputs x0, x1, ... (standard normal float64 values of the given
shapes, drawn from its seed), then one line per op from fuzz_ops.OPS, e.g.
`v3 = (v1 * v1 + 0.5).log()`. Its repr is that program, so hypothesis prints a failing example
as code that runs unchanged with `T, F = torch, torch.nn.functional` or with tensorgrad's.

`graphs()` draws one: 1-3 inputs of mutually broadcastable shapes (0-d and size-1 dims
included), then 3-10 ops, each on values picked from everything made so far, so a value often
feeds several ops (fan-out) and some values reach no output (dead branches). The ops run on
torch values as they are drawn, so an op is kept only where it is smooth (no kink, no tie) and
its result is finite, not huge and not empty; the comparison then never has to excuse anything.

`check(graph)` runs both programs in float64 and compares every value, the gradients of
<probe, output> for every input and, for graphs drawn with `second_order`, the Hessian-vector
product (grad with create_graph=True, then the grad of <grad, v>).
"""
import contextlib
import functools
import re
from dataclasses import dataclass

import numpy as np
import torch
from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from torch.nn.attention import SDPBackend, sdpa_kernel

import tensorgrad as tg
import tensorgrad.nn.functional as tg_functional
from fuzz_ops import OPS

FRAMEWORKS = {"tensorgrad": (tg, tg_functional), "torch": (torch, torch.nn.functional)}
MAX_NUMEL = 256  # keeps every value small, so an example costs milliseconds
MAX_ABS = 1e4  # larger values (exp of exp ...) only test overflow, not gradients
RTOL, ATOL = 1e-7, 1e-9  # float64; ATOL is scaled by the largest torch value compared


@dataclass(frozen=True)
class Graph:
    shapes: tuple  # the inputs' shapes: x0, x1, ...
    seed: int  # draws the inputs, the output probe and the HVP direction
    steps: tuple  # (name, source) in order; the last one is the output
    second_order: bool = False

    @property
    def output(self):
        return self.steps[-1][0]

    def unused(self):
        """Values no later step reads and that are not the output: dead branches."""
        names = [f"x{i}" for i in range(len(self.shapes))] + [n for n, _ in self.steps[:-1]]
        return [n for n in names if not any(_reads(src, n) for _, src in self.steps)]

    def inputs(self):
        rng = np.random.default_rng([self.seed, 0])
        return [rng.standard_normal(shape) for shape in self.shapes]

    def directions(self, shapes):
        """Random arrays of these shapes (the probe of the output, the HVP direction)."""
        rng = np.random.default_rng([self.seed, 1])
        return [rng.standard_normal(shape) for shape in shapes]

    def __repr__(self):
        lines = [f"Graph(seed={self.seed}, second_order={self.second_order}):  "
                 "# x_i = numpy.random.default_rng([seed, 0]).standard_normal(shape), in order"]
        lines += [f"    x{i} = input({shape})" for i, shape in enumerate(self.shapes)]
        lines += [f"    {name} = {source}" for name, source in self.steps]
        unused = self.unused()
        lines.append(f"    output = {self.output}" + (f"  # unused: {', '.join(unused)}"
                                                       if unused else ""))
        return "\n".join(lines)

    def _repr_pretty_(self, printer, cycle):  # what hypothesis prints for a failing example
        printer.text(repr(self))


def _reads(source, name):
    """Does `source` read the variable `name` (v1, but not as part of v10)?"""
    return re.search(rf"\b{name}\b", source) is not None


@functools.lru_cache(maxsize=4096)
def _compiled(source):
    return compile(source, "<graph step>", "eval")


def run_steps(steps, inputs, framework):
    """Evaluate the steps on `inputs` (tensors of that framework); returns name -> value."""
    T, F = FRAMEWORKS[framework]
    env = {"T": T, "F": F}
    env.update((f"x{i}", x) for i, x in enumerate(inputs))
    # torch's fused CPU attention has no double backward; its math kernel has, and is the
    # reference here anyway
    with sdpa_kernel(SDPBackend.MATH) if framework == "torch" else contextlib.nullcontext():
        for name, source in steps:
            env[name] = eval(_compiled(source), env)
    return env


# --- drawing --------------------------------------------------------------------------------
@st.composite
def graphs(draw, ops=tuple(OPS), min_ops=3, max_ops=10, shapes=None):
    """A random Graph whose ops come from `ops` (see the module docstring); `shapes` fixes the
    inputs' shapes instead of drawing 1-3 broadcastable ones."""
    if shapes is None:
        n_inputs = draw(st.integers(1, 3))
        shapes = draw(hnp.mutually_broadcastable_shapes(
            num_shapes=n_inputs, min_dims=0, max_dims=4, max_side=4)).input_shapes
    shapes = tuple(shapes)
    seed = draw(st.integers(0, 2 ** 32 - 1))
    env = run_steps((), [torch.from_numpy(a) for a in Graph(shapes, seed, ()).inputs()], "torch")
    names = [f"x{i}" for i in range(len(shapes))]
    steps = []
    n_ops = draw(st.integers(min_ops, max_ops))
    for _ in range(4 * n_ops):  # an op that does not fit is skipped; try a bounded number
        if len(steps) == n_ops:
            break
        step = _draw_step(draw, ops, env, names, f"v{len(steps)}")
        if step is not None:
            steps.append(step)
            names.append(step[0])
    if len(steps) < min_ops:
        reject()
    return Graph(shapes, seed, tuple(steps), second_order=draw(st.booleans()))


def _draw_step(draw, ops, env, names, name):
    op = draw(st.sampled_from(ops))
    latest_first = names[::-1]  # shrinks towards chains: index 0 is the newest value
    operands = []
    for _ in range(op.arity):
        chosen = [tuple(env[n].shape) for n in operands]
        if not operands:
            fits = [n for n in latest_first if op.accepts(tuple(env[n].shape))]
        else:
            fits = [n for n in latest_first if op.fits(chosen, tuple(env[n].shape))]
        if not fits:
            return None
        operands.append(draw(st.sampled_from(fits)))
    params = op.params(draw, *(tuple(env[n].shape) for n in operands))
    source = op.render(operands, params)
    out = eval(_compiled(source), env)
    if not (0 < out.numel() <= MAX_NUMEL and bool(out.isfinite().all())
            and float(out.abs().max()) <= MAX_ABS):
        return None
    if op.smooth is not None and not op.smooth([env[n] for n in operands], out, params):
        return None
    env[name] = out
    return name, source


def _same(a, b):
    """Could tensorgrad hold these as one tensor? It returns its input from a no-op (movedim(0,
    0) ...) where torch makes a view: same storage, shape and strides."""
    return (a is b or a.data_ptr() == b.data_ptr() and a.shape == b.shape
            and a.stride() == b.stride())


# --- comparing ------------------------------------------------------------------------------
def _array(value, shape):
    if value is None:  # an input the output does not depend on: a zero gradient
        return np.zeros(shape)
    if isinstance(value, torch.Tensor):  # force: torch's VJPs may return a lazy ZeroTensor
        return value.detach().numpy(force=True)
    return value.detach().numpy()


def _compare(ours, theirs, shape, what, graph):
    ours_array, theirs_array = _array(ours, shape), _array(theirs, shape)
    context = f"{what}\n{graph!r}"
    assert ours_array.shape == theirs_array.shape, (
        f"shape {ours_array.shape}, torch {theirs_array.shape}: {context}")
    assert ours_array.dtype == theirs_array.dtype, (
        f"dtype {ours_array.dtype}, torch {theirs_array.dtype}: {context}")
    scale = max(1.0, float(np.abs(theirs_array).max(initial=0.0)))
    np.testing.assert_allclose(ours_array, theirs_array, rtol=RTOL, atol=ATOL * scale,
                               err_msg=context)


def _grad(framework, outputs, inputs, grad_outputs, create_graph=False):
    if framework == "tensorgrad":
        return tg.grad(outputs, inputs, grad_outputs, retain_graph=True,
                       create_graph=create_graph, allow_unused=True)
    return torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph=True,
                               create_graph=create_graph, allow_unused=True)


def _dot(grads, directions):
    """<grads, directions> over the gradients that are still attached to the graph."""
    terms = [(g * v).sum() for g, v in zip(grads, directions)
             if g is not None and g.requires_grad]
    return sum(terms[1:], terms[0]) if terms else None


def _derivatives(framework, inputs, output, probe, directions):
    """{what: one gradient per input}: of <probe, output>, and when `directions` are given,
    the same with create_graph=True and the Hessian-vector product along them. Also returns
    the tensor the HVP differentiates (None when no gradient depends on the inputs)."""
    T = FRAMEWORKS[framework][0]
    probe = T.tensor(probe, dtype=T.float64)
    found = {"gradient": _grad(framework, [output], inputs, [probe])}
    if directions is None:
        return found, None
    grads = _grad(framework, [output], inputs, [probe], create_graph=True)
    dot = _dot(grads, [T.tensor(v, dtype=T.float64) for v in directions])
    found["gradient with create_graph=True"] = grads
    found["Hessian-vector product"] = ([None] * len(inputs) if dot is None
                                       else _grad(framework, [dot], inputs, None))
    return found, dot


def check(graph):
    """Run `graph` in both frameworks and compare; returns the tensorgrad primitives it used."""
    arrays = graph.inputs()
    shapes = [a.shape for a in arrays]
    runs = {}
    for framework, (T, _) in FRAMEWORKS.items():
        inputs = [T.tensor(a, dtype=T.float64, requires_grad=True) for a in arrays]
        runs[framework] = inputs, run_steps(graph.steps, inputs, framework)
    ours, theirs = runs["tensorgrad"][1], runs["torch"][1]
    for name, source in graph.steps:
        _compare(ours[name], theirs[name], None, f"value of {name} = {source}", graph)
    used = primitives_in([ours[name] for name, _ in graph.steps])

    out_shape = tuple(theirs[graph.output].shape)
    probe, *directions = graph.directions([out_shape] + shapes)
    found = {fw: _derivatives(fw, inputs, env[graph.output], probe,
                              directions if graph.second_order else None)
             for fw, (inputs, env) in runs.items()}
    (ours_found, dot), (theirs_found, _) = found["tensorgrad"], found["torch"]
    for what, grads in ours_found.items():
        for i, (g, w) in enumerate(zip(grads, theirs_found[what])):
            _compare(g, w, shapes[i], f"{what} for x{i}", graph)
    return used | (primitives_in([dot]) if dot is not None else set())


def primitives_in(tensors):
    """Names of the primitives recorded in the graphs behind `tensors`."""
    names, seen = set(), set()
    stack = [t._node for t in tensors if t._node is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        names.add(node.prim.name)
        stack.extend(p for p in node.parents or () if p is not None and hasattr(p, "prim"))
    return names
