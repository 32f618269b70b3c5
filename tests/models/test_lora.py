"""get_peft_model / PeftModel on GPT and on a user's own module: targets, freezing, counts,
merging, named adapters, bias and modules_to_save, training, checkpoints and adapter folders.
(Against peft itself: test_lora_peft.py.)"""
import json
import os

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.models import GPT, GPTConfig, LoraConfig, PeftModel, get_peft_model


def _gpt(**overrides):
    tg.manual_seed(0)
    return GPT(GPTConfig.tiny(**overrides)).eval()


def _ids(seed=0, shape=(2, 10)):
    return tg.tensor(np.random.default_rng(seed).integers(0, 64, shape))


def _logits(model, ids):
    with tg.no_grad():
        return model(ids)[0].numpy()


def _randomize_trainable(model, scale=0.3):
    with tg.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(tg.randn(*p.shape) * scale)


def _lora_paths(model):
    return [path for path, m in model.named_modules() if isinstance(m, nn.LoraLinear)]


class Net(nn.Module):
    """A user's own model."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16))
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.norm(self.encoder(x)))


def test_a_wrapped_model_starts_as_the_base_model_with_only_the_adapter_trainable():
    model = _gpt()
    ids = _ids()
    before = _logits(model, ids)
    peft_model = get_peft_model(model, LoraConfig(r=4, target_modules=["c_attn"]))
    assert peft_model.base_model is model
    assert np.array_equal(_logits(peft_model, ids), before)
    trainable = [n for n, p in peft_model.named_parameters() if p.requires_grad]
    assert trainable and all(".lora_A." in n or ".lora_B." in n for n in trainable)
    # r (in + out) per adapted layer: qkv is 16 -> 48, in both blocks
    assert peft_model.get_nb_trainable_parameters() == (2 * 4 * (16 + 48),
                                                        model.num_parameters())


def test_print_trainable_parameters_prints_peft_line(capsys):
    peft_model = get_peft_model(_gpt(), LoraConfig(r=4, target_modules=["c_attn"]))
    peft_model.print_trainable_parameters()
    trainable, total = peft_model.get_nb_trainable_parameters()
    assert capsys.readouterr().out == (f"trainable params: {trainable:,d} || all params: "
                                       f"{total:,d} || trainable%: "
                                       f"{100 * trainable / total:.4f}\n")


@pytest.mark.parametrize("targets, expected", [
    (["c_attn"], ["self_attn.qkv_proj"]),  # Hugging Face's name
    (["qkv_proj"], ["self_attn.qkv_proj"]),  # ours
    (["attn.c_proj"], ["self_attn.out_proj"]),  # a longer suffix: not mlp.c_proj
    (["c_proj"], ["self_attn.out_proj", "ffn.down_proj"]),
    (r"blocks\.\d+\.ffn\.(up|down)_proj", ["ffn.up_proj", "ffn.down_proj"]),  # a regex
    ("all-linear", ["self_attn.qkv_proj", "self_attn.out_proj", "ffn.up_proj", "ffn.down_proj"]),
])
def test_targets_by_our_names_hugging_face_names_or_a_regex(targets, expected):
    peft_model = get_peft_model(_gpt(), LoraConfig(r=2, target_modules=targets))
    assert _lora_paths(peft_model.base_model) == [f"blocks.{i}.{p}" for i in range(2)
                                                  for p in expected]


def test_user_module_with_name_list_regex_and_exclusions():
    x = tg.randn(4, 6)
    listed = get_peft_model(Net(), LoraConfig(r=2, target_modules=["0", "head"]))
    assert _lora_paths(listed.base_model) == ["encoder.0", "head"]
    regex = get_peft_model(Net(), LoraConfig(r=2, target_modules=r"encoder\.[02]|head"))
    assert _lora_paths(regex.base_model) == ["encoder.0", "encoder.2", "head"]
    excluded = get_peft_model(Net(), LoraConfig(r=2, target_modules="all-linear",
                                                exclude_modules=["head"]))
    assert _lora_paths(excluded.base_model) == ["encoder.0", "encoder.2"]
    assert excluded(x).shape == (4, 3)  # the Sequential still runs its layers in order


def test_bad_targets_and_configs_are_clear_errors():
    with pytest.raises(ValueError, match="matches no Linear layer"):
        get_peft_model(_gpt(), LoraConfig(target_modules=["q_proj"]))
    with pytest.raises(TypeError, match="is a LayerNorm; LoRA adapts nn.Linear layers only"):
        get_peft_model(_gpt(), LoraConfig(target_modules=["ln_1"]))
    with pytest.raises(ValueError, match="bias must be"):
        LoraConfig(target_modules=["c_attn"], bias="some")
    with pytest.raises(ValueError, match="target_modules is required"):
        LoraConfig()
    with pytest.raises(ValueError, match="use_dora=True"):
        LoraConfig.from_peft_dict({"peft_type": "LORA", "use_dora": True})
    peft_model = get_peft_model(_gpt(), LoraConfig(target_modules=["c_attn"], bias="all"))
    with pytest.raises(ValueError, match="exists already"):
        peft_model.add_adapter("default", LoraConfig(target_modules=["c_fc"]))
    with pytest.raises(ValueError, match="only one adapter may train biases"):
        peft_model.add_adapter("b", LoraConfig(target_modules=["c_fc"], bias="lora_only"))
    with pytest.raises(ValueError, match="no adapter named 'nope'"):
        peft_model.set_adapter("nope")


def test_merge_unmerge_and_merge_and_unload():
    model = _gpt()
    base = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    ids = _ids()
    peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=16, target_modules="all-linear",
                                                  init_lora_weights=False))
    unmerged = _logits(peft_model, ids)
    assert np.abs(unmerged - _logits(_gpt(), ids)).max() > 1e-2
    peft_model.merge_adapter()
    np.testing.assert_allclose(_logits(peft_model, ids), unmerged, atol=1e-6, rtol=0)
    peft_model.unmerge_adapter()
    for key, value in model.state_dict().items():
        if key in base:
            np.testing.assert_allclose(value.numpy(), base[key], atol=1e-6, rtol=0)
    plain = peft_model.merge_and_unload()
    assert plain is model and not _lora_paths(plain)
    assert list(plain.state_dict()) == list(base)  # the base model's keys again
    np.testing.assert_allclose(_logits(plain, ids), unmerged, atol=1e-5, rtol=0)


def test_named_adapters_set_adapter_and_disable_adapter():
    ids = _ids()
    base = _logits(_gpt(), ids)
    peft_model = get_peft_model(_gpt(), LoraConfig(r=2, target_modules=["c_attn"]))
    peft_model.add_adapter("mlp", LoraConfig(r=4, target_modules=["c_fc"]))
    # A later adapter is inactive and frozen until chosen.
    assert peft_model.active_adapter == "default"
    assert not any(p.requires_grad for n, p in peft_model.named_parameters() if ".mlp." in n)
    _randomize_trainable(peft_model)
    first = _logits(peft_model, ids)
    peft_model.set_adapter("mlp")
    assert all(p.requires_grad == (".mlp." in n) for n, p in peft_model.named_parameters()
               if "lora_" in n)
    _randomize_trainable(peft_model)
    second = _logits(peft_model, ids)
    assert np.abs(first - second).max() > 1e-2 and np.abs(second - base).max() > 1e-2
    with peft_model.disable_adapter():
        np.testing.assert_allclose(_logits(peft_model, ids), base, atol=1e-6)
    np.testing.assert_allclose(_logits(peft_model, ids), second, atol=1e-6)
    with pytest.raises(KeyError), peft_model.disable_adapter():
        raise KeyError("the adapters come back after an exception")
    np.testing.assert_allclose(_logits(peft_model, ids), second, atol=1e-6)
    peft_model.set_adapter("default")
    np.testing.assert_allclose(_logits(peft_model, ids), first, atol=1e-6)
    peft_model.merge_adapter()
    with pytest.warns(UserWarning, match="unmerging"):
        peft_model.set_adapter("mlp")
    np.testing.assert_allclose(_logits(peft_model, ids), second, atol=1e-5)
    peft_model.delete_adapter("mlp")
    assert list(peft_model.peft_config) == ["default"] and peft_model.active_adapter == "default"
    np.testing.assert_allclose(_logits(peft_model, ids), first, atol=1e-6)


@pytest.mark.parametrize("bias, trained", [
    ("none", []),
    ("lora_only", ["blocks.0.self_attn.qkv_proj.bias", "blocks.1.self_attn.qkv_proj.bias"]),
    ("all", [f"blocks.{i}.{m}.bias" for i in range(2) for m in
             ("attn_norm", "self_attn.qkv_proj", "self_attn.out_proj", "ffn_norm", "ffn.up_proj",
              "ffn.down_proj")] + ["ln_f.bias"]),
])
def test_bias_modes_train_and_save_the_right_biases(bias, trained):
    peft_model = get_peft_model(_gpt(), LoraConfig(r=2, target_modules=["c_attn"], bias=bias))
    biases = [n for n, p in peft_model.base_model.named_parameters()
              if p.requires_grad and n.endswith("bias")]
    assert sorted(biases) == sorted(trained)
    saved = [k for k in peft_model.adapter_state_dict() if k.endswith("bias")]
    assert len(saved) == len(trained)
    if bias == "lora_only":  # peft's key for the bias of a wrapped layer
        assert saved[0] == "base_model.model.transformer.h.0.attn.c_attn.base_layer.bias"


def test_modules_to_save_trains_a_copy_the_tied_head_follows():
    ids = _ids()
    base = _logits(_gpt(), ids)
    peft_model = get_peft_model(_gpt(), LoraConfig(r=2, target_modules=["c_attn"],
                                                   modules_to_save=["wte", "ln_f"]))
    wrapper = peft_model.base_model.wte
    assert isinstance(wrapper, nn.ModulesToSaveWrapper)
    assert not wrapper.original_module.weight.requires_grad
    assert wrapper.modules_to_save["default"].weight.requires_grad
    with tg.no_grad():
        wrapper.modules_to_save["default"].weight.mul_(2.0)
    changed = _logits(peft_model, ids)
    assert np.abs(changed - base).max() > 1e-2  # the tied head reads the copy's weight
    with peft_model.disable_adapter():
        np.testing.assert_allclose(_logits(peft_model, ids), base, atol=1e-6)
    keys = list(peft_model.adapter_state_dict())
    assert "base_model.model.transformer.wte.weight" in keys
    assert "base_model.model.transformer.ln_f.bias" in keys
    assert peft_model._file_config("default")["modules_to_save"] == ["wte", "ln_f"]
    plain = peft_model.merge_and_unload()
    assert isinstance(plain.wte, nn.Embedding)
    np.testing.assert_allclose(_logits(plain, ids), changed, atol=1e-6)


def test_training_moves_only_the_adapter_and_its_checkpoint_holds_only_the_adapter(tmp_path):
    model = _gpt()
    frozen = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    peft_model = get_peft_model(model, LoraConfig(r=4, target_modules=["c_attn", "c_fc"]))
    trainable = [p for p in peft_model.parameters() if p.requires_grad]
    optimizer = nn.optim.AdamW(trainable, lr=1e-2)
    ids = _ids(1, (4, 16))
    losses = []
    peft_model.train()
    for _ in range(10):
        _, loss = peft_model(ids[:, :-1], targets=ids[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    for key, value in model.state_dict().items():
        if key in frozen:
            assert np.array_equal(value.numpy(), frozen[key]), key
    path = tmp_path / "lora.safetensors"
    nn.save({"adapter": peft_model.adapter_state_dict(), "optim": optimizer.state_dict()}, path)
    saved = nn.load(path)
    assert len(saved["adapter"]) == 8 and all("lora_" in k for k in saved["adapter"])
    assert len(saved["optim"]["state"]) == len(trainable)

    fresh = get_peft_model(_gpt(), LoraConfig(r=4, target_modules=["c_attn", "c_fc"]))
    fresh.load_adapter_state_dict(saved["adapter"])
    peft_model.eval()
    np.testing.assert_allclose(_logits(fresh, ids), _logits(peft_model, ids), atol=1e-6)


def test_adapter_folders_round_trip_with_several_adapters(tmp_path):
    x = tg.randn(5, 6)
    tg.manual_seed(3)
    net = Net()
    peft_model = get_peft_model(net, LoraConfig(r=2, lora_alpha=4, target_modules=r"encoder\.[02]",
                                                modules_to_save=["norm"], bias="lora_only"))
    peft_model.add_adapter("head", LoraConfig(r=3, target_modules=["head"], use_rslora=True))
    for name in ("default", "head"):
        peft_model.set_adapter(name)
        _randomize_trainable(peft_model)
    expected = {}
    for name in ("default", "head"):
        peft_model.set_adapter(name)
        expected[name] = peft_model(x).detach().numpy()
    peft_model.save_pretrained(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["adapter_config.json", "adapter_model.safetensors",
                                            "head"]
    with open(tmp_path / "adapter_config.json") as f:
        config = json.load(f)
    assert config["peft_type"] == "LORA" and config["target_modules"] == ["0", "2"]
    assert config["modules_to_save"] == ["norm"] and config["fan_in_fan_out"] is False

    tg.manual_seed(3)
    loaded = PeftModel.from_pretrained(Net(), tmp_path)
    assert not loaded.training and loaded.get_nb_trainable_parameters()[0] == 0
    np.testing.assert_allclose(loaded(x).detach().numpy(), expected["default"], atol=1e-6)
    loaded.load_adapter(tmp_path / "head", "head", is_trainable=True)
    loaded.set_adapter("head")
    assert loaded.get_nb_trainable_parameters()[0] == 3 * (16 + 3)
    np.testing.assert_allclose(loaded(x).detach().numpy(), expected["head"], atol=1e-6)
    with pytest.raises(ValueError, match="matches no Linear layer of GPT"):
        PeftModel.from_pretrained(_gpt(), tmp_path / "head")
    wrong = {k: tg.zeros(1, 1) for k in loaded.adapter_state_dict("head")}
    with pytest.raises(ValueError, match=r"does not fit Net: missing \[\], unexpected \[\], "
                                         r"shapes \['base_model.model.head.lora_A.weight"):
        loaded.load_adapter_state_dict(wrong, "head")
    with pytest.raises(ValueError, match="missing .'base_model.model.head.lora_A.weight'"):
        loaded.load_adapter_state_dict({}, "head")
    with pytest.raises(FileNotFoundError, match="nothing is downloaded"):
        PeftModel.from_pretrained(Net(), tmp_path / "missing")


def test_a_failed_adapter_save_leaves_every_adapter_folder_as_it_was(tmp_path, monkeypatch):
    peft_model = get_peft_model(Net(), LoraConfig(r=2, target_modules=["head"]))
    peft_model.add_adapter("other", LoraConfig(r=3, target_modules=["encoder.0"]))
    peft_model.save_pretrained(tmp_path)
    before = {str(p.relative_to(tmp_path)): p.read_bytes() for p in tmp_path.rglob("*")
              if p.is_file()}
    for name in ("default", "other"):
        peft_model.set_adapter(name)
        _randomize_trainable(peft_model)
    numpy, calls = tg.Tensor.numpy, []

    def failing(self, *args, **kwargs):  # the first tensor of the second adapter fails
        calls.append(self)
        if len(calls) == len(peft_model.adapter_state_dict("default")) + 1:
            raise RuntimeError("cannot copy the tensor to the host")
        return numpy(self, *args, **kwargs)
    monkeypatch.setattr(tg.Tensor, "numpy", failing)
    with pytest.raises(RuntimeError, match="cannot copy"):
        peft_model.save_pretrained(tmp_path)
    after = {str(p.relative_to(tmp_path)): p.read_bytes() for p in tmp_path.rglob("*")
             if p.is_file()}
    assert after == before  # the default adapter was not written either; no temporary files
    assert sorted(after) == ["adapter_config.json", "adapter_model.safetensors",
                             "other/adapter_config.json", "other/adapter_model.safetensors"]


def test_a_wrapped_gpt_generates_with_its_adapter():
    peft_model = get_peft_model(_gpt(), LoraConfig(r=2, target_modules=["c_attn"],
                                                   init_lora_weights=False))
    prompt = _ids(2, (1, 4))
    out = peft_model.generate(prompt, 6, temperature=0)  # the base model's generate, greedy
    assert out.shape == (1, 10)
    with tg.no_grad():
        logits = peft_model(out[:, :-1])[0]
    assert out[0, 4].item() == int(logits[0, 3].numpy().argmax())
