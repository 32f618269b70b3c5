"""Module: registration, traversal, modes, device/dtype moves, state_dict, hooks, scopes,
summary; the containers."""
import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import optim


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(self.fc(x).relu())


class Net(nn.Module):
    def __init__(self, dim=4, depth=2):
        super().__init__()
        self.embed = nn.Linear(3, dim)
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, 2, bias=False)
        self.register_buffer("scale", tg.ones(dim))
        self.register_buffer("cache", tg.zeros(2), persistent=False)

    def forward(self, x):
        x = self.embed(x) * self.scale
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def _nodes(out):
    """Every node reachable from out."""
    seen, stack, nodes = set(), [out._node], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or not hasattr(node, "prim"):
            continue
        seen.add(id(node))
        nodes.append(node)
        stack.extend(node.parents)
    return nodes


# --- registration and traversal ------------------------------------------------------------------
def test_attribute_assignment_registers_parameters_buffers_and_modules():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "embed.weight", "embed.bias",
        "blocks.0.fc.weight", "blocks.0.fc.bias", "blocks.0.norm.weight", "blocks.0.norm.bias",
        "blocks.1.fc.weight", "blocks.1.fc.bias", "blocks.1.norm.weight", "blocks.1.norm.bias",
        "head.weight"]
    assert [n for n, _ in net.named_children()] == ["embed", "blocks", "head"]
    assert [n for n, _ in net.named_modules()][:5] == ["", "embed", "blocks", "blocks.0",
                                                       "blocks.0.fc"]
    assert len(list(net.modules())) == 10
    assert [n for n, _ in net.named_buffers()] == ["scale", "cache"]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in net.parameters())
    assert net.head.bias is None
    assert net.get_submodule("blocks.1.fc") is net.blocks[1].fc


def test_reassignment_and_deletion():
    net = Net()
    net.head = nn.Identity()
    assert "head.weight" not in dict(net.named_parameters())
    net.extra = nn.Parameter(tg.zeros(2))
    assert "extra" in dict(net.named_parameters())
    del net.extra
    assert "extra" not in dict(net.named_parameters())
    with pytest.raises(AttributeError, match="extra"):
        _ = net.extra
    net.scale = tg.full((4,), 2.0)  # a buffer stays a buffer
    assert dict(net.named_buffers())["scale"].tolist() == [2.0] * 4


def test_replacing_a_submodule_or_parameter_keeps_its_place():
    # As in PyTorch: a swapped-in layer (LoRA replaces Linears) runs where the old one did.
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    seq[0] = nn.Linear(2, 3)
    seq.add_module("1", nn.Tanh())
    assert [name for name, _ in seq.named_children()] == ["0", "1", "2"]
    assert isinstance(seq[1], nn.Tanh)
    assert seq(tg.ones(4, 2)).shape == (4, 1)
    lin = nn.Linear(2, 3)
    lin.weight = nn.Parameter(tg.zeros(3, 2))
    assert list(lin.state_dict()) == ["weight", "bias"]


def test_attributes_always_read_the_registered_entry():
    # Registered entries are mirrored as plain attributes for speed; every way of changing the
    # registry must keep what `module.name` returns equal to what the registry holds.
    net = Net()
    net.extra = nn.Parameter(tg.zeros(2))
    net.extra = nn.Parameter(tg.ones(2))
    assert net.extra is net._parameters["extra"] and net.extra.tolist() == [1.0, 1.0]
    net.extra = None
    assert net.extra is None and net._parameters["extra"] is None
    net.register_buffer("extra", tg.zeros(3))
    assert net.extra is net._buffers["extra"] and "extra" not in net._parameters
    net.add_module("extra", nn.Identity())
    assert net.extra is net._modules["extra"] and "extra" not in net._buffers
    net.to(tg.float64)
    assert net.scale is net._buffers["scale"] and net.scale.dtype == tg.float64
    blocks = nn.ModuleList([nn.Identity(), nn.Identity()])
    first = nn.Linear(1, 1)
    blocks.insert(0, first)
    assert [getattr(blocks, str(i)) for i in range(3)] == list(blocks) and blocks[0] is first


