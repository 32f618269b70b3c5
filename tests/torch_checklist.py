"""About 500 everyday PyTorch calls, written the way user code writes them, for
tests/test_torch_checklist.py. Each entry is (name, fn): fn(torch_or_tensorgrad) returns what
the user would look at (tensors, shapes, dtypes, numbers), compared between the two."""
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


CREATION = [
    ("tensor floats", lambda t: t.tensor([[1.0, 2.0], [3.0, 4.0]])),
    ("tensor ints", lambda t: t.tensor([1, 2, 3])),
    ("tensor bools", lambda t: t.tensor([True, False])),
    ("tensor dtype=", lambda t: t.tensor([1, 2], dtype=t.float32)),
    ("tensor scalar", lambda t: t.tensor(3.5)),
    ("tensor from numpy", lambda t: t.tensor(A)),
    ("as_tensor", lambda t: t.as_tensor(A)),
    ("from_numpy", lambda t: t.from_numpy(A.copy())),
    ("zeros", lambda t: t.zeros(2, 3)),
    ("zeros tuple", lambda t: t.zeros((2, 3))),
    ("ones dtype", lambda t: t.ones(2, dtype=t.long)),
    ("full", lambda t: t.full((2, 2), 7.0)),
    ("full int", lambda t: t.full((2,), 3)),
    ("empty shape", lambda t: shape_dtype(t.empty(3, 2))),
    ("eye", lambda t: t.eye(3)),
    ("eye rect", lambda t: t.eye(2, 3)),
    ("arange", lambda t: t.arange(5)),
    ("arange float", lambda t: t.arange(0, 1, 0.25)),
    ("linspace", lambda t: t.linspace(0, 1, 5)),
    ("logspace", lambda t: t.logspace(0, 2, 3)),
    ("zeros_like", lambda t: t.zeros_like(a(t))),
    ("ones_like", lambda t: t.ones_like(a(t))),
    ("full_like", lambda t: t.full_like(a(t), 2.5)),
    ("empty_like", lambda t: shape_dtype(t.empty_like(a(t)))),
    ("rand", lambda t: shape_dtype(t.rand(2, 3))),
    ("randn", lambda t: shape_dtype(t.randn(2, 3))),
    ("randint", lambda t: shape_dtype(t.randint(0, 10, (3,)))),
    ("randn_like", lambda t: shape_dtype(t.randn_like(a(t)))),
    ("rand_like", lambda t: shape_dtype(t.rand_like(a(t)))),
    ("randperm sorted", lambda t: t.randperm(6).sort().values),
    ("manual_seed repeats", lambda t: (t.manual_seed(3), t.randn(3))[1].shape),
    ("stack", lambda t: t.stack([a(t), a(t)], dim=1)),
    ("cat", lambda t: t.cat([a(t), a(t)], dim=0)),
    ("concat", lambda t: t.concat([a(t), a(t)], dim=1)),
    ("hstack", lambda t: t.hstack([a(t), a(t)])),
    ("vstack", lambda t: t.vstack([a(t), a(t)])),
    ("tril", lambda t: t.tril(a(t))),
    ("triu diagonal", lambda t: t.triu(t.ones(3, 3), diagonal=1)),
    ("meshgrid ij", lambda t: t.meshgrid(t.arange(2), t.arange(3), indexing="ij")),
    ("where", lambda t: t.where(a(t) > 0, a(t), t.zeros_like(a(t)))),
    ("where scalar", lambda t: t.where(a(t) > 0, a(t), 0.0)),
    ("is_tensor", lambda t: t.is_tensor(a(t))),
    ("numel", lambda t: t.numel(a(t))),
    ("float dtype alias", lambda t: t.tensor([1], dtype=t.float).dtype),
    ("long alias", lambda t: t.tensor([1.7]).long()),
    ("complex? is_floating_point", lambda t: t.is_floating_point(a(t))),
    ("default dtype", lambda t: t.get_default_dtype()),
    ("finfo eps", lambda t: t.finfo(t.float32).eps),
    ("iinfo max", lambda t: t.iinfo(t.int32).max),
]

