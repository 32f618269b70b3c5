"""tensorgrad.models: whole models, written like their papers on top of `tensorgrad.nn`.

What is here:
- `GPT`, `GPTConfig` (gpt.py): GPT-2 (Radford et al., 2019), its four released sizes and small
  ones for CPU training, loading and saving Hugging Face GPT-2 checkpoints.
- `generate`, `pad_prompts` (generation.py): greedy, temperature, top-k and top-p decoding of
  batched prompts with a KV cache, for any decoder-only model that has `make_cache()`.
- Tokenizers (tokenizer.py): `ByteTokenizer`, `CharTokenizer`, `BPETokenizer` (GPT-2's
  byte-level BPE, through the `tokenizers` package), `load_tokenizer`.
- rlhf/ (`tensorgrad.models.rlhf`): after pre-training: SFT with a response-only loss, a reward
  model (Bradley-Terry), PPO with a KL penalty, DPO, on tasks a program can check.
- data.py: a corpus with nothing to download (the Python standard library's source) and
  random training windows from a token stream.

Each model file holds its config dataclass, the blocks only it has, the model and its
checkpoint name mapping; attention, feed-forward, norms and positions come from `nn`.
"""
from .generation import generate, pad_prompts  # noqa: F401
from .gpt import GPT, GPTConfig  # noqa: F401
from . import rlhf  # noqa: F401
from .tokenizer import (  # noqa: F401
    BPETokenizer, ByteTokenizer, CharTokenizer, Tokenizer, load_tokenizer,
)
