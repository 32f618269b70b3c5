"""One SGD training step of an MLP 784-512-512-10 (ReLU) on a batch of 128, softmax
cross-entropy: forward, backward, update. tensorgrad.nn and torch.nn against the NumPy floor's
hand-derived gradients."""
from . import row
from ..timing import scale

FRAMEWORKS = ("tensorgrad", "torch", "numpy")
DESCRIPTION = "ms per SGD step, MLP 784-512-512-10, batch 128"
SIZES = {"full": ((784, 512, 512, 10), 128), "quick": ((784, 512, 512, 10), 128),
         "tiny": ((32, 16, 16, 4), 8)}
LR = 0.01


def run(env):
    sizes, batch = SIZES[env.mode]
    x, y = env.randn(batch, sizes[0]), env.randint(sizes[-1], batch)
    step = _STEPS[env.framework](env, sizes)
    case = f"{'-'.join(map(str, sizes))} B={batch}"
    return [row(case, "ms/step", scale(env.measure(lambda: step(x, y)), 1e3))]


def _tensorgrad(env, sizes):
    from tensorgrad import nn
    import tensorgrad.nn.functional as F

    model = nn.Sequential(*_layers(nn, sizes, env.device))
    optimizer = nn.optim.SGD(model.parameters(), lr=LR)

    def step(x, y):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    return step


def _torch(env, sizes):
    import torch
    import torch.nn.functional as F

    model = torch.nn.Sequential(*_layers(torch.nn, sizes, env.device))
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)

    def step(x, y):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    return step


def _numpy(env, sizes):
    from ..numpy_floor import MLP
    return MLP(sizes, lr=LR, xp=env.xp).step


def _layers(nn, sizes, device):
    """Linear, ReLU, Linear, ReLU, ..., Linear from either framework's nn."""
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(fan_in, fan_out, device=device), nn.ReLU()]
    return layers[:-1]


_STEPS = {"tensorgrad": _tensorgrad, "torch": _torch, "numpy": _numpy}