TENSOR = [
    ("shape", lambda t: a(t).shape),
    ("size()", lambda t: a(t).size()),
    ("size(dim)", lambda t: a(t).size(1)),
    ("dim()", lambda t: a(t).dim()),
    ("ndim", lambda t: a(t).ndim),
    ("numel()", lambda t: a(t).numel()),
    ("dtype", lambda t: a(t).dtype),
    ("device type", lambda t: a(t).device.type),
    ("item", lambda t: a(t)[0, 0].item()),
    ("tolist", lambda t: t.tensor([[1, 2], [3, 4]]).tolist()),
    ("numpy", lambda t: a(t).numpy()),
    ("len", lambda t: len(a(t))),
    ("iter rows", lambda t: list(a(t))),
    ("float()", lambda t: t.tensor([1, 2]).float()),
    ("double()", lambda t: a(t).double()),
    ("half()", lambda t: a(t).half()),
    ("int()", lambda t: a(t).int()),
    ("bool()", lambda t: a(t).bool()),
    ("to dtype", lambda t: a(t).to(t.float64)),
    ("to device", lambda t: a(t).to("cpu")),
    ("to other", lambda t: t.tensor([1, 2]).to(a(t))),
    ("type_as", lambda t: t.tensor([1, 2]).type_as(a(t))),
    ("cpu()", lambda t: a(t).cpu()),
    ("clone", lambda t: a(t).clone()),
    ("detach", lambda t: a(t).detach()),
    ("contiguous", lambda t: a(t).t().contiguous()),
    ("is_contiguous", lambda t: a(t).is_contiguous()),
    ("view", lambda t: a(t).view(2, 6)),
    ("view -1", lambda t: a(t).view(-1)),
    ("reshape", lambda t: a(t).reshape(4, 3)),
    ("flatten", lambda t: t.tensor(IMG).flatten(1)),
    ("unflatten", lambda t: a(t).unflatten(1, (2, 2))),
    ("permute", lambda t: t.tensor(IMG).permute(0, 2, 3, 1)),
    ("transpose", lambda t: a(t).transpose(0, 1)),
    ("t()", lambda t: a(t).t()),
    ("T", lambda t: a(t).T),
    ("mT", lambda t: t.tensor(BATCH).mT),
    ("unsqueeze", lambda t: a(t).unsqueeze(0)),
    ("squeeze", lambda t: a(t)[None].squeeze()),
    ("squeeze dim", lambda t: a(t)[None].squeeze(0)),
    ("expand", lambda t: t.tensor(V).expand(3, 4)),
    ("expand_as", lambda t: t.tensor(V).expand_as(a(t))),
    ("repeat", lambda t: t.tensor(V).repeat(2, 1)),
    ("repeat_interleave", lambda t: t.tensor([1, 2]).repeat_interleave(2)),
    ("chunk", lambda t: a(t).chunk(2, dim=1)),
    ("split", lambda t: a(t).split(1, dim=0)),
    ("split sizes", lambda t: a(t).split([1, 3], dim=1)),
    ("unbind", lambda t: a(t).unbind(0)),
    ("index int", lambda t: a(t)[1]),
    ("index slice", lambda t: a(t)[:, 1:3]),
    ("index step", lambda t: a(t)[::2]),
    ("index ellipsis", lambda t: t.tensor(IMG)[..., 0]),
    ("index None", lambda t: a(t)[:, None]),
    ("index list", lambda t: a(t)[[0, 2]]),
    ("index tensor", lambda t: a(t)[t.tensor([2, 0])]),
    ("index bool mask", lambda t: a(t)[a(t) > 0]),
    ("index pairs", lambda t: a(t)[t.tensor([0, 1]), t.tensor([2, 3])]),
    ("setitem", lambda t: (lambda x: (x.__setitem__((0, slice(None)), 1.0), x)[1])(a(t))),
    ("setitem mask", lambda t: (lambda x: (x.__setitem__(x < 0, 0.0), x)[1])(a(t))),
    ("gather", lambda t: a(t).gather(1, t.tensor(INDEX))),
    ("scatter", lambda t: t.zeros(3, 4).scatter(1, t.tensor(INDEX), 1.0)),
    ("scatter_add", lambda t: t.zeros(3, 4).scatter_add(1, t.tensor(INDEX), t.ones(3, 2))),
    ("index_select", lambda t: a(t).index_select(1, t.tensor([0, 3]))),
    ("masked_fill", lambda t: a(t).masked_fill(a(t) > 0, 0.0)),
    ("masked_select", lambda t: a(t).masked_select(a(t) > 0)),
    ("nonzero", lambda t: (a(t) > 0).nonzero()),
    ("sum", lambda t: a(t).sum()),
    ("sum dim keepdim", lambda t: a(t).sum(dim=1, keepdim=True)),
    ("sum dims", lambda t: t.tensor(IMG).sum((2, 3))),
    ("mean", lambda t: a(t).mean(0)),
    ("std", lambda t: a(t).std()),
    ("std unbiased=False", lambda t: a(t).std(dim=1, unbiased=False)),
    ("var correction", lambda t: a(t).var(1, correction=0)),
    ("prod", lambda t: a(t).prod(1)),
    ("max", lambda t: a(t).max()),
    ("max dim", lambda t: a(t).max(dim=1)),
    ("max dim values", lambda t: a(t).max(1).values),
    ("min dim indices", lambda t: a(t).min(0).indices),
    ("max other", lambda t: a(t).max(t.zeros(3, 4))),
    ("amax", lambda t: a(t).amax(1)),
    ("argmax", lambda t: a(t).argmax()),
    ("argmax dim", lambda t: a(t).argmax(dim=1)),
    ("argmin keepdim", lambda t: a(t).argmin(1, keepdim=True)),
    ("median", lambda t: a(t).median()),
    ("logsumexp", lambda t: a(t).logsumexp(1)),
    ("norm", lambda t: a(t).norm()),
    ("norm p dim", lambda t: a(t).norm(p=1, dim=1)),
    ("all", lambda t: (a(t) > -10).all()),
    ("any dim", lambda t: (a(t) > 1).any(1)),
    ("cumsum", lambda t: a(t).cumsum(1)),
    ("cumprod", lambda t: a(t).cumprod(0)),
    ("topk", lambda t: a(t).topk(2, dim=1)),
    ("sort", lambda t: a(t).sort(dim=1, descending=True)),
    ("argsort", lambda t: a(t).argsort(1)),
    ("unique", lambda t: t.tensor([3, 1, 3, 2]).unique()),
    ("flip", lambda t: a(t).flip(0)),
    ("roll", lambda t: a(t).roll(1, 1)),
    ("abs", lambda t: a(t).abs()),
    ("neg", lambda t: -a(t)),
    ("exp", lambda t: a(t).exp()),
    ("log", lambda t: t.tensor(P).log()),
    ("log1p", lambda t: t.tensor(P).log1p()),
    ("sqrt", lambda t: t.tensor(P).sqrt()),
    ("rsqrt", lambda t: t.tensor(P).rsqrt()),
    ("pow", lambda t: a(t).pow(2)),
    ("** 0.5", lambda t: t.tensor(P) ** 0.5),
    ("2 ** x", lambda t: 2 ** a(t)),
    ("sin", lambda t: a(t).sin()),
    ("cos", lambda t: a(t).cos()),
    ("tanh", lambda t: a(t).tanh()),
    ("sigmoid", lambda t: a(t).sigmoid()),
    ("relu", lambda t: a(t).relu()),
    ("softmax", lambda t: a(t).softmax(dim=-1)),
    ("log_softmax", lambda t: a(t).log_softmax(1)),
    ("clamp", lambda t: a(t).clamp(-0.5, 0.5)),
    ("clamp min", lambda t: a(t).clamp(min=0)),
    ("clip", lambda t: a(t).clip(-1, 1)),
    ("round", lambda t: a(t).round()),
    ("floor", lambda t: a(t).floor()),
    ("ceil", lambda t: a(t).ceil()),
    ("sign", lambda t: a(t).sign()),
    ("reciprocal", lambda t: t.tensor(P).reciprocal()),
    ("lerp", lambda t: a(t).lerp(t.zeros(3, 4), 0.25)),
    ("add alpha", lambda t: a(t).add(a(t), alpha=2)),
    ("sub", lambda t: a(t).sub(1)),
    ("mul", lambda t: a(t).mul(a(t))),
    ("div", lambda t: a(t).div(2)),
    ("div floor", lambda t: t.tensor([7, -7]).div(2, rounding_mode="floor")),
    ("// ", lambda t: t.tensor([7, -7]) // 2),
    ("%", lambda t: t.tensor([7, -7]) % 3),
    ("int / int", lambda t: t.tensor([1, 2]) / 2),
    ("matmul", lambda t: a(t).matmul(t.tensor(B))),
    ("@", lambda t: a(t) @ t.tensor(B)),
    ("mm", lambda t: t.mm(a(t), t.tensor(B))),
    ("bmm", lambda t: t.bmm(t.tensor(BATCH), t.tensor(BATCH).transpose(1, 2))),
    ("mv", lambda t: t.mv(a(t), t.tensor(V))),
    ("dot", lambda t: t.dot(t.tensor(V), t.tensor(V))),
    ("outer", lambda t: t.outer(t.tensor(V), t.tensor(V))),
    ("einsum", lambda t: t.einsum("ij,jk->ik", a(t), t.tensor(B))),
    ("eq", lambda t: a(t) == a(t)),
    ("gt", lambda t: a(t) > 0),
    ("le scalar", lambda t: a(t).le(0.1)),
    ("ne", lambda t: a(t).ne(0)),
    ("logical_and", lambda t: (a(t) > 0) & (a(t) < 1)),
    ("logical_not", lambda t: ~(a(t) > 0)),
    ("equal", lambda t: t.equal(a(t), a(t))),
    ("allclose", lambda t: t.allclose(a(t), a(t) + 1e-9)),
    ("isclose", lambda t: t.isclose(a(t), a(t))),
    ("isnan", lambda t: t.tensor([1.0, float("nan")]).isnan()),
    ("isfinite", lambda t: t.tensor([1.0, float("inf")]).isfinite()),
    ("nan_to_num", lambda t: t.tensor([float("nan"), 1.0]).nan_to_num(0.0)),
    ("fill_", lambda t: a(t).fill_(2.0)),
    ("zero_", lambda t: a(t).zero_()),
    ("add_", lambda t: a(t).add_(1.0)),
    ("mul_", lambda t: a(t).mul_(2)),
    ("clamp_", lambda t: a(t).clamp_(0, 1)),
    ("copy_", lambda t: t.zeros(3, 4).copy_(a(t))),
    ("uniform_ shape", lambda t: shape_dtype(t.empty(3).uniform_(0, 1))),
    ("normal_ shape", lambda t: shape_dtype(t.empty(3).normal_())),
    ("requires_grad_", lambda t: a(t).requires_grad_().requires_grad),
    ("new_zeros", lambda t: a(t).new_zeros(2)),
    ("new_ones", lambda t: a(t).new_ones((2, 2))),
    ("new_full", lambda t: a(t).new_full((2,), 3.0)),
    ("new_tensor", lambda t: a(t).new_tensor([1, 2])),
    ("element_size", lambda t: a(t).element_size()),
    ("apply_ neg? masked sum", lambda t: (a(t) * (a(t) > 0)).sum()),
    ("diag", lambda t: t.diag(t.tensor(V))),
    ("diagonal", lambda t: a(t).diagonal()),
    ("trace", lambda t: t.ones(3, 3).trace()),
    ("tensor repr shape", lambda t: str(t.tensor([1, 2])).startswith("tensor(")),
]

NN = [
    ("Linear", Module(lambda t: t.nn.Linear(4, 3), A)),
    ("Linear no bias", Module(lambda t: t.nn.Linear(4, 3, bias=False), A)),
    ("Bilinear?", Module(lambda t: t.nn.Sequential(t.nn.Linear(4, 8), t.nn.ReLU(),
                                                   t.nn.Linear(8, 2)), A)),
    ("Conv1d", Module(lambda t: t.nn.Conv1d(5, 4, 3, padding=1), SEQ)),
    ("Conv2d", Module(lambda t: t.nn.Conv2d(3, 4, 3), IMG)),
    ("Conv2d stride pad", Module(lambda t: t.nn.Conv2d(3, 4, 3, stride=2, padding=1), IMG)),
    ("Conv2d groups", Module(lambda t: t.nn.Conv2d(3, 6, 3, groups=3, padding="same"), IMG)),
    ("ConvTranspose2d", Module(lambda t: t.nn.ConvTranspose2d(3, 2, 2, stride=2), IMG)),
    ("MaxPool2d", Module(lambda t: t.nn.MaxPool2d(2), IMG)),
    ("AvgPool2d", Module(lambda t: t.nn.AvgPool2d(2, stride=2), IMG)),
    ("AdaptiveAvgPool2d", Module(lambda t: t.nn.AdaptiveAvgPool2d((1, 1)), IMG)),
    ("AdaptiveAvgPool2d 3", Module(lambda t: t.nn.AdaptiveAvgPool2d(3), IMG)),
    ("BatchNorm2d train", Module(lambda t: t.nn.BatchNorm2d(3), IMG, train=True)),
    ("BatchNorm2d eval", Module(lambda t: t.nn.BatchNorm2d(3), IMG)),
    ("BatchNorm1d", Module(lambda t: t.nn.BatchNorm1d(4), A, train=True)),
    ("LayerNorm", Module(lambda t: t.nn.LayerNorm(8), SEQ)),
    ("GroupNorm", Module(lambda t: t.nn.GroupNorm(1, 3), IMG)),
    ("Embedding", Module(lambda t: t.nn.Embedding(5, 3), IDS, grad=False)),
    ("Embedding padding_idx", Module(lambda t: t.nn.Embedding(5, 3, padding_idx=0), IDS,
                                     grad=False)),
    ("Dropout eval", Module(lambda t: t.nn.Dropout(0.5), A)),
    ("Flatten", Module(lambda t: t.nn.Flatten(), IMG)),
    ("Unflatten", Module(lambda t: t.nn.Unflatten(1, (2, 2)), A)),
    ("Identity", Module(lambda t: t.nn.Identity(), A)),
    ("ReLU", Module(lambda t: t.nn.ReLU(), A)),
    ("LeakyReLU", Module(lambda t: t.nn.LeakyReLU(0.1), A)),
    ("GELU", Module(lambda t: t.nn.GELU(), A)),
    ("SiLU", Module(lambda t: t.nn.SiLU(), A)),
    ("Tanh", Module(lambda t: t.nn.Tanh(), A)),
    ("Sigmoid", Module(lambda t: t.nn.Sigmoid(), A)),
    ("Softmax", Module(lambda t: t.nn.Softmax(dim=1), A)),
    ("LogSoftmax", Module(lambda t: t.nn.LogSoftmax(dim=-1), A)),
    ("ELU", Module(lambda t: t.nn.ELU(), A)),
    ("Softplus", Module(lambda t: t.nn.Softplus(), A)),
    ("Upsample", Module(lambda t: t.nn.Upsample(scale_factor=2, mode="nearest"), IMG)),
    ("Sequential OrderedDict", Module(lambda t: t.nn.Sequential(__import__(
        "collections").OrderedDict(fc=t.nn.Linear(4, 2), act=t.nn.Tanh())), A)),
    ("MultiheadAttention", Module(lambda t: t.nn.MultiheadAttention(8, 2, batch_first=True),
                                  SEQ, SEQ, SEQ)),
    ("TransformerEncoderLayer", Module(lambda t: t.nn.TransformerEncoderLayer(
        8, 2, 16, dropout=0.0, batch_first=True), SEQ)),
    ("LSTM", Module(lambda t: t.nn.LSTM(8, 6, batch_first=True), SEQ)),
    ("GRU 2 layers", Module(lambda t: t.nn.GRU(8, 6, num_layers=2), SEQ)),
    ("RNN bidirectional", Module(lambda t: t.nn.RNN(8, 4, bidirectional=True), SEQ)),
    ("LSTMCell", Module(lambda t: t.nn.LSTMCell(4, 3), A)),
    ("CrossEntropyLoss", lambda t: t.nn.CrossEntropyLoss()(a(t), t.tensor(LABELS))),
    ("CrossEntropyLoss smoothing", lambda t: t.nn.CrossEntropyLoss(label_smoothing=0.1)(
        a(t), t.tensor(LABELS))),
    ("CrossEntropyLoss ignore_index", lambda t: t.nn.CrossEntropyLoss(ignore_index=0)(
        a(t), t.tensor(LABELS))),
    ("NLLLoss", lambda t: t.nn.NLLLoss()(a(t).log_softmax(1), t.tensor(LABELS))),
    ("MSELoss", lambda t: t.nn.MSELoss()(a(t), t.zeros(3, 4))),
    ("L1Loss sum", lambda t: t.nn.L1Loss(reduction="sum")(a(t), t.zeros(3, 4))),
    ("SmoothL1Loss", lambda t: t.nn.SmoothL1Loss()(a(t), t.zeros(3, 4))),
    ("BCELoss", lambda t: t.nn.BCELoss()(a(t).sigmoid(), (a(t) > 0).float())),
    ("BCEWithLogitsLoss", lambda t: t.nn.BCEWithLogitsLoss()(a(t), (a(t) > 0).float())),
    ("BCEWithLogits pos_weight", lambda t: t.nn.BCEWithLogitsLoss(pos_weight=t.ones(4) * 2)(
        a(t), (a(t) > 0).float())),
    ("KLDivLoss", lambda t: t.nn.KLDivLoss(reduction="batchmean")(
        a(t).log_softmax(1), a(t).softmax(1))),
    ("HuberLoss", lambda t: t.nn.HuberLoss(delta=0.5)(a(t), t.zeros(3, 4))),
    ("parameters count", lambda t: sum(p.numel() for p in t.nn.Linear(4, 3).parameters())),
    ("named_parameters", lambda t: [n for n, _ in t.nn.Sequential(
        t.nn.Linear(2, 2), t.nn.ReLU(), t.nn.Linear(2, 1)).named_parameters()]),
    ("state_dict keys", lambda t: list(t.nn.BatchNorm1d(3).state_dict())),
    ("children", lambda t: len(list(t.nn.Sequential(t.nn.Linear(2, 2), t.nn.ReLU()).children()))),
    ("modules", lambda t: len(list(t.nn.Sequential(t.nn.Linear(2, 2), t.nn.ReLU()).modules()))),
    ("ModuleList len", lambda t: len(t.nn.ModuleList([t.nn.Linear(2, 2)] * 3))),
    ("ModuleDict keys", lambda t: list(t.nn.ModuleDict({"a": t.nn.ReLU()}).keys())),
    ("ParameterList", lambda t: len(list(t.nn.ParameterList(
        [t.nn.Parameter(t.ones(2))]).parameters()))),
    ("ParameterDict", lambda t: list(t.nn.ParameterDict(
        {"w": t.nn.Parameter(t.ones(2))}).state_dict())),
    ("Parameter requires_grad", lambda t: t.nn.Parameter(t.ones(2)).requires_grad),
    ("register_buffer", lambda t: (lambda m: (m.register_buffer("b", t.ones(2)),
                                              list(m.state_dict()))[1])(t.nn.Module())),
    ("train/eval flag", lambda t: t.nn.Dropout().eval().training),
    ("requires_grad_ False", lambda t: [p.requires_grad for p in
                                        t.nn.Linear(2, 2).requires_grad_(False).parameters()]),
    ("zero_grad", lambda t: (lambda m: (m(t.ones(1, 2)).sum().backward(), m.zero_grad(),
                                        m.weight.grad)[2])(t.nn.Linear(2, 2))),
    ("apply init", lambda t: t.nn.Linear(2, 2).apply(
        lambda m: t.nn.init.zeros_(m.weight) if hasattr(m, "weight") else None).weight),
    ("Module.double", lambda t: t.nn.Linear(2, 2).double().weight.dtype),
    ("Module.half", lambda t: t.nn.Linear(2, 2).half().weight.dtype),
    ("Module.to dtype", lambda t: t.nn.Linear(2, 2).to(t.float64).bias.dtype),
    ("get_submodule", lambda t: type(t.nn.Sequential(t.nn.Linear(2, 2)).get_submodule(
        "0")).__name__),
    ("init.xavier_uniform_ bound", lambda t: bool(t.nn.init.xavier_uniform_(
        t.empty(4, 4)).abs().max() <= 1.0)),
    ("init.kaiming_normal_ shape", lambda t: shape_dtype(t.nn.init.kaiming_normal_(
        t.empty(3, 4), mode="fan_out", nonlinearity="relu"))),
    ("init.constant_", lambda t: t.nn.init.constant_(t.empty(2), 0.3)),
    ("init.orthogonal_ shape", lambda t: shape_dtype(t.nn.init.orthogonal_(t.empty(3, 5)))),
    ("init.trunc_normal_ shape", lambda t: shape_dtype(t.nn.init.trunc_normal_(
        t.empty(3), std=0.02))),
    ("init.calculate_gain", lambda t: t.nn.init.calculate_gain("relu")),
    ("utils.clip_grad_norm_", lambda t: (lambda p: (p.sum().mul(3).backward(),
                                                    t.nn.utils.clip_grad_norm_([p], 1.0),
                                                    p.grad)[1:])(t.ones(4, requires_grad=True))),
    ("utils.clip_grad_value_", lambda t: (lambda p: ((p * 3).sum().backward(),
                                                     t.nn.utils.clip_grad_value_([p], 1.0),
                                                     p.grad)[2])(t.ones(4, requires_grad=True))),
    ("utils.parameters_to_vector", lambda t: t.nn.utils.parameters_to_vector(
        [t.ones(2, 2), t.zeros(3)])),
    ("utils.rnn.pad_sequence", lambda t: t.nn.utils.rnn.pad_sequence(
        [t.ones(2), t.ones(3)], batch_first=True)),
]

FUNCTIONAL = [
    ("F.relu", lambda t: t.nn.functional.relu(a(t))),
    ("F.relu grad", lambda t: grad_of(t, t.nn.functional.relu)),
    ("F.gelu tanh", lambda t: t.nn.functional.gelu(a(t), approximate="tanh")),
    ("F.silu", lambda t: t.nn.functional.silu(a(t))),
    ("F.leaky_relu", lambda t: t.nn.functional.leaky_relu(a(t), 0.2)),
    ("F.elu", lambda t: t.nn.functional.elu(a(t))),
    ("F.softplus", lambda t: t.nn.functional.softplus(a(t), beta=2)),
    ("F.softmax", lambda t: t.nn.functional.softmax(a(t), dim=1)),
    ("F.log_softmax", lambda t: t.nn.functional.log_softmax(a(t), dim=-1)),
    ("F.sigmoid", lambda t: t.sigmoid(a(t))),
    ("F.tanh", lambda t: t.tanh(a(t))),
    ("F.linear", lambda t: t.nn.functional.linear(a(t), t.tensor(B).T)),
    ("F.conv2d", lambda t: t.nn.functional.conv2d(t.tensor(IMG), t.ones(2, 3, 3, 3),
                                                  padding=1)),
    ("F.conv1d", lambda t: t.nn.functional.conv1d(t.tensor(SEQ), t.ones(3, 5, 2))),
    ("F.max_pool2d", lambda t: t.nn.functional.max_pool2d(t.tensor(IMG), 2)),
    ("F.avg_pool2d", lambda t: t.nn.functional.avg_pool2d(t.tensor(IMG), 2)),
    ("F.adaptive_avg_pool2d", lambda t: t.nn.functional.adaptive_avg_pool2d(t.tensor(IMG), 1)),
    ("F.dropout eval", lambda t: t.nn.functional.dropout(a(t), 0.5, training=False)),
    ("F.dropout shape", lambda t: shape_dtype(t.nn.functional.dropout(a(t), 0.5))),
    ("F.cross_entropy", lambda t: t.nn.functional.cross_entropy(a(t), t.tensor(LABELS))),
    ("F.cross_entropy grad", lambda t: grad_of(
        t, lambda x: t.nn.functional.cross_entropy(x, t.tensor(LABELS)))),
    ("F.cross_entropy none", lambda t: t.nn.functional.cross_entropy(
        a(t), t.tensor(LABELS), reduction="none")),
    ("F.cross_entropy probs", lambda t: t.nn.functional.cross_entropy(a(t), a(t).softmax(1))),
    ("F.cross_entropy 3d", lambda t: t.nn.functional.cross_entropy(
        t.tensor(SEQ).transpose(1, 2), t.tensor(IDS[:, :4]).repeat(1, 2)[:, :5] % 8)),
    ("F.nll_loss", lambda t: t.nn.functional.nll_loss(a(t), t.tensor(LABELS))),
    ("F.mse_loss", lambda t: t.nn.functional.mse_loss(a(t), t.ones(3, 4))),
    ("F.l1_loss", lambda t: t.nn.functional.l1_loss(a(t), t.ones(3, 4))),
    ("F.binary_cross_entropy", lambda t: t.nn.functional.binary_cross_entropy(
        a(t).sigmoid(), t.ones(3, 4))),
    ("F.binary_cross_entropy_with_logits", lambda t:
        t.nn.functional.binary_cross_entropy_with_logits(a(t), t.ones(3, 4))),
    ("F.kl_div", lambda t: t.nn.functional.kl_div(a(t).log_softmax(1), a(t).softmax(1),
                                                  reduction="batchmean")),
    ("F.smooth_l1_loss", lambda t: t.nn.functional.smooth_l1_loss(a(t), t.zeros(3, 4))),
    ("F.one_hot", lambda t: t.nn.functional.one_hot(t.tensor(LABELS), 4)),
    ("F.one_hot default", lambda t: t.nn.functional.one_hot(t.tensor(LABELS))),
    ("F.pad", lambda t: t.nn.functional.pad(a(t), (1, 2))),
    ("F.pad value", lambda t: t.nn.functional.pad(a(t), (1, 1, 2, 0), value=-1.0)),
    ("F.pad reflect", lambda t: t.nn.functional.pad(t.tensor(IMG), (1, 1, 1, 1),
                                                    mode="reflect")),
    ("F.interpolate nearest", lambda t: t.nn.functional.interpolate(t.tensor(IMG),
                                                                    scale_factor=2)),
    ("F.interpolate bilinear", lambda t: t.nn.functional.interpolate(
        t.tensor(IMG), size=(5, 5), mode="bilinear", align_corners=False)),
    ("F.normalize", lambda t: t.nn.functional.normalize(a(t), dim=1)),
    ("F.normalize p=1", lambda t: t.nn.functional.normalize(a(t), p=1.0, dim=0)),
    ("F.cosine_similarity", lambda t: t.nn.functional.cosine_similarity(a(t), a(t) + 1)),
    ("F.pairwise_distance", lambda t: t.nn.functional.pairwise_distance(a(t), a(t) * 2)),
    ("F.embedding", lambda t: t.nn.functional.embedding(t.tensor(IDS), t.tensor(B.T))),
    ("F.layer_norm", lambda t: t.nn.functional.layer_norm(a(t), (4,))),
    ("F.group_norm", lambda t: t.nn.functional.group_norm(t.tensor(IMG), 3)),
    ("F.batch_norm eval", lambda t: t.nn.functional.batch_norm(
        a(t), t.zeros(4), t.ones(4), training=False)),
    ("F.scaled_dot_product_attention", lambda t: t.nn.functional.scaled_dot_product_attention(
        t.tensor(SEQ), t.tensor(SEQ), t.tensor(SEQ), is_causal=True)),
    ("F.unfold", lambda t: t.nn.functional.unfold(t.tensor(IMG), 3)),
    ("F.glu", lambda t: t.nn.functional.glu(a(t))),
    ("F.hardtanh", lambda t: t.nn.functional.hardtanh(a(t))),
    ("F.relu6", lambda t: t.nn.functional.relu6(a(t) * 10)),
    ("F.logsigmoid", lambda t: t.nn.functional.logsigmoid(a(t))),
    ("F.softsign", lambda t: t.nn.functional.softsign(a(t))),
    ("F.mish", lambda t: t.nn.functional.mish(a(t))),
    ("F.pixel_shuffle", lambda t: t.nn.functional.pixel_shuffle(t.ones(1, 4, 2, 2), 2)),
    ("F.triplet_margin_loss", lambda t: t.nn.functional.triplet_margin_loss(
        a(t), a(t) + 0.1, a(t) - 1)),
    ("F.margin_ranking_loss", lambda t: t.nn.functional.margin_ranking_loss(
        t.tensor(V), -t.tensor(V), t.ones(4))),
    ("F.huber_loss", lambda t: t.nn.functional.huber_loss(a(t), t.zeros(3, 4))),
]

OPTIM = [
    ("SGD", lambda t: optimizer_run(t, lambda t, p: t.optim.SGD(p, lr=0.1))),
    ("SGD momentum nesterov", lambda t: optimizer_run(t, lambda t, p: t.optim.SGD(
        p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2))),
    ("Adam", lambda t: optimizer_run(t, lambda t, p: t.optim.Adam(p, lr=1e-2))),
    ("Adam amsgrad", lambda t: optimizer_run(t, lambda t, p: t.optim.Adam(
        p, lr=1e-2, amsgrad=True))),
    ("AdamW", lambda t: optimizer_run(t, lambda t, p: t.optim.AdamW(p, lr=1e-2,
                                                                    weight_decay=0.1))),
    ("RMSprop", lambda t: optimizer_run(t, lambda t, p: t.optim.RMSprop(p, lr=1e-2))),
    ("RMSprop centered momentum", lambda t: optimizer_run(t, lambda t, p: t.optim.RMSprop(
        p, lr=1e-2, momentum=0.9, centered=True))),
    ("Adagrad", lambda t: optimizer_run(t, lambda t, p: t.optim.Adagrad(p, lr=0.1))),
    ("param groups", lambda t: optimizer_run(t, lambda t, p: t.optim.SGD(
        [{"params": p, "lr": 0.05}], lr=0.1))),
    ("param_groups lr", lambda t: t.optim.SGD([t.zeros(1, requires_grad=True)],
                                              lr=0.3).param_groups[0]["lr"]),
    ("zero_grad set_to_none", lambda t: (lambda p, o: (p.sum().backward(), o.zero_grad(),
                                                       p.grad)[2])(
        *(lambda p: (p, t.optim.SGD([p], lr=0.1)))(t.ones(2, requires_grad=True)))),
    ("StepLR", lambda t: scheduler_lrs(t, lambda t, o: t.optim.lr_scheduler.StepLR(
        o, step_size=3, gamma=0.5))),
    ("MultiStepLR", lambda t: scheduler_lrs(t, lambda t, o: t.optim.lr_scheduler.MultiStepLR(
        o, milestones=[2, 5], gamma=0.1))),
    ("ExponentialLR", lambda t: scheduler_lrs(
        t, lambda t, o: t.optim.lr_scheduler.ExponentialLR(o, 0.9))),
    ("CosineAnnealingLR", lambda t: scheduler_lrs(
        t, lambda t, o: t.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10))),
    ("CosineAnnealingWarmRestarts", lambda t: scheduler_lrs(
        t, lambda t, o: t.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 4, T_mult=2))),
    ("LambdaLR", lambda t: scheduler_lrs(
        t, lambda t, o: t.optim.lr_scheduler.LambdaLR(o, lambda e: 0.9 ** e))),
    ("LinearLR", lambda t: scheduler_lrs(t, lambda t, o: t.optim.lr_scheduler.LinearLR(
        o, start_factor=0.1, total_iters=4))),
    ("OneCycleLR", lambda t: scheduler_lrs(t, lambda t, o: t.optim.lr_scheduler.OneCycleLR(
        o, max_lr=1.0, total_steps=12))),
    ("SequentialLR", lambda t: scheduler_lrs(t, lambda t, o: t.optim.lr_scheduler.SequentialLR(
        o, [t.optim.lr_scheduler.LinearLR(o, 0.1, total_iters=3),
            t.optim.lr_scheduler.ExponentialLR(o, 0.9)], milestones=[3]))),
    ("ReduceLROnPlateau", lambda t: (lambda o: [
        (t.optim.lr_scheduler.ReduceLROnPlateau(o, patience=1).step(1.0),) for _ in range(1)]
        and o.param_groups[0]["lr"])(t.optim.SGD([t.zeros(1, requires_grad=True)], lr=0.1))),
]

