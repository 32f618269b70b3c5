"""The checklist's inputs and helpers (tests/test_torch_checklist.py). Each entry of the lists
in torch_checklist_tensors.py and torch_checklist_nn.py is (name, fn): fn(torch_or_tensorgrad)
returns what the user would look at (tensors, shapes, dtypes, numbers), compared between the
two."""
import io

import numpy as np

rng = np.random.default_rng(0)
A = rng.standard_normal((3, 4)).astype(np.float32)
B = rng.standard_normal((4, 5)).astype(np.float32)
V = rng.standard_normal(4).astype(np.float32)
P = rng.uniform(0.1, 2.0, (3, 4)).astype(np.float32)
IMG = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
SEQ = rng.standard_normal((2, 5, 8)).astype(np.float32)
IDS = np.array([[1, 4, 2, 0], [3, 3, 0, 1]])
LABELS = np.array([2, 0, 3])
INDEX = np.array([[0, 2], [1, 3], [3, 0]])
BATCH = rng.standard_normal((3, 2, 4)).astype(np.float32)


def a(t):
    return t.tensor(A)


def grad_of(t, f, x=A):
    """The gradient of f(x).sum() at x."""
    leaf = t.tensor(x, requires_grad=True)
    f(leaf).sum().backward()
    return leaf.grad


def shape_dtype(x):
    return tuple(x.shape), x.dtype


class Module:
    """An nn module built in both libraries with torch's initial weights copied into ours
    (torch runs first), called on `inputs`; returns the output and the input gradient."""
    torch_state = {}

    def __init__(self, make, *inputs, train=False, grad=True):
        self.make, self.inputs, self.train, self.grad = make, inputs, train, grad

    def __call__(self, t):
        module = self.make(t)
        if t.__name__ == "torch":
            Module.torch_state[id(self)] = {k: v.detach().numpy().copy()
                                            for k, v in module.state_dict().items()}
        else:
            module.load_state_dict({k: t.tensor(v) for k, v in
                                    Module.torch_state[id(self)].items()})
        module.train(self.train)
        xs = [t.tensor(x, requires_grad=self.grad and x.dtype.kind == "f")
              for x in self.inputs]
        out = module(*xs)
        first = out[0] if isinstance(out, tuple) else out
        if self.grad:
            first.float().sum().backward()
            return out, [x.grad for x in xs if x.requires_grad]
        return out


def optimizer_run(t, make, steps=5):
    """Parameters after a few steps of an optimizer on a small least-squares problem."""
    w = t.tensor(B, requires_grad=True)
    opt = make(t, [w])
    for _ in range(steps):
        opt.zero_grad()
        ((t.tensor(A) @ w) ** 2).mean().backward()
        opt.step()
    return w.detach()


def scheduler_lrs(t, make, steps=12):
    opt = t.optim.SGD([t.zeros(1, requires_grad=True)], lr=0.1)
    sched = make(t, opt)
    lrs = []
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    return lrs


def loader_batches(t, **kwargs):
    ds = t.utils.data.TensorDataset(t.arange(10.0).reshape(5, 2), t.arange(5))
    return [list(batch) for batch in t.utils.data.DataLoader(ds, **kwargs)]


def save_load(t, obj):
    buffer = io.BytesIO()
    t.save(obj, buffer)
    buffer.seek(0)
    return t.load(buffer)
