"""A minimal GPT written the way nanoGPT's model.py writes it, against whichever framework is
passed in as `torch`: tensorgrad must run it unchanged (construct, forward with a loss,
backward, its own configure_optimizers and AdamW steps, generate with top_k) and give PyTorch's
numbers for the same weights.

The model code below is written for this test in nanoGPT's idiom (the same module layout,
names and PyTorch calls), not copied from it: what matters is that every call it makes means in
tensorgrad what it means in PyTorch.
"""
import inspect
import math
from dataclasses import dataclass

import numpy as np
import pytest

import tensorgrad

real_torch = pytest.importorskip("torch")


@dataclass
class GPTConfig:
    block_size: int = 16
    vocab_size: int = 50
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 16
    dropout: float = 0.0
    bias: bool = True


def build(torch, config):
    """The model classes, defined against the framework module `torch`."""
    nn = torch.nn
    F = torch.nn.functional

    class LayerNorm(nn.Module):
        """LayerNorm whose bias can be switched off."""

        def __init__(self, ndim, bias):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(ndim))
            self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

        def forward(self, input):
            return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)

    class CausalSelfAttention(nn.Module):
        def __init__(self, config):
            super().__init__()
            assert config.n_embd % config.n_head == 0
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
            self.attn_dropout = nn.Dropout(config.dropout)
            self.resid_dropout = nn.Dropout(config.dropout)
            self.n_head = config.n_head
            self.n_embd = config.n_embd
            self.dropout = config.dropout
            self.flash = hasattr(torch.nn.functional, "scaled_dot_product_attention")
            if not self.flash:
                causal = torch.tril(torch.ones(config.block_size, config.block_size))
                self.register_buffer("bias", causal.view(1, 1, config.block_size,
                                                         config.block_size))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            if self.flash:
                y = torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0,
                    is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
                att = F.softmax(att, dim=-1)
                att = self.attn_dropout(att)
                y = att @ v  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
            self.dropout = nn.Dropout(config.dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
            self.attn = CausalSelfAttention(config)
            self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
            self.mlp = MLP(config)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            x = x + self.mlp(self.ln_2(x))
            return x

    class GPT(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=LayerNorm(config.n_embd, bias=config.bias),
            ))
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # weight tying
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith("c_proj.weight"):
                    torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

        def get_num_params(self, non_embedding=True):
            n_params = sum(p.numel() for p in self.parameters())
            if non_embedding:
                n_params -= self.transformer.wpe.weight.numel()
            return n_params

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets=None):
            device = idx.device
            b, t = idx.size()
            assert t <= self.config.block_size
            pos = torch.arange(0, t, dtype=torch.long, device=device)  # (t,)
            tok_emb = self.transformer.wte(idx)  # (b, t, n_embd)
            pos_emb = self.transformer.wpe(pos)  # (t, n_embd)
            x = self.transformer.drop(tok_emb + pos_emb)
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)
            if targets is not None:
                logits = self.lm_head(x)
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                       ignore_index=-1)
            else:
                logits = self.lm_head(x[:, [-1], :])  # the last position only, kept as (b, 1, v)
                loss = None
            return logits, loss

        def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
            param_dict = {pn: p for pn, p in self.named_parameters()}
            param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
            decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
            nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
            optim_groups = [
                {"params": decay_params, "weight_decay": weight_decay},
                {"params": nodecay_params, "weight_decay": 0.0},
            ]
            fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
            use_fused = fused_available and device_type == "cuda"
            extra_args = dict(fused=True) if use_fused else dict()
            return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)

        @torch.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
            for _ in range(max_new_tokens):
                idx_cond = idx if idx.size(1) <= self.config.block_size \
                    else idx[:, -self.config.block_size:]
                logits, _ = self(idx_cond)
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = -float("Inf")
                probs = F.softmax(logits, dim=-1)
                idx_next = torch.multinomial(probs, num_samples=1)
                idx = torch.cat((idx, idx_next), dim=1)
            return idx

    return GPT(config)


def _pair(flash=True, monkeypatch=None):
    config = GPTConfig()
    if not flash:
        monkeypatch.delattr(real_torch.nn.functional, "scaled_dot_product_attention")
        monkeypatch.delattr(tensorgrad.nn.functional, "scaled_dot_product_attention")
    theirs = build(real_torch, config)
    ours = build(tensorgrad, config)
    state = {k: tensorgrad.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)
    return ours, theirs


def _batch(seed=0):
    config = GPTConfig()
    rng = np.random.default_rng(seed)
    x = rng.integers(0, config.vocab_size, (3, config.block_size))
    y = rng.integers(0, config.vocab_size, (3, config.block_size))
    y[0, :4] = -1  # nanoGPT's ignore_index
    return x, y


@pytest.mark.parametrize("flash", [True, False], ids=["sdpa", "manual-attention"])
def test_logits_loss_and_gradients_match_torch(flash, monkeypatch):
    ours, theirs = _pair(flash, monkeypatch)
    assert ours.get_num_params() == theirs.get_num_params()
    x, y = _batch()
    logits, loss = ours(tensorgrad.tensor(x), tensorgrad.tensor(y))
    t_logits, t_loss = theirs(real_torch.tensor(x), real_torch.tensor(y))
    np.testing.assert_allclose(np.asarray(logits.detach()), t_logits.detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    assert loss.item() == pytest.approx(t_loss.item(), rel=1e-5)
    loss.backward()
    t_loss.backward()
    ours_grads = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(np.asarray(ours_grads[name].grad), p.grad.numpy(),
                                   rtol=1e-4, atol=1e-6, err_msg=name)
    last, _ = ours(tensorgrad.tensor(x))
    assert tuple(last.shape) == (3, 1, GPTConfig.vocab_size)


def test_training_steps_with_its_own_optimizer_match_torch():
    # float64: Adam divides by sqrt(v), so a gradient near 0 that differs in its last float32
    # bits moves a weight by a different +-lr in each framework.
    ours, theirs = (model.double() for model in _pair())
    opt = ours.configure_optimizers(0.1, 1e-2, (0.9, 0.95), "cpu")
    t_opt = theirs.configure_optimizers(0.1, 1e-2, (0.9, 0.95), "cpu")
    for step in range(3):
        x, y = _batch(seed=step)
        for model, optimizer, lib in ((ours, opt, tensorgrad), (theirs, t_opt, real_torch)):
            _, loss = model(lib.tensor(x), lib.tensor(y))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    ours_params = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(np.asarray(ours_params[name].detach()), p.detach().numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=name)


def test_generate_with_top_k():
    ours, theirs = _pair()
    ours.eval()
    theirs.eval()
    start = np.array([[1, 2, 3]])
    greedy = ours.generate(tensorgrad.tensor(start), max_new_tokens=20, top_k=1)
    t_greedy = theirs.generate(real_torch.tensor(start), max_new_tokens=20, top_k=1)
    assert greedy.tolist() == t_greedy.tolist()  # top_k=1 leaves one token: no randomness
    sampled = ours.generate(tensorgrad.tensor(start), max_new_tokens=20, top_k=5)
    assert tuple(sampled.shape) == (1, 23) and sampled[:, :3].tolist() == start.tolist()