DATA = [
    ("TensorDataset len", lambda t: len(t.utils.data.TensorDataset(t.ones(5, 2), t.ones(5)))),
    ("TensorDataset item", lambda t: t.utils.data.TensorDataset(t.arange(6).reshape(3, 2),
                                                                t.arange(3))[1]),
    ("DataLoader batches", lambda t: loader_batches(t, batch_size=2)),
    ("DataLoader drop_last", lambda t: loader_batches(t, batch_size=2, drop_last=True)),
    ("DataLoader len", lambda t: len(t.utils.data.DataLoader(list(range(10)), batch_size=3))),
    ("DataLoader list of ints", lambda t: list(t.utils.data.DataLoader([1, 2, 3],
                                                                       batch_size=2))),
    ("DataLoader dict samples", lambda t: list(t.utils.data.DataLoader(
        [{"x": 1.0, "y": 2}, {"x": 3.0, "y": 4}], batch_size=2))),
    ("DataLoader shuffle covers", lambda t: sorted(int(v) for b in t.utils.data.DataLoader(
        list(range(7)), batch_size=3, shuffle=True) for v in b)),
    ("random_split sizes", lambda t: [len(s) for s in t.utils.data.random_split(
        list(range(10)), [7, 3])]),
    ("random_split fractions", lambda t: [len(s) for s in t.utils.data.random_split(
        list(range(10)), [0.5, 0.5])]),
    ("Subset", lambda t: list(t.utils.data.Subset(list(range(10)), [1, 3]))),
    ("ConcatDataset", lambda t: len(t.utils.data.ConcatDataset([[1, 2], [3]]))),
    ("Dataset subclass", lambda t: list(t.utils.data.DataLoader(type(
        "Squares", (t.utils.data.Dataset,), {"__len__": lambda s: 4,
                                             "__getitem__": lambda s, i: i * i})(),
        batch_size=4))),
    ("default_collate", lambda t: t.utils.data.default_collate([(1.0, 2), (3.0, 4)])),
]

