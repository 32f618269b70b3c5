"""tensorgrad.models: GPT, BERT, T5, the original Transformer, ViT, LoRA."""
from .generation import generate, pad_prompts  # noqa: F401
from .gpt import GPT, GPTConfig  # noqa: F401
from .tokenizer import (  # noqa: F401
    BPETokenizer, ByteTokenizer, CharTokenizer, Tokenizer, load_tokenizer,
)
