"""Finite-difference checks of gradients (first and second order), in float64."""
from .autograd import grad as _grad
from .tensor import Tensor, from_array


class GradcheckError(AssertionError):
    pass


def _numerical(fn, inputs, index, probe, eps):
    """Central differences of <probe, fn(inputs)> with respect to inputs[index]."""
    x = inputs[index]
    flat = x.data.reshape(-1)
    out = x._backend.zeros(flat.shape, dtype=x.data.dtype)
    for k in range(flat.size):
        original = flat[k].copy()
        flat[k] = original + eps
        plus = _dot(fn(*inputs), probe)
        flat[k] = original - eps
        minus = _dot(fn(*inputs), probe)
        flat[k] = original
        out[k] = (plus - minus) / (2 * eps)
    return out.reshape(x.shape)


def _dot(outputs, probes):
    outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    return sum(float((o.data * p.data).sum()) for o, p in zip(outputs, probes))


def _probes(outputs):
    """One random direction per output: a vector-valued fn becomes the scalar <probe, fn>."""
    return tuple(from_array(o._backend.random_normal(o.data.shape, o.data.dtype),
                                  o._backend) for o in outputs)


def _as_tuple(outputs):
    return tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Compare the analytical gradient of `fn` with central differences.

    fn takes Tensors and returns a Tensor (or a tuple of them); every input that requires grad
    is checked. A random probe vector makes a vector-valued fn scalar. Inputs should be float64.
    On failure raises GradcheckError naming the input, the worst element and both values.
    """
    inputs = tuple(inputs)
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor) and x.requires_grad and x.dtype.itemsize < 8:
            raise GradcheckError(f"gradcheck: input {i} is {x.dtype}; finite differences need "
                                 "float64 inputs")
    outputs = _as_tuple(fn(*inputs))
    xp = inputs[0]._backend
    probes = _probes(outputs)
    wanted = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    # An output that does not require grad does not depend on the inputs (the second
    # derivative of a linear op, say): its analytical gradient is zero, still checked below.
    differentiable = [(o, p) for o, p in zip(outputs, probes) if o.requires_grad]
    analytic = [None] * len(wanted)
    if differentiable:
        analytic = _grad([o for o, _ in differentiable], [inputs[i] for i in wanted],
                         [p for _, p in differentiable], allow_unused=True)
    for i, g in zip(wanted, analytic):
        numeric = _numerical(fn, inputs, i, probes, eps)
        got = xp.zeros_like(numeric) if g is None else g.data
        error = xp.abs(got - numeric) - (atol + rtol * xp.abs(numeric))
        if error.size and float(error.max()) > 0:
            k = int(error.argmax())
            where = tuple(int(v) for v in xp.unravel_index(k, numeric.shape))
            message = (f"gradcheck: gradient of input {i} (shape {inputs[i].shape}) is wrong at "
                       f"{where}: analytical {float(got.reshape(-1)[k]):.8g}, numerical "
                       f"{float(numeric.reshape(-1)[k]):.8g}")
            if raise_exception:
                raise GradcheckError(message)
            return False
    return True


def gradgradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3):
    """Check second derivatives: gradcheck applied to the (create_graph) gradient of `fn`."""
    inputs = tuple(inputs)
    wanted = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    outputs = _as_tuple(fn(*inputs))
    probes = _probes(outputs)

    def first_derivative(*xs):
        pairs = [(o, p) for o, p in zip(_as_tuple(fn(*xs)), probes) if o.requires_grad]
        grads = _grad([o for o, _ in pairs], [xs[i] for i in wanted], [p for _, p in pairs],
                      create_graph=True, allow_unused=True)
        return tuple(g if g is not None else xs[i] * 0.0 for g, i in zip(grads, wanted))

    return gradcheck(first_derivative, inputs, eps, atol, rtol)
