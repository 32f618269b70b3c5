"""One AdamW training step of a small T5 v1.0 (relative position bias, RMS norms, ReLU FFN,
tied and rescaled head): vocab 1024, d_model 128, 4 heads of 32, d_ff 512, 4 encoder and 4
decoder blocks, B=16 sources of 64 tokens and targets of 32.

tensorgrad.models.T5ForConditionalGeneration against the idiomatic PyTorch T5, transformers'
T5ForConditionalGeneration (eager PyTorch) with the same configuration.
"""
from . import row
from ..timing import rate, scale

FRAMEWORKS = ("tensorgrad", "torch")
DESCRIPTION = "ms per AdamW step of a small T5 (4+4 blocks, d=128), tokens/s"
MINI = dict(vocab_size=1024, d_model=128, d_kv=32, d_ff=512, num_layers=4, num_heads=4)
TINY = dict(vocab_size=64, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2)
SIZES = {"full": (MINI, 16, 64, 32), "quick": (MINI, 16, 64, 32), "tiny": (TINY, 2, 8, 4)}
LR, WEIGHT_DECAY = 1e-3, 0.01


def run(env):
    config, batch, S, T = SIZES[env.mode]
    config = dict(config, dropout_rate=0.0, relative_attention_num_buckets=32,
                  relative_attention_max_distance=128)
    src = env.randint(config["vocab_size"], batch, S)
    labels = env.randint(config["vocab_size"], batch, T)
    step = _STEPS[env.framework](env, config)
    stats = env.measure(lambda: step(src, labels), factor=3.0)
    case = f"B={batch} S={S} T={T}"
    return [row(case, "ms/step", scale(stats, 1e3)),
            row(case, "tokens/s", rate(stats, batch * (S + T)), better="higher")]


def _tensorgrad(env, config):
    from tensorgrad import nn
    from tensorgrad.models import T5Config, T5ForConditionalGeneration

    model = T5ForConditionalGeneration(T5Config(**config), device=env.device)
    optimizer = nn.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)

    def step(src, labels):
        optimizer.zero_grad()
        model(src, labels=labels).loss.backward()
        optimizer.step()
    return step


def _torch(env, config):
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    hf = transformers.T5Config(**config, decoder_start_token_id=0)
    model = transformers.T5ForConditionalGeneration(hf).to(env.device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)

    def step(src, labels):
        optimizer.zero_grad()
        model(input_ids=src, labels=labels, use_cache=False).loss.backward()
        optimizer.step()
    return step


_STEPS = {"tensorgrad": _tensorgrad, "torch": _torch}
