"""GPT: parameter counts, initialisation, Hugging Face checkpoints both ways (logits, loss,
gradients, padding), training, and the float32 contract."""
import json
import math
import time
from collections import Counter

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.models import GPT, GPTConfig
from tensorgrad.datasets.text import random_windows
from tensorgrad.models.tokenizer import CharTokenizer


# --- sizes and initialisation ---------------------------------------------------------------------
def test_gpt2_parameter_count_and_summary():
    # CPU time, not wall time, so that other work on the machine cannot fail this: building
    # and initialising 124M parameters takes about 5 s of CPU; this bound only catches a
    # construction that has become pathologically slow.
    start = time.process_time()
    model = GPT(GPTConfig.gpt2())
    built = time.process_time() - start
    assert built < 60, f"building GPT-2 small took {built:.1f} s of CPU time"
    assert model.num_parameters() == 124_439_808
    summary = model.summary()
    for label, count in [("token embeddings", "38,597,376"), ("position embeddings", "786,432"),
                         ("12 blocks", "85,054,464"), ("final LayerNorm", "1,536"),
                         ("total", "124,439,808")]:
        line = next(row for row in summary.splitlines() if row.startswith(label))
        assert line.split()[-1] == count, line
    head = next(row for row in summary.splitlines() if row.startswith("LM head"))
    assert "tied" in head and head.split()[-1] == "0"
    assert "lm_head.weight" not in model.state_dict()  # tied: the head is wte itself


def test_presets():
    sizes = {"gpt2": (12, 12, 768), "gpt2-medium": (24, 16, 1024),
             "gpt2-large": (36, 20, 1280), "gpt2-xl": (48, 25, 1600)}
    for name, (n_layer, n_head, n_embd) in sizes.items():
        c = GPTConfig.preset(name)
        assert (c.n_layer, c.n_head, c.n_embd, c.d_ff) == (n_layer, n_head, n_embd, 4 * n_embd)
        assert (c.vocab_size, c.block_size) == (50257, 1024)
    assert GPTConfig.gpt2_medium() == GPTConfig.preset("gpt2-medium")
    mini = GPTConfig.mini()
    assert (mini.vocab_size, mini.block_size, mini.n_embd, mini.n_layer, mini.n_head,
            mini.d_ff) == (256, 128, 128, 4, 4, 512)
    assert GPTConfig.mini(vocab_size=100).vocab_size == 100
    with pytest.raises(ValueError, match="unknown preset 'gpt3'"):
        GPTConfig.preset("gpt3")
    with pytest.raises(ValueError, match="n_embd .* divisible by n_head"):
        GPTConfig(n_embd=100, n_head=3)


def test_gpt2_initialisation():
    model = GPT(GPTConfig.mini(n_layer=8))
    params = {name: p.detach().numpy() for name, p in model.named_parameters()}
    assert np.std(params["wte.weight"]) == pytest.approx(0.02, rel=0.05)
    assert np.std(params["wpe.weight"]) == pytest.approx(0.02, rel=0.05)
    assert np.std(params["blocks.0.ffn.up_proj.weight"]) == pytest.approx(0.02, rel=0.05)
    residual = 0.02 / np.sqrt(2 * 8)
    for name in ("blocks.3.self_attn.out_proj.weight", "blocks.3.ffn.down_proj.weight"):
        assert np.std(params[name]) == pytest.approx(residual, rel=0.05)
    for name, p in params.items():
        if name.endswith("bias"):
            assert not p.any(), name
    assert (params["ln_f.weight"] == 1).all()


