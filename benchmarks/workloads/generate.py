"""Greedy decoding of 256 new tokens after a 16-token prompt, batch 1, GPT-mini, with and
without the KV cache, in tokens/s.

tensorgrad's `models.generation.generate` against the torch loop in benchmarks/torch_gpt.py
(its cache grows by torch.cat per step, as Hugging Face's DynamicCache does). block_size is
raised from GPT-mini's 128 to prompt + new tokens (272) so that the whole sequence fits: past
block_size both would have to slide the context and re-encode it, and the cache would measure
nothing.
"""
from . import row
from ..timing import rate
from .gpt_step import MINI, TINY

FRAMEWORKS = ("tensorgrad", "torch")
DESCRIPTION = "tokens/s, greedy, batch 1, with and without KV cache"
# (config, prompt length, new tokens); --quick decodes 64 tokens, so its tokens/s without the cache
# is higher than the full run's (shorter sequences to re-read)
SIZES = {"full": (MINI, 16, 256), "quick": (MINI, 16, 64), "tiny": (TINY, 4, 8)}


def run(env):
    config, prompt_len, new = SIZES[env.mode]
    config = {**config, "block_size": max(config["block_size"], prompt_len + new)}
    prompt = env.randint(config["vocab_size"], 1, prompt_len)
    generate = _GENERATORS[env.framework](env, config)
    rows = []
    for use_cache, case in ((False, "no cache"), (True, "KV cache")):
        stats = env.measure(lambda cache=use_cache: generate(prompt, new, cache), factor=3.0)
        rows.append(row(case, "tokens/s", rate(stats, new), better="higher"))
    return rows


def _tensorgrad(env, config):
    from tensorgrad.models import GPT, GPTConfig, generate

    model = GPT(GPTConfig.mini(**config), device=env.device).eval()
    return lambda prompt, new, use_cache: generate(model, prompt, new, temperature=0.0,
                                                   use_cache=use_cache)


def _torch(env, config):
    from ..torch_gpt import GPT, Config

    model = GPT(Config(**config)).to(env.device).eval()
    return lambda prompt, new, use_cache: model.generate(prompt, new, use_cache=use_cache)


_GENERATORS = {"tensorgrad": _tensorgrad, "torch": _torch}
