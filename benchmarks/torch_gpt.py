"""GPT-mini in PyTorch, nanoGPT-like: the reference the gpt_step and generate workloads race.

Same architecture and parameter names as the NumPy floor (benchmarks/numpy_floor.py): learned
positions, pre-LN blocks, fused qkv projection, causal attention through
F.scaled_dot_product_attention (PyTorch's fused kernel), tanh-GELU MLP, final LayerNorm, output
head tied to the token embedding. `generate` decodes greedily, with or without a KV cache:
one that grows by torch.cat (Hugging Face's DynamicCache) or one preallocated to the final
length and written in place (Hugging Face's StaticCache, the fast way to write it).

It is also the user's PyTorch code that the generate_user and generate_nocache workloads run
unchanged on tensorgrad, through tensorgrad.as_torch: keep it to what PyTorch code plainly does.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class Config:
    vocab_size: int = 256
    block_size: int = 128
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    d_ff: int = 512


class ConcatCache:
    """One layer's keys and values (B, nh, T, hs), grown by torch.cat at every step, as Hugging
    Face's DynamicCache does: each step copies the whole cache."""

    def __init__(self):
        self.k = self.v = None

    def __len__(self):
        return 0 if self.k is None else self.k.shape[2]

    def update(self, k, v):
        if self.k is not None:
            k, v = torch.cat([self.k, k], dim=2), torch.cat([self.v, v], dim=2)
        self.k, self.v = k, v
        return k, v


class StaticCache:
    """One layer's keys and values in buffers (B, nh, max_len, hs) made once, before decoding,
    and written in place, as Hugging Face's StaticCache does: each step copies the new token
    only and attends over a view of the filled part."""

    def __init__(self, batch, n_head, max_len, head_size, like):
        self.k = like.new_empty(batch, n_head, max_len, head_size)  # like's dtype and device
        self.v = torch.empty_like(self.k)
        self.length = 0

    def __len__(self):
        return self.length

    def update(self, k, v):
        start, end = self.length, self.length + k.shape[2]
        self.k[:, :, start:end] = k
        self.v[:, :, start:end] = v
        self.length = end
        return self.k[:, :, :end], self.v[:, :, :end]


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)

    def forward(self, x, cache=None):
        """x (B, T, C); cache: None, or a ConcatCache / StaticCache, extended in place."""
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        past = 0
        if cache is not None:
            past = len(cache)
            k, v = cache.update(k, v)  # (B, nh, past + T, hs)
        # One new token attends to every cached one: no mask is needed then.
        y = F.scaled_dot_product_attention(q, k, v, is_causal=past == 0)  # (B, nh, T, hs)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, config.d_ff)
        self.c_proj = nn.Linear(config.d_ff, config.n_embd)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x, cache=None):
        x = x + self.attn(self.ln_1(x), cache)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.h = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2's scaled init of residual projections
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear):
            nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None, caches=None):
        """idx (B, T) -> logits (B, T, V), and the mean cross-entropy when targets are given."""
        T = idx.shape[1]
        past = 0 if caches is None else len(caches[0])
        pos = torch.arange(past, past + T, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for i, block in enumerate(self.h):
            x = block(x, None if caches is None else caches[i])
        logits = self.ln_f(x) @ self.wte.weight.T  # tied head: (B, T, C) @ (C, V)
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, use_cache=True, static_cache=False):
        """Greedy decoding of max_new_tokens after the prompt idx (B, T0); the whole sequence
        must fit in block_size. Without the cache every step re-reads the whole sequence;
        static_cache=True preallocates it (StaticCache) instead of growing it (ConcatCache)."""
        caches = None
        if use_cache and static_cache:
            c = self.config
            caches = [StaticCache(idx.shape[0], c.n_head, idx.shape[1] + max_new_tokens,
                                  c.n_embd // c.n_head, self.wte.weight) for _ in self.h]
        elif use_cache:
            caches = [ConcatCache() for _ in self.h]
        step_input = idx
        for _ in range(max_new_tokens):
            logits, _ = self(step_input, caches=caches)
            token = logits[:, -1].argmax(dim=-1, keepdim=True)  # (B, 1)
            idx = torch.cat([idx, token], dim=1)
            step_input = token if use_cache else idx
        return idx