def test_assignment_errors_are_clear():
    lin = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="nn.Parameter"):
        lin.weight = tg.zeros(2, 2)

    class Forgot(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match="super\\(\\).__init__"):
        Forgot()
    with pytest.raises(AttributeError, match="no submodule 'nope'"):
        Net().get_submodule("blocks.nope")


def test_shared_parameters_are_listed_once_but_state_dict_keeps_every_path():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(5, 3)
            self.out = nn.Linear(3, 5, bias=False)
            self.out.weight = self.embed.weight

    tied = Tied()
    assert [n for n, _ in tied.named_parameters()] == ["embed.weight"]
    assert tied.num_parameters() == 15
    assert list(tied.state_dict()) == ["embed.weight", "out.weight"]


def test_train_eval_apply_and_requires_grad():
    net = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    assert net.eval() is net and not net[1].training
    assert net.train().training and net[1].training
    names = []
    net.apply(lambda m: names.append(type(m).__name__))
    assert names == ["Linear", "Dropout", "Sequential"]
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    assert net.num_parameters(trainable_only=True) == 0 and net.num_parameters() == 6


def test_zero_grad_drops_or_zeroes_gradients():
    net = nn.Linear(3, 2)
    net(tg.randn(4, 3)).sum().backward()
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.data.any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_to_casts_in_place_and_keeps_identity(device):
    net = Net()
    net.register_buffer("ids", tg.arange(3))
    params = list(net.parameters())
    net(tg.randn(2, 3)).sum().backward()
    assert net.to(device, tg.float64) is net
    assert [id(p) for p in net.parameters()] == [id(p) for p in params]
    for p in net.parameters():
        assert p.dtype == tg.float64 and p.device == tg.backend.normalize_device(device)
        assert p.grad.dtype == tg.float64 and p.requires_grad
    assert net.ids.dtype == tg.int64 and net.scale.dtype == tg.float64
    out = net(tg.randn(2, 3, dtype=tg.float64, device=device))
    assert out.dtype == tg.float64
    net.float()
    assert all(p.dtype == tg.float32 for p in net.parameters())


@pytest.mark.parametrize("make_optimizer", [
    lambda params: optim.AdamW(params, lr=0.05),
    lambda params: optim.Adam(params, lr=0.05),
    lambda params: optim.SGD(params, lr=0.1, momentum=0.9),
], ids=["adamw", "adam", "sgd"])
def test_a_model_moved_after_an_optimizer_step_keeps_training(make_optimizer, device):
    x = tg.randn(64, 3)
    y = x @ tg.tensor([[1.0], [-1.0], [2.0]]) + 0.5
    net = nn.Linear(3, 1)
    opt = make_optimizer(net.parameters())

    def step(where, dtype):
        opt.zero_grad()
        loss = ((net(x.to(where, dtype)) - y.to(where, dtype)) ** 2).mean()
        loss.backward()
        opt.step()
        return loss.item()

    first = step("cpu", tg.float32)  # creates the state (momentum, exp_avg ...) float32 on cpu
    net.to(device, tg.float64)
    losses = [step(device, tg.float64) for _ in range(40)]
    assert losses[-1] < 0.05 * first
    for p in net.parameters():
        assert p.dtype == tg.float64 and p.device == tg.device(device)
        state = [v for v in opt.state[p].values() if isinstance(v, tg.Tensor)]
        assert state and all(v.dtype == tg.float64 and v.device == p.device for v in state)


def test_to_bumps_versions_so_a_graph_saved_before_refuses_backward():
    net = nn.Linear(3, 2)
    x = tg.randn(4, 3, requires_grad=True)  # so that linear saves the weight for x's gradient
    out = net(x)
    net.double()
    with pytest.raises(RuntimeError, match="modified in place"):
        out.sum().backward()
    out = net(x.double())
    net.double()  # nothing changes: nothing bumps
    out.sum().backward()
    assert net.weight.grad.dtype == tg.float64


