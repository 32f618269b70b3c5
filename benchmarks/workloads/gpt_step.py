"""One AdamW training step of GPT-mini: vocab 256, T=128, B=16, d=128, 4 layers, 4 heads,
d_ff=512, pre-LN, tanh-GELU, learned positions, tied head, causal attention.

tensorgrad.models.GPT against the nanoGPT-like torch model in benchmarks/torch_gpt.py and the
NumPy floor's hand-written GPT (benchmarks/numpy_floor.py); all three compute the same function
(tests/test_benchmarks.py checks it). Besides the step time, the process's peak RSS: the whole
process ("peak RSS", imports included) and its growth from just before the model was built
("RSS growth": parameters, optimizer state, activations and whatever the framework caches;
the high-water mark is restarted there, see timing.reset_peak_rss).
"""
from . import row, single
from ..timing import current_rss_mb, peak_rss_mb, rate, reset_peak_rss, scale

FRAMEWORKS = ("tensorgrad", "torch", "numpy")
DESCRIPTION = "ms per AdamW step of GPT-mini, tokens/s, peak RSS"
MINI = dict(vocab_size=256, block_size=128, n_layer=4, n_head=4, n_embd=128, d_ff=512)
TINY = dict(vocab_size=64, block_size=16, n_layer=2, n_head=2, n_embd=16, d_ff=64)
SIZES = {"full": (MINI, 16), "quick": (MINI, 16), "tiny": (TINY, 2)}  # (config, batch)
LR, WEIGHT_DECAY = 1e-3, 0.01


def run(env):
    config, batch = SIZES[env.mode]
    T = config["block_size"]
    idx, targets = env.randint(config["vocab_size"], batch, T), env.randint(config["vocab_size"],
                                                                            batch, T)
    imports_peak, before = peak_rss_mb(), current_rss_mb()
    reset_peak_rss()  # the growth is then the step's, not an import's passing peak
    step = _STEPS[env.framework](env, config)
    stats = env.measure(lambda: step(idx, targets), factor=3.0)
    peak = peak_rss_mb()
    case = f"B={batch} T={T}"
    return [row(case, "ms/step", scale(stats, 1e3)),
            row(case, "tokens/s", rate(stats, batch * T), better="higher"),
            row(case, "peak RSS MiB", single(max(peak, imports_peak))),
            row(case, "RSS growth MiB", single(max(peak - before, 0.0)))]


def _tensorgrad(env, config):
    from tensorgrad import nn
    from tensorgrad.models import GPT, GPTConfig

    model = GPT(GPTConfig.mini(**config), device=env.device)
    optimizer = nn.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)

    def step(idx, targets):
        optimizer.zero_grad()
        model(idx, targets)[1].backward()
        optimizer.step()
    return step


def _torch(env, config):
    import torch

    from ..torch_gpt import GPT, Config

    model = GPT(Config(**config)).to(env.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)

    def step(idx, targets):
        optimizer.zero_grad()
        model(idx, targets)[1].backward()
        optimizer.step()
    return step


def _numpy(env, config):
    from ..numpy_floor import GPT
    return GPT(**config, lr=LR, weight_decay=WEIGHT_DECAY, xp=env.xp).step


_STEPS = {"tensorgrad": _tensorgrad, "torch": _torch, "numpy": _numpy}
