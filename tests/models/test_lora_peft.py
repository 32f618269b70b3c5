"""LoRA adapters against Hugging Face `peft`, both directions, for every model family.

A row of FAMILIES is one family: how to build a small random Hugging Face model, our class
(with from_pretrained), the target modules and modules_to_save peft is given, and inputs. Every
tensor of the adapter is random (B too, else the adapter is a no-op and nothing could fail), and
the Hugging Face model's biases and norms are too. Skipped without torch/transformers/peft.
"""
import dataclasses

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.models import (
    GPT, BertForSequenceClassification, PeftModel, T5ForConditionalGeneration,
    ViTForImageClassification, get_peft_model,
)
from tensorgrad.models import LoraConfig as OurLoraConfig

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")
transformers.logging.set_verbosity_error()


def _gpt2():
    cfg = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=61, n_positions=16,
                                  bos_token_id=0, eos_token_id=0)
    return transformers.GPT2LMHeadModel(cfg)


def _token_ids(rng, vocab=61):
    return {"input_ids": rng.integers(0, vocab, (2, 12))}


def _bert():
    cfg = transformers.BertConfig(vocab_size=61, hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=4, intermediate_size=48,
                                  max_position_embeddings=16, num_labels=3)
    return transformers.BertForSequenceClassification(cfg)


def _t5():
    cfg = transformers.T5Config(vocab_size=61, d_model=32, d_kv=8, d_ff=48, num_layers=2,
                                num_heads=4, decoder_start_token_id=0)
    return transformers.T5ForConditionalGeneration(cfg)


def _t5_ids(rng):
    return {"input_ids": rng.integers(0, 61, (2, 9)),
            "decoder_input_ids": rng.integers(0, 61, (2, 5))}


def _vit():
    cfg = transformers.ViTConfig(image_size=8, patch_size=4, num_channels=3, hidden_size=32,
                                 num_hidden_layers=2, num_attention_heads=4,
                                 intermediate_size=48, num_labels=3)
    return transformers.ViTForImageClassification(cfg)


def _pixels(rng):
    return {"pixel_values": rng.standard_normal((2, 3, 8, 8)).astype(np.float32)}


def _logits(out):
    return out.logits


@dataclasses.dataclass
class Family:
    build_hf: object  # () -> a random transformers model
    ours: type  # our class: from_pretrained(folder), model(**inputs) -> logits or (logits, ...)
    target_modules: list  # Hugging Face module names, as a peft user writes them
    inputs: object  # numpy Generator -> {argument: array}
    modules_to_save: list = None
    fan_in_fan_out: bool = False  # True where the HF layers are Conv1D (GPT-2)
    logits: object = None  # our output -> logits; default: the output or its first element


FAMILIES = {
    "gpt2": Family(_gpt2, GPT, ["c_attn", "c_proj", "c_fc"], _token_ids,
                   modules_to_save=["ln_f"], fan_in_fan_out=True),
    "bert": Family(_bert, BertForSequenceClassification, ["query", "value"], _token_ids,
                   modules_to_save=["classifier"], logits=_logits),
    "t5": Family(_t5, T5ForConditionalGeneration, ["q", "v", "wo"], _t5_ids, logits=_logits),
    "vit": Family(_vit, ViTForImageClassification, ["q_proj", "v_proj"], _pixels,
                  modules_to_save=["classifier"], logits=_logits),
}


def _randomize_(params, scale=0.2):
    with torch.no_grad():
        for p in params:
            p.add_(torch.randn_like(p) * scale)


def _hf_base(family, folder):
    """A random HF model (every parameter perturbed: biases and norms are not 0 and 1), saved
    into folder/base."""
    torch.manual_seed(0)
    hf = family.build_hf().eval()
    _randomize_(hf.parameters(), 0.1)
    hf.save_pretrained(folder / "base", safe_serialization=True)
    return hf


def _peft_config(family, bias):
    return dict(r=4, lora_alpha=8, lora_dropout=0.1, target_modules=family.target_modules,
                modules_to_save=family.modules_to_save, bias=bias,
                fan_in_fan_out=family.fan_in_fan_out)


def _hf_logits(model, inputs):
    with torch.no_grad():
        return model(**{k: torch.from_numpy(v) for k, v in inputs.items()}).logits.numpy()


def _our_logits(model, inputs, family=None):
    with tg.no_grad():
        out = model(**{k: tg.tensor(v) for k, v in inputs.items()})
    if family is not None and family.logits is not None:
        return family.logits(out).numpy()
    return (out[0] if isinstance(out, tuple) else out).numpy()


