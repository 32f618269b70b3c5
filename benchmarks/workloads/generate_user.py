"""Greedy decoding written the PyTorch way, the same model code run on both frameworks: 256 new
tokens after a 16-token prompt, batch 1, with the model's own preallocated KV cache, tokens/s.

The model is benchmarks/torch_gpt.py's nanoGPT-style GPT-mini (plain nn.Linear,
F.scaled_dot_product_attention, argmax and torch.cat on the ids), decoded under
torch.inference_mode() with its StaticCache: each layer's (1, H, P+N, hd) buffers made once and
written by slice assignment. On tensorgrad the very same module runs through tensorgrad.as_torch
(`import torch` gives tensorgrad), so what is measured is the generic ops a user's model calls
(small matmuls, __setitem__, cat, argmax, slicing), not tensorgrad's own GPT and its KVCache
(the generate workload). generate_nocache is the same decoding re-reading the whole sequence at
every step. block_size is raised to prompt + new tokens (272) so that the sequence fits.
"""
import warnings

from . import row
from ..timing import rate
from .gpt_step import MINI, TINY

FRAMEWORKS = ("tensorgrad", "torch")
DEVICES = ("cpu",)  # as_torch covers torch.cuda's calls, not this model's .to(device)
DESCRIPTION = "tokens/s, a PyTorch-style GPT-mini decoding with its own static cache"
SIZES = {"full": (MINI, 16, 256), "quick": (MINI, 16, 64), "tiny": (TINY, 4, 8)}


def run(env, use_cache=True):
    config, prompt_len, new = SIZES[env.mode]
    torch, torch_gpt = user_modules(env.framework)
    model = torch_gpt.GPT(torch_gpt.Config(**{**config, "block_size": prompt_len + new})).eval()
    prompt = env.randint(config["vocab_size"], 1, prompt_len)

    def decode():
        with torch.inference_mode():
            return model.generate(prompt, new, use_cache=use_cache, static_cache=use_cache)

    stats = env.measure(decode, factor=3.0)
    case = "B=1 KV cache, static" if use_cache else "B=1 no cache"
    return [row(case, "tokens/s", rate(stats, new), better="higher")]


def user_modules(framework):
    """(torch, benchmarks.torch_gpt) as this framework's process sees them: on tensorgrad,
    `import torch` is aliased to tensorgrad first, so the model module is unchanged user code."""
    if framework == "tensorgrad":
        import tensorgrad.as_torch
        with warnings.catch_warnings():  # it says an installed PyTorch is shadowed: meant here
            warnings.simplefilter("ignore")
            tensorgrad.as_torch.install()
    import torch
    from .. import torch_gpt
    if framework == "tensorgrad" and not torch_gpt.torch.__name__.startswith("tensorgrad"):
        raise RuntimeError("generate_user: benchmarks.torch_gpt was imported with the real torch "
                           "before tensorgrad.as_torch was installed")
    return torch, torch_gpt