# --- Hugging Face checkpoints --------------------------------------------------------------------
@pytest.fixture(scope="module")
def hf_checkpoint(tmp_path_factory):
    """A small random GPT2LMHeadModel saved as safetensors. Every parameter is perturbed, so
    that LayerNorm weights and biases are not 1 and 0 and a wrong mapping shows."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=97, n_positions=32,
                                  bos_token_id=0, eos_token_id=0)
    hf = transformers.GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    path = tmp_path_factory.mktemp("gpt2")
    hf.save_pretrained(path, safe_serialization=True)
    return path, hf


def _ids(batch, length, vocab=97, seed=1):
    return np.random.default_rng(seed).integers(0, vocab, (batch, length))


def _hf_logits_and_loss(torch, hf, ids, mask=None):
    with torch.no_grad():
        out = hf(torch.from_numpy(ids), labels=torch.from_numpy(ids),
                 attention_mask=None if mask is None else torch.from_numpy(mask))
    return out.logits.numpy(), out.loss.item()


def _targets(ids):
    """Next-token targets aligned with the inputs; the last position has none (-100)."""
    return tg.tensor(np.concatenate([ids[:, 1:], np.full((ids.shape[0], 1), -100)], axis=1))


def test_from_pretrained_matches_transformers(hf_checkpoint):
    torch = pytest.importorskip("torch")
    path, hf = hf_checkpoint
    model = GPT.from_pretrained(path)
    assert not model.training
    assert (model.config.n_layer, model.config.n_embd, model.config.vocab_size) == (2, 64, 97)
    ids = _ids(3, 12)
    expected_logits, expected_loss = _hf_logits_and_loss(torch, hf, ids)
    with tg.no_grad():
        logits, loss = model(tg.tensor(ids), targets=_targets(ids))
    np.testing.assert_allclose(logits.numpy(), expected_logits, atol=1e-4, rtol=1e-4)
    assert loss.item() == pytest.approx(expected_loss, abs=1e-4)


@pytest.mark.parametrize("side", ["left", "right"])
def test_padding_mask_matches_transformers(hf_checkpoint, side):
    """Rows padded on one side, with Hugging Face's attention_mask: the real positions match."""
    torch = pytest.importorskip("torch")
    path, hf = hf_checkpoint
    model = GPT.from_pretrained(path)
    ids = _ids(3, 10, seed=2)
    mask = np.ones_like(ids)
    pad = slice(0, 4) if side == "left" else slice(6, 10)
    mask[0, pad] = 0
    mask[2, pad.start:pad.start + 2] = 0 if side == "left" else mask[2, pad.start:pad.start + 2]
    expected, _ = _hf_logits_and_loss(torch, hf, ids, mask)
    with tg.no_grad():
        logits, _ = model(tg.tensor(ids), attention_mask=tg.tensor(mask))
    real = mask.astype(bool)
    assert np.isfinite(logits.numpy()).all()  # fully masked padding rows do not produce NaN
    np.testing.assert_allclose(logits.numpy()[real], expected[real], atol=1e-4, rtol=1e-4)


def test_gradients_match_transformers(hf_checkpoint):
    """The loss's gradients, through the tied embedding and a transposed Conv1D weight."""
    torch = pytest.importorskip("torch")
    path, hf = hf_checkpoint
    model = GPT.from_pretrained(path)
    ids = _ids(2, 8, seed=3)
    hf.zero_grad()
    hf(torch.from_numpy(ids), labels=torch.from_numpy(ids)).loss.backward()
    _, loss = model(tg.tensor(ids), targets=_targets(ids))
    loss.backward()
    theirs = dict(hf.named_parameters())
    pairs = [("wte.weight", "transformer.wte.weight", False),
             ("blocks.1.self_attn.qkv_proj.weight", "transformer.h.1.attn.c_attn.weight", True),
             ("blocks.0.ffn_norm.weight", "transformer.h.0.ln_2.weight", False)]
    for ours, hf_name, transposed in pairs:
        grad = theirs[hf_name].grad.numpy()
        grad = grad.T if transposed else grad
        np.testing.assert_allclose(dict(model.named_parameters())[ours].grad.numpy(), grad,
                                   atol=1e-5, rtol=1e-4, err_msg=ours)


def test_save_pretrained_loads_in_transformers(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    model = GPT(GPTConfig.tiny()).eval()
    model.save_pretrained(tmp_path)
    hf = transformers.GPT2LMHeadModel.from_pretrained(tmp_path).eval()
    ids = _ids(2, 9, vocab=64, seed=4)
    with torch.no_grad():
        expected = hf(torch.from_numpy(ids)).logits.numpy()
    with tg.no_grad():
        logits, _ = model(tg.tensor(ids))
    np.testing.assert_allclose(logits.numpy(), expected, atol=1e-5, rtol=1e-4)
    again = GPT.from_pretrained(tmp_path)  # and back: every tensor identical
    for (name, a), b in zip(model.state_dict().items(), again.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


def test_from_pretrained_rejects_what_it_cannot_load(tmp_path):
    GPT(GPTConfig.tiny()).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "activation_function": "relu"}))
    with pytest.raises(ValueError, match="unsupported GPT-2 variant.*activation_function='relu'"):
        GPT.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({**config, "n_layer": 1}))
    with pytest.raises(ValueError, match="tensors a GPT-2 of 1 layers does not"):
        GPT.from_pretrained(tmp_path)


