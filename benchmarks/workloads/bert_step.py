"""One AdamW training step of a BERT-mini masked-LM: 4 post-LN layers of width 256, 4 heads,
d_ff=1024, erf-GELU, learned positions and token types, a 4,096-piece vocabulary, T=128, B=16,
a quarter of the rows padded to 96 tokens, 15% of the positions labelled.

tensorgrad.models.BertForMaskedLM against the idiomatic PyTorch BERT of the same shape below
(torch.nn.TransformerEncoder with norm_first=False, a padding mask, and the masked-LM head tied
to the word embeddings); both compute logits at every position, as Hugging Face's does, and no
dropout, so that both do the same arithmetic.
"""
from . import row
from ..timing import rate, scale

FRAMEWORKS = ("tensorgrad", "torch")
DESCRIPTION = "ms per AdamW step of a BERT-mini masked LM, tokens/s"
MINI = dict(vocab_size=4096, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
            intermediate_size=1024, max_position_embeddings=128)
TINY = dict(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=32, max_position_embeddings=16)
SIZES = {"full": (MINI, 16), "quick": (MINI, 16), "tiny": (TINY, 2)}  # (config, batch)
LR, WEIGHT_DECAY = 1e-3, 0.01


def run(env):
    config, batch = SIZES[env.mode]
    T = config["max_position_embeddings"]
    ids = env.randint(config["vocab_size"], batch, T)
    types = env.array((env.rng.random((batch, T)) < 0.5).astype("int64"))
    mask = env.rng.random((batch, T)) >= 0  # all ones, then padding at the end of some rows
    mask[::4, 3 * T // 4:] = False
    labels = env.rng.integers(0, config["vocab_size"], (batch, T))
    labels[(env.rng.random((batch, T)) >= 0.15) | ~mask] = -100
    inputs = (ids, types, env.array(mask.astype("int64")), env.array(labels))
    step = _STEPS[env.framework](env, config)
    stats = env.measure(lambda: step(*inputs), factor=3.0)
    case = f"B={batch} T={T}"
    return [row(case, "ms/step", scale(stats, 1e3)),
            row(case, "tokens/s", rate(stats, batch * T), better="higher")]


def _tensorgrad(env, config):
    from tensorgrad import nn
    from tensorgrad.models import BertConfig, BertForMaskedLM

    model = BertForMaskedLM(BertConfig(**config, hidden_dropout_prob=0.0,
                                       attention_probs_dropout_prob=0.0), device=env.device)
    optimizer = nn.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)

    def step(ids, types, mask, labels):
        optimizer.zero_grad()
        model(ids, attention_mask=mask, token_type_ids=types, labels=labels).loss.backward()
        optimizer.step()
    return step


def _torch(env, config):
    import torch

    model = _torch_bert(config).to(env.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)

    def step(ids, types, mask, labels):
        optimizer.zero_grad()
        model(ids, types, mask, labels).backward()
        optimizer.step()
    return step


def _torch_bert(c):
    """BERT for masked LM the way one writes it in PyTorch: embeddings, an nn.TransformerEncoder
    of post-LN layers, the transform + LayerNorm + tied decoder head."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class BertMLM(nn.Module):
        def __init__(self):
            super().__init__()
            h, eps = c["hidden_size"], 1e-12
            self.word = nn.Embedding(c["vocab_size"], h, padding_idx=0)
            self.position = nn.Embedding(c["max_position_embeddings"], h)
            self.token_type = nn.Embedding(2, h)
            self.norm = nn.LayerNorm(h, eps=eps)
            layer = nn.TransformerEncoderLayer(h, c["num_attention_heads"],
                                               c["intermediate_size"], dropout=0.0,
                                               activation="gelu", layer_norm_eps=eps,
                                               batch_first=True, norm_first=False)
            self.encoder = nn.TransformerEncoder(layer, c["num_hidden_layers"],
                                                 enable_nested_tensor=False)
            self.transform = nn.Linear(h, h)
            self.head_norm = nn.LayerNorm(h, eps=eps)
            self.bias = nn.Parameter(torch.zeros(c["vocab_size"]))

        def forward(self, ids, types, mask, labels):
            B, T = ids.shape
            positions = torch.arange(T, device=ids.device)
            x = self.norm(self.word(ids) + self.token_type(types) + self.position(positions))
            x = self.encoder(x, src_key_padding_mask=mask == 0)  # (B, T, C)
            x = self.head_norm(F.gelu(self.transform(x)))
            logits = F.linear(x, self.word.weight, self.bias)  # (B, T, V)
            return F.cross_entropy(logits.view(B * T, -1), labels.view(B * T))

    return BertMLM()


_STEPS = {"tensorgrad": _tensorgrad, "torch": _torch}