AUTOGRAD = [
    ("backward", lambda t: grad_of(t, lambda x: (x ** 2))),
    ("backward chain", lambda t: grad_of(t, lambda x: (x.tanh() * x.exp()).mean(1))),
    ("backward gradient=", lambda t: (lambda x: (x.exp().backward(t.ones(3, 4)), x.grad)[1])(
        t.tensor(A, requires_grad=True))),
    ("retain_grad", lambda t: (lambda x: (lambda y: (y.retain_grad(), y.sum().backward(),
                                                     y.grad)[2])(x * 2))(
        t.tensor(A, requires_grad=True))),
    ("autograd.grad", lambda t: t.autograd.grad((t.tensor(A, requires_grad=True) ** 3).sum(),
                                                 [t.tensor(A, requires_grad=True)],
                                                 allow_unused=True)),
    ("autograd.grad create_graph", lambda t: (lambda x: t.autograd.grad(
        t.autograd.grad((x ** 3).sum(), x, create_graph=True)[0].sum(), x))(
        t.tensor(V, requires_grad=True))),
    ("no_grad", lambda t: (lambda x, mode: (mode.__enter__(), (x * 2).requires_grad,
                                            mode.__exit__(None, None, None))[1])(
        t.ones(2, requires_grad=True), t.no_grad())),
    ("no_grad decorator", lambda t: t.no_grad()(lambda x: x * 2)(
        t.ones(2, requires_grad=True)).requires_grad),
    ("enable_grad", lambda t: t.enable_grad()(lambda x: (x * 2).requires_grad)(
        t.ones(2, requires_grad=True))),
    ("set_grad_enabled", lambda t: (lambda m: (m.__enter__(), t.is_grad_enabled(),
                                               m.__exit__(None, None, None))[1])(
        t.set_grad_enabled(False))),
    ("inference_mode", lambda t: t.inference_mode()(lambda: t.ones(2, requires_grad=True)
                                                    * 2)().requires_grad),
    ("detach requires_grad", lambda t: t.ones(2, requires_grad=True).detach().requires_grad),
    ("is_leaf", lambda t: (t.ones(2, requires_grad=True) * 2).is_leaf),
    ("grad_fn not None", lambda t: (t.ones(2, requires_grad=True) * 2).grad_fn is not None),
    ("register_hook", lambda t: (lambda x: (x.register_hook(lambda g: g * 10),
                                            (x * 1).sum().backward(), x.grad)[2])(
        t.ones(2, requires_grad=True))),
    ("autograd.Function", lambda t: (lambda F: (lambda x: (F.apply(x).sum().backward(),
                                                           x.grad)[1])(
        t.tensor(V, requires_grad=True)))(type("Double", (t.autograd.Function,), {
            "forward": staticmethod(lambda ctx, x: x * 2),
            "backward": staticmethod(lambda ctx, g: g * 2)}))),
    ("requires_grad propagates", lambda t: (t.ones(2, requires_grad=True) + t.ones(2))
     .requires_grad),
]