@pytest.mark.parametrize("bias", ["none", "all", "lora_only"])
@pytest.mark.parametrize("name", FAMILIES)
def test_peft_adapter_loads_and_reproduces_peft_logits(tmp_path, name, bias):
    family = FAMILIES[name]
    hf = _hf_base(family, tmp_path)
    inputs = family.inputs(np.random.default_rng(1))
    base_logits = _hf_logits(hf, inputs)
    theirs = peft.get_peft_model(hf, peft.LoraConfig(**_peft_config(family, bias)))
    _randomize_([p for p in theirs.parameters() if p.requires_grad])  # B, copies, biases
    theirs.eval()
    expected = _hf_logits(theirs, inputs)
    assert np.abs(expected - base_logits).max() > 1e-2  # the adapter changes the outputs
    theirs.save_pretrained(tmp_path / "adapter")

    ours = PeftModel.from_pretrained(family.ours.from_pretrained(tmp_path / "base"),
                                     tmp_path / "adapter")
    assert not ours.training  # dropout off, as peft's eval model
    np.testing.assert_allclose(_our_logits(ours, inputs, family), expected, atol=1e-4, rtol=0)
    assert ours.get_nb_trainable_parameters()[1] == theirs.get_nb_trainable_parameters()[1]
    if bias == "none":  # biased adapters change the base model itself, as in peft
        with ours.disable_adapter():
            np.testing.assert_allclose(_our_logits(ours, inputs, family), base_logits, atol=1e-4)
    ours.merge_adapter()
    np.testing.assert_allclose(_our_logits(ours, inputs, family), expected, atol=1e-4, rtol=0)


@pytest.mark.parametrize("bias", ["none", "all", "lora_only"])
@pytest.mark.parametrize("name", FAMILIES)
def test_our_adapter_loads_in_peft_and_reproduces_our_logits(tmp_path, name, bias):
    family = FAMILIES[name]
    hf = _hf_base(family, tmp_path)
    inputs = family.inputs(np.random.default_rng(2))
    config = _peft_config(family, bias)
    config.pop("fan_in_fan_out")  # ours knows the layout of the HF layers it writes for
    ours = get_peft_model(family.ours.from_pretrained(tmp_path / "base"),
                          OurLoraConfig(**config))
    with tg.no_grad():
        for p in ours.parameters():
            if p.requires_grad:
                p.add_(tg.randn(*p.shape) * 0.2)
    ours.eval()
    expected = _our_logits(ours, inputs, family)
    assert np.abs(expected - _hf_logits(hf, inputs)).max() > 1e-2
    ours.save_pretrained(tmp_path / "adapter")

    theirs = peft.PeftModel.from_pretrained(hf, tmp_path / "adapter").eval()
    np.testing.assert_allclose(_hf_logits(theirs, inputs), expected, atol=1e-4, rtol=0)
    assert theirs.peft_config["default"].fan_in_fan_out == family.fan_in_fan_out
    trainable, total = ours.get_nb_trainable_parameters()
    theirs_trainable = peft.get_peft_model(family.build_hf(), peft.LoraConfig(
        **_peft_config(family, bias))).get_nb_trainable_parameters()
    assert (trainable, total) == theirs_trainable  # the same layers adapted, the same counts


def test_several_peft_adapters_load_by_name_and_switch_like_peft(tmp_path):
    family = FAMILIES["gpt2"]
    hf = _hf_base(family, tmp_path)
    inputs = family.inputs(np.random.default_rng(3))
    theirs = peft.get_peft_model(hf, peft.LoraConfig(r=2, target_modules=["c_attn"],
                                                     fan_in_fan_out=True))
    theirs.add_adapter("other", peft.LoraConfig(r=8, lora_alpha=4, target_modules=["c_fc"],
                                                fan_in_fan_out=True))
    for name in ("default", "other"):
        theirs.set_adapter(name)
        _randomize_([p for p in theirs.parameters() if p.requires_grad])
    theirs.eval()
    expected = {}
    for name in ("default", "other"):
        theirs.set_adapter(name)
        expected[name] = _hf_logits(theirs, inputs)
    theirs.save_pretrained(tmp_path / "adapters")  # default at the top, other/ below it

    ours = PeftModel.from_pretrained(GPT.from_pretrained(tmp_path / "base"),
                                     tmp_path / "adapters")
    ours.load_adapter(tmp_path / "adapters" / "other", "other")
    assert ours.active_adapter == "default"
    np.testing.assert_allclose(_our_logits(ours, inputs, family), expected["default"], atol=1e-4)
    ours.set_adapter("other")
    np.testing.assert_allclose(_our_logits(ours, inputs, family), expected["other"], atol=1e-4)


def test_peft_on_a_torch_module_reads_our_adapter_on_its_tensorgrad_twin(tmp_path):
    """A user's own module: no Hugging Face names, so the adapter is named by its own paths."""
    from tensorgrad import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 8))
            self.head = nn.Linear(8, 3)

        def forward(self, x):
            return self.head(self.body(x))

    net = Net()
    twin = torch.nn.Module()
    twin.body = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 8))
    twin.head = torch.nn.Linear(8, 3)
    twin.forward = lambda x: twin.head(twin.body(x))
    with torch.no_grad():
        for name, p in twin.named_parameters():
            p.copy_(torch.from_numpy(net.state_dict()[name].numpy()))
    ours = get_peft_model(net, OurLoraConfig(r=2, target_modules=r"body\.[02]", bias="lora_only",
                                             modules_to_save=["head"]))
    with tg.no_grad():
        for p in ours.parameters():
            if p.requires_grad:
                p.add_(tg.randn(*p.shape) * 0.3)
    x = np.random.default_rng(4).standard_normal((5, 6)).astype(np.float32)
    expected = ours(tg.tensor(x)).detach().numpy()
    ours.save_pretrained(tmp_path)

    theirs = peft.PeftModel.from_pretrained(twin, tmp_path)
    with torch.no_grad():
        got = theirs(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, expected, atol=1e-5)