def test_parameter_shares_memory_and_version_with_its_data():
    data = tg.zeros(3)
    p = nn.Parameter(data)
    assert type(p) is nn.Parameter and p.requires_grad and p.is_leaf
    data[0] = 5.0
    assert p[0].item() == 5.0
    y = p * p  # saves p
    with tg.no_grad():
        data.add_(1.0)  # a write through the other name is seen by the graph's check
    with pytest.raises(RuntimeError, match="modified in place"):
        y.sum().backward()


# --- state dict ----------------------------------------------------------------------------------
def test_state_dict_round_trip():
    a, b = Net(), Net()
    sd = a.state_dict()
    assert list(sd)[-1] == "head.weight" and "scale" in sd and "cache" not in sd
    assert not any(t.requires_grad for t in sd.values())
    result = b.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    x = tg.randn(2, 3)
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    assert b.state_dict()["embed.weight"] is not sd["embed.weight"]  # copied, not shared


def test_load_state_dict_names_every_problem_in_one_error():
    net = Net()
    sd = dict(Net().state_dict())
    del sd["head.weight"], sd["blocks.0.fc.bias"]
    sd["decoder.weight"] = tg.zeros(2)
    sd["embed.weight"] = tg.zeros(5, 5)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(sd)
    message = str(info.value)
    for piece in ("Net", "missing keys (2)", "'head.weight'", "'blocks.0.fc.bias'",
                  "unexpected keys (1)", "'decoder.weight'", "'embed.weight'", "(5, 5)", "(4, 3)"):
        assert piece in message
    before = net.embed.bias.tolist()
    net.load_state_dict(Net().state_dict())  # nothing was copied by the failed call ...
    assert net.embed.bias.tolist() != before  # ... and the good call does copy


def test_load_state_dict_non_strict_reports_keys_but_still_rejects_shapes():
    net = Net()
    sd = {"embed.bias": tg.zeros(4), "other": tg.zeros(1)}
    result = net.load_state_dict(sd, strict=False)
    assert "head.weight" in result.missing_keys and result.unexpected_keys == ["other"]
    assert net.embed.bias.tolist() == [0.0] * 4
    with pytest.raises(RuntimeError, match="'embed.bias': checkpoint has shape \\(3,\\)"):
        net.load_state_dict({"embed.bias": tg.zeros(3)}, strict=False)


# --- hooks ---------------------------------------------------------------------------------------
def test_forward_hook_sees_inputs_and_output_and_can_be_removed():
    net = Net()
    calls = []
    handle = net.blocks[1].register_forward_hook(
        lambda module, inputs, output: calls.append((module, inputs[0].shape, output.shape)))
    net(tg.randn(5, 3))
    assert calls == [(net.blocks[1], (5, 4), (5, 4))]
    handle.remove()
    net(tg.randn(5, 3))
    assert len(calls) == 1


def test_forward_hook_can_replace_the_output():
    lin = nn.Linear(2, 2)
    with lin.register_forward_hook(lambda m, i, o: o * 0.0):
        assert lin(tg.randn(3, 2)).abs().sum().item() == 0.0
    assert lin(tg.ones(3, 2)).abs().sum().item() > 0.0


# --- scopes --------------------------------------------------------------------------------------
def test_sequential_nodes_carry_their_module_index():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    out = model(tg.randn(2, 3))
    scopes = {n.name: set() for n in _nodes(out)}
    for n in _nodes(out):
        scopes[n.name].add(n.scope)
    assert scopes["linear"] == {"0", "2"}
    assert scopes["relu"] == {"1"}
    assert out._node.scope == "2"
    assert tg.current_scope() == ""


def test_nested_model_nodes_carry_full_dotted_paths():
    net = Net()
    with tg.scope("outer"):  # a root call starts from the root, whatever scope is open
        out = net(tg.randn(2, 3))
    found = {n.scope for n in _nodes(out)}
    assert {"", "embed", "blocks.0.fc", "blocks.1.fc", "blocks.1.norm", "head"} <= found
    root_ops = {n.name for n in _nodes(out) if n.scope == ""}
    assert root_ops == {"mul"}  # embed(x) * scale
    assert net.blocks[1].fc._path == "blocks.1.fc"


