"""What the Hugging Face-named model classes return: Hugging Face's output objects in small.

A field reads by attribute (`out.logits`) or by name (`out["logits"]`), and by position or
unpacking over the fields that are not None, in HF's order: with labels, `out[0]` is the loss,
as in `transformers`. (`GPT`, our own class, returns nanoGPT's `(logits, loss)` pair instead.)
Also the parameter table each model's `summary()` prints.
"""
import dataclasses

import tensorgrad as tg


class ModelOutput:
    def to_tuple(self):
        return tuple(v for v in (getattr(self, f.name) for f in dataclasses.fields(self))
                     if v is not None)

    def keys(self):
        return [f.name for f in dataclasses.fields(self) if getattr(self, f.name) is not None]

    def __getitem__(self, key):
        return getattr(self, key) if isinstance(key, str) else self.to_tuple()[key]

    def __iter__(self):
        return iter(self.to_tuple())


@dataclasses.dataclass
class BaseModelOutputWithPooling(ModelOutput):
    """An encoder's output. last_hidden_state (B, T, C); pooler_output (B, C') or None without
    a pooler; hidden_states: the embeddings' output and each layer's (Swin: each stage's);
    attentions: each layer's probabilities (B, H, Tq, Tk) (Swin: per window)."""
    last_hidden_state: tg.Tensor
    pooler_output: tg.Tensor | None = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


@dataclasses.dataclass
class LogitsOutput(ModelOutput):
    """What a head returns (HF's MaskedLMOutput, SequenceClassifierOutput,
    ImageClassifierOutput, ...): the loss when labels were given, the logits, and on request
    the encoder's hidden states and attentions."""
    loss: tg.Tensor | None = None
    logits: tg.Tensor | None = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


@dataclasses.dataclass
class Seq2SeqLMOutput(ModelOutput):
    """What an encoder-decoder language model returns (HF's Seq2SeqLMOutput, in part): the
    loss with labels, the logits (B, T, vocab_size), and the encoder's output (B, S, C), which
    `encoder_outputs=` takes back to skip the encoder."""
    loss: tg.Tensor | None = None
    logits: tg.Tensor | None = None
    encoder_last_hidden_state: tg.Tensor | None = None


# --- the parameter table every model's `summary()` prints (nn.Module.summary: per module) -------
def parameter_table(rows, total):
    """Rows of (part, shape, count) and the total as an aligned text table."""
    rows = [(name, shape, f"{count:,}") for name, shape, count in rows]
    rows.append(("total", "", f"{total:,}"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}"
                     for r in rows)