SERIALIZATION = [
    ("save/load tensor", lambda t: save_load(t, t.tensor(A))),
    ("save/load state_dict", lambda t: list(save_load(
        t, t.nn.Linear(3, 2).state_dict()).keys())),
    ("save/load dict of tensors", lambda t: save_load(t, {"a": t.ones(2), "b": t.zeros(1)})),
    ("load_state_dict strict", lambda t: (lambda m: m.load_state_dict(
        {k: v * 0 for k, v in m.state_dict().items()}) and None)(t.nn.Linear(2, 2))),
]

MORE = [
    ("torch.sum dtype", lambda t: a(t).sum(dtype=t.float64)),
    ("torch.mean func", lambda t: t.mean(a(t), dim=0)),
    ("torch.max func dim", lambda t: t.max(a(t), 1)),
    ("torch.maximum", lambda t: t.maximum(a(t), t.zeros(3, 4))),
    ("torch.minimum", lambda t: t.minimum(a(t), t.zeros(3, 4))),
    ("torch.argmax func", lambda t: t.argmax(a(t), dim=1)),
    ("torch.softmax func", lambda t: t.softmax(a(t), dim=1)),
    ("torch.log_softmax func", lambda t: t.log_softmax(a(t), 1)),
    ("torch.clamp func", lambda t: t.clamp(a(t), min=-0.1, max=0.1)),
    ("torch.sort func", lambda t: t.sort(a(t), dim=0)),
    ("torch.topk func", lambda t: t.topk(a(t), 1)),
    ("torch.cumsum func", lambda t: t.cumsum(a(t), dim=0)),
    ("torch.flatten func", lambda t: t.flatten(t.tensor(IMG), start_dim=1)),
    ("torch.squeeze func", lambda t: t.squeeze(a(t)[None])),
    ("torch.unsqueeze func", lambda t: t.unsqueeze(a(t), -1)),
    ("torch.transpose func", lambda t: t.transpose(a(t), 0, 1)),
    ("torch.permute func", lambda t: t.permute(a(t), (1, 0))),
    ("torch.reshape func", lambda t: t.reshape(a(t), (-1,))),
    ("torch.chunk func", lambda t: t.chunk(a(t), 2)),
    ("torch.split func", lambda t: t.split(a(t), 2, dim=1)),
    ("torch.std_mean", lambda t: t.std_mean(a(t), dim=1)),
    ("torch.var_mean", lambda t: t.var_mean(a(t))),
    ("torch.abs func", lambda t: t.abs(a(t))),
    ("torch.exp func", lambda t: t.exp(a(t))),
    ("torch.pow func", lambda t: t.pow(a(t), 2)),
    ("torch.sqrt func", lambda t: t.sqrt(t.tensor(P))),
    ("torch.matmul func", lambda t: t.matmul(a(t), t.tensor(B))),
    ("torch.multinomial shape", lambda t: shape_dtype(t.multinomial(t.tensor(P), 2))),
    ("torch.multinomial replacement", lambda t: shape_dtype(t.multinomial(
        t.tensor([0.2, 0.8]), 5, replacement=True))),
    ("torch.bernoulli shape", lambda t: shape_dtype(t.bernoulli(t.full((3,), 0.5)))),
    ("torch.normal shape", lambda t: shape_dtype(t.normal(0.0, 1.0, size=(2, 2)))),
    ("Generator", lambda t: shape_dtype(t.randn(2, generator=t.Generator().manual_seed(1)))),
    ("torch.isin", lambda t: t.isin(t.tensor([1, 2, 3]), t.tensor([2, 5]))),
    ("torch.count_nonzero", lambda t: t.count_nonzero(a(t) > 0)),
    ("torch.argwhere", lambda t: t.argwhere(a(t) > 0)),
    ("torch.diff", lambda t: t.diff(a(t), dim=1)),
    ("torch.searchsorted", lambda t: t.searchsorted(t.tensor([1.0, 2.0, 3.0]),
                                                    t.tensor([2.5, 0.5]))),
    ("torch.bucketize", lambda t: t.bucketize(t.tensor([2.5, 0.5]), t.tensor([1.0, 2.0, 3.0]))),
    ("torch.cdist", lambda t: t.cdist(a(t), a(t) + 1)),
    ("torch.tril_indices", lambda t: t.tril_indices(3, 3)),
    ("torch.atleast_2d", lambda t: t.atleast_2d(t.tensor(V))),
    ("torch.cross", lambda t: t.cross(t.tensor([[1.0, 0, 0]]), t.tensor([[0, 1.0, 0]]), dim=1)),
    ("torch.kron", lambda t: t.kron(t.eye(2), t.ones(2, 2))),
    ("view_as", lambda t: t.tensor(V).view_as(t.ones(2, 2))),
    ("reshape_as", lambda t: t.tensor(V).reshape_as(t.ones(2, 2))),
    ("narrow", lambda t: a(t).narrow(1, 1, 2)),
    ("select", lambda t: a(t).select(1, 2)),
    ("movedim", lambda t: t.tensor(IMG).movedim(1, -1)),
    ("swapaxes", lambda t: a(t).swapaxes(0, 1)),
    ("index_add", lambda t: t.zeros(3, 4).index_add(0, t.tensor([0, 2]), t.ones(2, 4))),
    ("index_copy", lambda t: t.zeros(3, 4).index_copy(0, t.tensor([1]), t.ones(1, 4))),
    ("masked_fill_", lambda t: a(t).masked_fill_(a(t) < 0, 0.0)),
    ("scatter_ reduce add", lambda t: t.zeros(3, 4).scatter_(1, t.tensor(INDEX), t.ones(3, 2),
                                                             reduce="add")),
    ("scatter_reduce amax", lambda t: t.zeros(3, 4).scatter_reduce(
        1, t.tensor(INDEX), t.ones(3, 2) * 5, reduce="amax")),
    ("index_fill", lambda t: a(t).index_fill(1, t.tensor([0]), -1.0)),
    ("unfold", lambda t: t.arange(6.0).unfold(0, 2, 2)),
    ("square", lambda t: a(t).square()),
    ("addmm", lambda t: t.addmm(t.zeros(3, 5), a(t), t.tensor(B))),
    ("baddbmm", lambda t: t.baddbmm(t.zeros(3, 2, 2), t.tensor(BATCH),
                                    t.tensor(BATCH).transpose(1, 2))),
    ("x.mean dtype", lambda t: t.tensor([1, 2]).float().mean()),
    ("tensor requires_grad=", lambda t: t.tensor([1.0], requires_grad=True).requires_grad),
    ("grad.zero_", lambda t: (lambda x: ((x * 2).sum().backward(), x.grad.zero_())[1])(
        t.ones(2, requires_grad=True))),
    ("device object", lambda t: str(t.device("cpu"))),
    ("cuda.is_available", lambda t: isinstance(t.cuda.is_available(), bool)),
    ("backends.cudnn flag", lambda t: isinstance(t.backends.cudnn.benchmark, bool)),
    ("set_printoptions", lambda t: t.set_printoptions(precision=3) or
     t.set_printoptions(profile="default")),
    ("named_modules", lambda t: [n for n, _ in t.nn.Sequential(
        t.nn.Linear(2, 2), t.nn.Sequential(t.nn.ReLU())).named_modules()]),
    ("buffers", lambda t: len(list(t.nn.BatchNorm1d(3).buffers()))),
    ("forward hook", lambda t: (lambda m, seen: (m.register_forward_hook(
        lambda mod, inp, out: seen.append(tuple(out.shape))), m(t.ones(1, 2)), seen)[2])(
        t.nn.Linear(2, 3), [])),
    ("Embedding.from_pretrained", lambda t: t.nn.Embedding.from_pretrained(t.tensor(B))(
        t.tensor([0, 3]))),
    ("CrossEntropyLoss weight", lambda t: t.nn.CrossEntropyLoss(weight=t.tensor(
        [1.0, 2.0, 0.5, 1.0]))(a(t), t.tensor(LABELS))),
    ("Sequential append", lambda t: len(t.nn.Sequential(t.nn.ReLU()).append(t.nn.Tanh()))),
    ("eval returns self", lambda t: (lambda m: m.eval() is m)(t.nn.ReLU())),
    ("optimizer state_dict keys", lambda t: (lambda o: list(o.state_dict()))(
        t.optim.Adam([t.zeros(1, requires_grad=True)]))),
    ("optimizer add_param_group", lambda t: (lambda o: (o.add_param_group(
        {"params": [t.ones(1, requires_grad=True)], "lr": 0.5}), len(o.param_groups))[1])(
        t.optim.SGD([t.zeros(1, requires_grad=True)], lr=0.1))),
    ("WeightedRandomSampler", lambda t: len(list(t.utils.data.WeightedRandomSampler(
        [0.1, 0.9], 5)))),
    ("SubsetRandomSampler", lambda t: sorted(t.utils.data.SubsetRandomSampler([1, 3, 5]))),
    ("BatchSampler", lambda t: list(t.utils.data.BatchSampler(
        t.utils.data.SequentialSampler(range(5)), 2, drop_last=False))),
    ("F.gumbel_softmax shape", lambda t: shape_dtype(t.nn.functional.gumbel_softmax(
        a(t), tau=0.5, hard=True))),
    ("F.softmax dtype", lambda t: t.nn.functional.softmax(a(t), dim=1, dtype=t.float64)),
    ("F.cross_entropy weight", lambda t: t.nn.functional.cross_entropy(
        a(t), t.tensor(LABELS), weight=t.tensor([1.0, 2.0, 0.5, 1.0]))),
    ("F.avg_pool1d", lambda t: t.nn.functional.avg_pool1d(t.tensor(SEQ), 2)),
    ("F.max_pool1d", lambda t: t.nn.functional.max_pool1d(t.tensor(SEQ), 2)),
    ("F.adaptive_max_pool2d", lambda t: t.nn.functional.adaptive_max_pool2d(t.tensor(IMG), 2)),
    ("F.conv_transpose2d", lambda t: t.nn.functional.conv_transpose2d(
        t.tensor(IMG), t.ones(3, 2, 2, 2), stride=2)),
    ("F.grid? affine sample? no: F.hardswish", lambda t: t.nn.functional.hardswish(a(t))),
    ("F.selu", lambda t: t.nn.functional.selu(a(t))),
    ("F.celu", lambda t: t.nn.functional.celu(a(t))),
    ("F.threshold", lambda t: t.nn.functional.threshold(a(t), 0.1, 20.0)),
    ("F.poisson_nll_loss", lambda t: t.nn.functional.poisson_nll_loss(a(t), t.tensor(P))),
    ("F.gaussian_nll_loss", lambda t: t.nn.functional.gaussian_nll_loss(
        a(t), t.zeros(3, 4), t.tensor(P))),
    ("F.cosine_embedding_loss", lambda t: t.nn.functional.cosine_embedding_loss(
        a(t), a(t) + 1, t.tensor([1, -1, 1]))),
    ("F.soft_margin_loss", lambda t: t.nn.functional.soft_margin_loss(a(t), t.ones(3, 4))),
    ("F.multi_margin_loss", lambda t: t.nn.functional.multi_margin_loss(a(t), t.tensor(LABELS))),
]

GROUPS = {"creation": CREATION, "tensor": TENSOR, "nn": NN, "functional": FUNCTIONAL,
          "optim": OPTIM, "data": DATA, "autograd": AUTOGRAD, "serialization": SERIALIZATION,
          "more": MORE}
ENTRIES = [(f"{group}: {name}", fn) for group, entries in GROUPS.items()
           for name, fn in entries]
