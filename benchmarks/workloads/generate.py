"""Greedy decoding of 256 new tokens after a 16-token prompt, GPT-mini, batch 1 and 8, with and
without the KV cache, in tokens/s (new tokens of the whole batch per second).

tensorgrad's `models.generation.generate` against the torch loop in benchmarks/torch_gpt.py, with
two torch caches: one that grows by torch.cat per step (as Hugging Face's DynamicCache does) and
one preallocated to the final length and written in place (Hugging Face's StaticCache, the fast
way to write it). tensorgrad has one cache (KVCache, buffers that double), decoded once per batch
size and set against both torch rows. block_size is raised from GPT-mini's 128 to prompt + new
tokens (272) so that the whole sequence fits: past block_size both would have to slide the
context and re-encode it, and the cache would measure nothing.
"""
from . import row
from ..timing import rate
from .gpt_step import MINI, TINY

FRAMEWORKS = ("tensorgrad", "torch")
DESCRIPTION = "tokens/s, greedy, batch 1 and 8, with and without KV cache (torch.cat, static)"
# (config, prompt length, new tokens, batch sizes); --quick decodes 64 tokens, so its tokens/s
# without the cache is higher than the full run's (shorter sequences to re-read)
SIZES = {"full": (MINI, 16, 256, (1, 8)), "quick": (MINI, 16, 64, (1, 8)),
         "tiny": (TINY, 4, 8, (1, 2))}
# (case suffix, use_cache, torch's static_cache); tensorgrad runs the two cached cases once
CASES = (("no cache", False, False), ("KV cache, torch.cat", True, False),
         ("KV cache, torch static", True, True))


def run(env):
    config, prompt_len, new, batches = SIZES[env.mode]
    config = {**config, "block_size": max(config["block_size"], prompt_len + new)}
    generate = _GENERATORS[env.framework](env, config)
    rows = []
    for batch in batches:
        prompt = env.randint(config["vocab_size"], batch, prompt_len)
        cached = None
        for name, use_cache, static in CASES:
            if env.framework == "tensorgrad" and use_cache and cached is not None:
                stats = cached  # one cache implementation, compared with both of torch's
            else:
                stats = env.measure(lambda p=prompt, c=use_cache, s=static: generate(p, new, c, s),
                                    factor=3.0)
            cached = stats if use_cache else None
            rows.append(row(f"B={batch} {name}", "tokens/s", rate(stats, batch * new),
                            better="higher"))
    return rows


def _tensorgrad(env, config):
    from tensorgrad.models import GPT, GPTConfig, generate

    model = GPT(GPTConfig.mini(**config), device=env.device).eval()
    return lambda prompt, new, use_cache, static: generate(model, prompt, new, temperature=0.0,
                                                           use_cache=use_cache)


def _torch(env, config):
    from ..torch_gpt import GPT, Config

    model = GPT(Config(**config)).to(env.device).eval()
    return lambda prompt, new, use_cache, static: model.generate(prompt, new, use_cache, static)


_GENERATORS = {"tensorgrad": _tensorgrad, "torch": _torch}
