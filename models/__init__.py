"""tensorgrad.models: whole models, written like their papers on top of `tensorgrad.nn`.

What is here:
- `GPT`, `GPTConfig` (gpt.py): GPT-2 (Radford et al., 2019), its four released sizes and small
  ones for CPU training, loading and saving Hugging Face GPT-2 checkpoints.
- `BertModel`, `BertConfig` (bert.py) and its heads (bert_heads.py): BERT (Devlin et al., 2019),
  masked-LM and next-sentence pre-training, sequence/token classification and question
  answering, loading and saving Hugging Face BERT checkpoints.
- `generate`, `pad_prompts` (generation.py): greedy, temperature, top-k and top-p decoding of
  batched prompts with a KV cache, for any decoder-only model that has `make_cache()`.
- Tokenizers (tokenizer.py): `ByteTokenizer`, `CharTokenizer`, `BPETokenizer` (GPT-2's
  byte-level BPE, through the `tokenizers` package), `WordPieceTokenizer` (BERT's),
  `load_tokenizer`.
- bert_data.py: BERT's masked-token collator and next-sentence pairs.
- data.py: corpora with nothing to download (the Python standard library's source, and its
  docstrings and comments as English documents) and random training windows from a token
  stream.

Each model file holds its config dataclass, the blocks only it has, the model and its
checkpoint name mapping; attention, feed-forward, norms and positions come from `nn`.
"""
from .bert import BertConfig, BertModel  # noqa: F401
from .bert_data import MLMCollator, collate_pairs, next_sentence_pairs  # noqa: F401
from .bert_heads import (  # noqa: F401
    BertForMaskedLM, BertForNextSentencePrediction, BertForPreTraining, BertForQuestionAnswering,
    BertForSequenceClassification, BertForTokenClassification,
)
from .generation import generate, pad_prompts  # noqa: F401
from .gpt import GPT, GPTConfig  # noqa: F401
from .tokenizer import (  # noqa: F401
    BPETokenizer, ByteTokenizer, CharTokenizer, Tokenizer, load_tokenizer,
)
from .tokenizer import WordPieceTokenizer  # noqa: F401