# --- forward errors -----------------------------------------------------------------------------
def test_forward_errors():
    model = GPT(GPTConfig.tiny())
    with pytest.raises(ValueError, match="exceed block_size=32"):
        model(tg.zeros(1, 33, dtype=tg.int64))
    with pytest.raises(ValueError, match="integer ids"):
        model(tg.zeros(1, 4))
    with pytest.raises(ValueError, match=r"attention_mask must be .*\(1, 4\)"):
        model(tg.zeros(1, 4, dtype=tg.int64), attention_mask=tg.ones(1, 5, dtype=tg.int64))
    with pytest.raises(ValueError, match=r"position_ids must be \(T,\) or \(B, T\)"):
        model(tg.zeros(2, 4, dtype=tg.int64), position_ids=tg.arange(5))
    with pytest.raises(IndexError, match="indices must lie in"):  # past the learned positions
        model(tg.zeros(1, 4, dtype=tg.int64), position_ids=tg.arange(30, 34))


# --- training -------------------------------------------------------------------------------------
def _bigram_entropy(ids):
    """The loss of the best model that sees only the previous token: the entropy of the next
    token given the current one, in nats."""
    pairs, firsts = Counter(zip(ids, ids[1:])), Counter(ids[:-1])
    return -sum(n / (len(ids) - 1) * math.log(n / firsts[a]) for (a, _), n in pairs.items())


def test_short_training_run_uses_the_context():
    """50 AdamW steps on repetitive code take the loss from log(vocab) to well below what any
    model that ignores the context can reach (the bigram entropy, 0.84 nats here): the loss
    ends near 0.46. With a zero lr it stays at 2.75; with the attention output zeroed (each
    position sees only its own token) it stalls at the bigram entropy, 0.86."""
    text = "def add(a, b):\n    return a + b\n\n" * 40
    tok = CharTokenizer.from_text(text)
    ids = tok.encode(text)
    data = tg.tensor(ids)
    model = GPT(GPTConfig.tiny(vocab_size=tok.vocab_size, n_embd=32))
    opt = nn.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    losses = []
    for _ in range(50):
        x, y = random_windows(data, batch_size=8, block_size=32)
        _, loss = model(x, targets=y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[0] == pytest.approx(math.log(tok.vocab_size), abs=0.2)  # a uniform guess
    context_free = _bigram_entropy(ids)
    assert np.mean(losses[-5:]) < 0.7 * context_free, (losses[-5:], context_free)


def test_float32_through_one_adamw_step(device):
    model = GPT(GPTConfig.mini(), device=device)
    opt = nn.optim.AdamW(model.parameters(), lr=1e-3)
    x = tg.randint(0, 256, (2, 16), device=device)
    logits, loss = model(x, targets=x)
    assert logits.dtype == tg.float32 and loss.dtype == tg.float32
    loss.backward()
    opt.step()
    for name, p in model.named_parameters():
        assert p.dtype == tg.float32 and p.grad is not None and p.grad.dtype == tg.float32, name
        state = opt.state[p]
        assert state["exp_avg"].dtype == tg.float32 == state["exp_avg_sq"].dtype, name


def test_gradient_checkpointing_gives_the_same_loss_and_gradients():
    """Blocks run again at backward, with dropout's masks replayed: every gradient is the one
    the plain step gives; eval mode is unaffected."""
    config = GPTConfig(vocab_size=40, block_size=12, n_layer=3, n_head=2, n_embd=16,
                       dropout=0.2, attn_dropout=0.2)
    model = GPT(config)
    ids = tg.randint(0, 40, (2, 12))
    results = []
    for enable in (False, True):
        if enable:
            model.gradient_checkpointing_enable({"use_reentrant": False})
        assert model.is_gradient_checkpointing == enable
        model.zero_grad()
        tg.manual_seed(3)
        _, loss = model(ids, targets=ids)
        loss.backward()
        results.append([loss.item()] + [p.grad.numpy().copy() for p in model.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    model.eval()
    checkpointed = model(ids)[0].detach().numpy()  # eval mode: the plain forward
    model.gradient_checkpointing_disable()
    assert not model.config.gradient_checkpointing
    np.testing.assert_array_equal(checkpointed, model(ids)[0].detach().numpy())
    with pytest.raises(ValueError, match="unknown options"):
        model.gradient_checkpointing_enable({"preserve": True})
