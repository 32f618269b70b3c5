"""The checklist's nn modules, functional forms, optimizers, schedules, data loading, autograd
and serialization, written the way user code writes them (tests/test_torch_checklist.py)."""
from torch_checklist import (  # noqa: F401
    A, B, BATCH, IDS, IMG, INDEX, LABELS, P, SEQ, V, Module, a, grad_of, loader_batches,
    optimizer_run, save_load, scheduler_lrs, shape_dtype,
)

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