def test_calling_a_submodule_directly_makes_it_the_root():
    net = Net()
    out = net.blocks[1](tg.randn(2, 4))
    assert {n.scope for n in _nodes(out)} == {"", "fc", "norm"}  # "": the relu in Block
    out = net(tg.randn(2, 3))  # the next root call restores the full paths
    assert out._node.scope == "head"


def test_an_unregistered_module_nests_under_its_caller_by_class_name():
    class Caller(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)
            self.helpers = [nn.Tanh()]  # a plain list: not registered

        def forward(self, x):
            return self.helpers[0](self.fc(x))

    out = Caller()(tg.randn(1, 2))
    assert out._node.scope == "Tanh"


def test_errors_inside_forward_name_the_module():
    net = Net()
    net.blocks[1].fc = nn.Linear(5, 4)
    with pytest.raises(ValueError) as info:
        net(tg.randn(2, 3))
    assert "Linear 'blocks.1.fc'" in str(info.value) and "(*, 5)" in str(info.value)
    assert "'blocks.1.fc'" in " ".join(getattr(info.value, "__notes__", []))


# --- containers and printing ---------------------------------------------------------------------
def test_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    seq.append(nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear) and len(seq[1:]) == 2
    assert [n for n, _ in seq[1:].named_children()] == ["1", "2"]
    with pytest.raises(IndexError, match="out of range"):
        seq[3]
    layers = nn.ModuleList([nn.Tanh()])
    layers.extend([nn.ReLU(), nn.SiLU()])
    layers.insert(0, nn.Identity())
    assert [type(m).__name__ for m in layers] == ["Identity", "Tanh", "ReLU", "SiLU"]
    heads = nn.ModuleDict({"a": nn.Linear(2, 2)})
    heads["b"] = nn.Linear(2, 1)
    assert list(heads) == ["a", "b"] and "b" in heads
    assert [n for n, _ in heads.named_parameters()][-1] == "b.bias"
    with pytest.raises(KeyError, match="keys are"):
        heads["c"]


def test_repr_nests():
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.GELU(approximate="tanh")))
    assert text == ("Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n"
                    "  (1): GELU(approximate='tanh')\n)")


def test_summary_table():
    net = Net(dim=4, depth=2)
    table = net.summary()
    lines = table.splitlines()
    assert lines[0].split() == ["module", "type", "parameters", "share"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:-3]}
    total = net.num_parameters()
    assert total == 16 + 2 * (20 + 8) + 8
    assert rows["(root)"] == ["Net", "80", "100.0%"]
    assert rows["embed"] == ["Linear", "16", "20.0%"]
    assert rows["blocks"] == ["ModuleList", "56", "70.0%"]
    assert rows["head"] == ["Linear", "8", "10.0%"]
    assert lines[-2].split() == ["total", "80"] and lines[-1].split() == ["trainable", "80"]
    assert "  blocks" in table and "    0" in table and "      fc" in table
    shallow = net.summary(max_depth=1)
    assert "fc" not in shallow and "blocks" in shallow


def test_scopes_follow_modules_added_after_the_first_call():
    model = nn.Sequential(nn.Linear(3, 3))
    model(tg.randn(1, 3))
    model.append(nn.Linear(3, 2))  # the root's cached paths must see the new child
    assert model(tg.randn(1, 3))._node.scope == "1"


@pytest.mark.parametrize("cast, dtype", [("half", "float16"), ("double", "float64"),
                                         ("float", "float32")])
def test_module_casts_like_torch(cast, dtype):
    torch = pytest.importorskip("torch")
    from tensorgrad import nn as tnn
    ours, theirs = tnn.Linear(2, 3), torch.nn.Linear(2, 3)
    assert getattr(ours, cast)() is ours
    getattr(theirs, cast)()
    assert str(ours.weight.dtype) == dtype == str(theirs.weight.dtype)[6:]
    assert isinstance(ours.weight, tnn.Parameter)
