"""tensorgrad.models: whole models, written like their papers on top of `tensorgrad.nn`.

What is here:
- `GPT`, `GPTConfig` (gpt.py): GPT-2 (Radford et al., 2019), its four released sizes and small
  ones for CPU training, loading and saving Hugging Face GPT-2 checkpoints.
- `BertModel`, `BertConfig` (bert.py) and its heads (bert_heads.py): BERT (Devlin et al., 2019),
  masked-LM and next-sentence pre-training, sequence/token classification and question
  answering, loading and saving Hugging Face BERT checkpoints.
- `generate`, `pad_prompts` (generation.py): one generate for every model, with transformers'
  arguments: greedy decoding, sampling, beam search (beam_search.py), the repetition and
  n-gram rules (decoding.py), batched prompts and a KV cache.
- `LoraConfig`, `get_peft_model`, `PeftModel` (lora.py): LoRA adapters (Hu et al., 2021) on any
  model, merged or not, several by name, read and written in peft's adapter format.
- `T5Config`, `T5ForConditionalGeneration`, `T5EncoderModel` (t5.py): T5 v1.0 and v1.1
  (Raffel et al., 2020) with Hugging Face checkpoints; `Seq2SeqTransformer`,
  `TransformerConfig` (transformer.py): the original encoder-decoder (Vaswani et al., 2017).
- Tokenizers (tokenizer.py): `ByteTokenizer`, `CharTokenizer`, `BPETokenizer` (GPT-2's
  byte-level BPE, through the `tokenizers` package), `WordPieceTokenizer` (BERT's),
  `UnigramTokenizer` (T5's, with its sentinels), `load_tokenizer`.
- span_corruption.py: T5's span-corruption pre-training objective.
- bert_data.py: BERT's masked-token collator and next-sentence pairs.
- `ViTModel`, `ViTForImageClassification`, `ViTConfig` (vit.py): the Vision Transformer
  (Dosovitskiy et al., 2021) with Hugging Face ViT checkpoints; `SwinModel`,
  `SwinForImageClassification`, `SwinConfig` (swin.py): the shifted-window Transformer (Liu et
  al., 2021) with Hugging Face Swin checkpoints.
- rlhf/ (`tensorgrad.models.rlhf`): after pre-training: SFT with a response-only loss, a reward
  model (Bradley-Terry), PPO with a KL penalty, DPO, on tasks a program can check.
- classification.py: Hugging Face's classification-head loss (by problem_type) and label maps,
  shared by BERT, ViT and Swin; outputs.py: the output objects HF-named classes return;
  hub.py: reading and writing Hugging Face checkpoint folders.
- `data` and `digits` are tensorgrad.datasets' text and digits modules under their old names,
  `attention_maps` is tensorgrad.viz.attention_maps (a ViT's attention rollout and PNG grids).

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
from . import rlhf  # noqa: F401
from .lora import LoraConfig, PeftModel, get_peft_model  # noqa: F401
from .t5 import T5Config, T5EncoderModel, T5ForConditionalGeneration  # noqa: F401
from .transformer import Seq2SeqTransformer, TransformerConfig  # noqa: F401
from .tokenizer import (  # noqa: F401
    BPETokenizer, ByteTokenizer, CharTokenizer, Tokenizer, UnigramTokenizer, WordPieceTokenizer,
    load_tokenizer,
)
from .vit import ViTConfig, ViTForImageClassification, ViTModel  # noqa: F401
from .swin import SwinConfig, SwinForImageClassification, SwinModel  # noqa: F401

import sys as _sys  # noqa: E402
from tensorgrad.datasets import digits, text as data  # noqa: E402
from tensorgrad.viz import attention_maps  # noqa: E402

_sys.modules[__name__ + ".data"] = data  # `from tensorgrad.models.data import ...` keeps working
_sys.modules[__name__ + ".digits"] = digits
_sys.modules[__name__ + ".attention_maps"] = attention_maps
