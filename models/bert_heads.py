"""The heads on BERT's encoder (Devlin et al., 2019, sections 3.1 and 4): masked-token and
next-sentence prediction for pre-training, and the fine-tuning heads of Hugging Face's classes of
the same names (sequence and token classification, extractive question answering). Each takes
the labels HF's class takes and returns HF's loss in an output with HF's field names.

The encoder, its configuration and the checkpoint name mapping are in bert.py; every class here
loads and saves Hugging Face checkpoints through it (`from_pretrained`, `save_pretrained`).
"""
import dataclasses

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad import nn

from .bert import HIDDEN_ACTIVATIONS, BertModel, BertPreTrainedModel
from .classification import classification_loss
from .outputs import LogitsOutput, ModelOutput

# The masked-LM transform's activation, by nn.FeedForward's name for it
_FUNCTIONS = {"gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
              "relu": F.relu, "silu": F.silu}


# --- outputs ------------------------------------------------------------------------------------
@dataclasses.dataclass
class PreTrainingOutput(ModelOutput):
    """loss = masked-LM loss + next-sentence loss (when both label sets are given)."""
    loss: tg.Tensor | None = None
    prediction_logits: tg.Tensor | None = None  # (B, T, vocab_size)
    seq_relationship_logits: tg.Tensor | None = None  # (B, 2): 0 = B follows A, 1 = random
    hidden_states: tuple | None = None
    attentions: tuple | None = None


@dataclasses.dataclass
class QuestionAnsweringOutput(ModelOutput):
    loss: tg.Tensor | None = None  # the mean of the start and end cross-entropies
    start_logits: tg.Tensor | None = None  # (B, T)
    end_logits: tg.Tensor | None = None  # (B, T)
    hidden_states: tuple | None = None
    attentions: tuple | None = None


# --- heads --------------------------------------------------------------------------------------
class BertMLMHead(nn.Module):
    """(B, T, C) -> (B, T, vocab_size): dense, activation, LayerNorm, then the word embedding
    matrix (tied: the decoder is the embedding table, transposed) plus a bias of its own."""

    def __init__(self, config, **options):
        super().__init__()
        c = config
        self.dense = nn.Linear(c.hidden_size, c.hidden_size, **options)
        self.norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps, **options)
        self.bias = nn.Parameter(tg.zeros(c.vocab_size, **options))
        self.activation = _FUNCTIONS[HIDDEN_ACTIVATIONS[c.hidden_act]]

    def forward(self, hidden, word_embeddings):
        h = self.norm(self.activation(self.dense(hidden)))  # (B, T, C)
        return F.linear(h, word_embeddings, self.bias)  # (B, T, C) @ (C, V) -> (B, T, V)


class _Head(BertPreTrainedModel):
    """A head on `bert`: the encoder's inputs and output options pass through."""

    def __init__(self, config, pooler, device=None, dtype=None):
        super().__init__()
        self.config = config
        self._options = dict(device=device, dtype=dtype)
        self.bert = BertModel(config, add_pooling_layer=pooler, **self._options)

    def _encode(self, input_ids, attention_mask, token_type_ids, options):
        return self.bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                         **options)

    def _classifier_dropout(self):
        p = self.config.classifier_dropout
        return nn.Dropout(self.config.hidden_dropout_prob if p is None else p)


def _cross_entropy(logits, labels):
    """Mean cross-entropy over every position; labels of -100 are left out (HF's rule)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


class BertForMaskedLM(_Head):
    """Masked-token prediction. labels: (B, T) the original ids at the masked positions, -100
    elsewhere. Returns LogitsOutput(loss, logits (B, T, vocab_size), ...)."""

    architecture = "BertForMaskedLM"

    def __init__(self, config, device=None, dtype=None):
        super().__init__(config, pooler=False, device=device, dtype=dtype)
        self.mlm = BertMLMHead(config, **self._options)
        self.reset_parameters()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, labels=None,
                **options):
        """options: position_ids, inputs_embeds, output_hidden_states, output_attentions."""
        out = self._encode(input_ids, attention_mask, token_type_ids, options)
        logits = self.mlm(out.last_hidden_state, self.bert.embeddings.word_embeddings.weight)
        loss = None if labels is None else _cross_entropy(logits, labels)
        return LogitsOutput(loss, logits, out.hidden_states, out.attentions)


class BertForNextSentencePrediction(_Head):
    """Whether segment B follows segment A, from the pooled [CLS]. labels: (B,), 0 = B is the
    continuation, 1 = B is a random sentence. Returns LogitsOutput(loss, logits (B, 2), ...)."""

    architecture = "BertForNextSentencePrediction"

    def __init__(self, config, device=None, dtype=None):
        super().__init__(config, pooler=True, device=device, dtype=dtype)
        self.nsp = nn.Linear(config.hidden_size, 2, **self._options)
        self.reset_parameters()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, labels=None,
                **options):
        out = self._encode(input_ids, attention_mask, token_type_ids, options)
        logits = self.nsp(out.pooler_output)  # (B, 2)
        loss = None if labels is None else F.cross_entropy(logits, labels.reshape(-1))
        return LogitsOutput(loss, logits, out.hidden_states, out.attentions)


class BertForPreTraining(_Head):
    """Both pre-training heads. labels: (B, T) masked-LM targets (-100 where not masked);
    next_sentence_label: (B,). The loss is their sum, when both are given (HF's rule)."""

    architecture = "BertForPreTraining"

    def __init__(self, config, device=None, dtype=None):
        super().__init__(config, pooler=True, device=device, dtype=dtype)
        self.mlm = BertMLMHead(config, **self._options)
        self.nsp = nn.Linear(config.hidden_size, 2, **self._options)
        self.reset_parameters()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, labels=None,
                next_sentence_label=None, **options):
        out = self._encode(input_ids, attention_mask, token_type_ids, options)
        mlm = self.mlm(out.last_hidden_state, self.bert.embeddings.word_embeddings.weight)
        nsp = self.nsp(out.pooler_output)  # (B, 2)
        loss = None
        if labels is not None and next_sentence_label is not None:
            loss = _cross_entropy(mlm, labels) + F.cross_entropy(nsp,
                                                                 next_sentence_label.reshape(-1))
        return PreTrainingOutput(loss, mlm, nsp, out.hidden_states, out.attentions)


class BertForSequenceClassification(_Head):
    """A linear classifier on the pooled [CLS]: logits (B, num_labels). labels: (B,) class ids
    (cross-entropy); with num_labels=1, (B,) floats (regression, mean squared error); float
    labels (B, num_labels) are multi-label (binary cross-entropy). config.problem_type fixes
    the choice."""

    architecture = "BertForSequenceClassification"

    def __init__(self, config, device=None, dtype=None):
        super().__init__(config, pooler=True, device=device, dtype=dtype)
        self.dropout = self._classifier_dropout()
        self.classifier = nn.Linear(config.hidden_size, config.num_labels, **self._options)
        self.reset_parameters()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, labels=None,
                **options):
        out = self._encode(input_ids, attention_mask, token_type_ids, options)
        logits = self.classifier(self.dropout(out.pooler_output))  # (B, num_labels)
        loss = None if labels is None else classification_loss(logits, labels,
                                                               self.config.problem_type)
        return LogitsOutput(loss, logits, out.hidden_states, out.attentions)


class BertForTokenClassification(_Head):
    """A linear classifier on every token: logits (B, T, num_labels). labels: (B, T) class ids,
    -100 where there is no label (padding, word-piece continuations)."""

    architecture = "BertForTokenClassification"

    def __init__(self, config, device=None, dtype=None):
        super().__init__(config, pooler=False, device=device, dtype=dtype)
        self.dropout = self._classifier_dropout()
        self.classifier = nn.Linear(config.hidden_size, config.num_labels, **self._options)
        self.reset_parameters()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, labels=None,
                **options):
        out = self._encode(input_ids, attention_mask, token_type_ids, options)
        logits = self.classifier(self.dropout(out.last_hidden_state))  # (B, T, num_labels)
        loss = None if labels is None else _cross_entropy(logits, labels)
        return LogitsOutput(loss, logits, out.hidden_states, out.attentions)


class BertForQuestionAnswering(_Head):
    """Extractive QA: a start and an end score per token (qa_outputs has num_labels = 2
    outputs). start_positions, end_positions: (B,) the answer span; positions outside the
    sequence are clamped to T and left out of the loss, the mean of the two cross-entropies."""

    architecture = "BertForQuestionAnswering"

    def __init__(self, config, device=None, dtype=None):
        super().__init__(config, pooler=False, device=device, dtype=dtype)
        self.qa_outputs = nn.Linear(config.hidden_size, config.num_labels, **self._options)
        self.reset_parameters()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                start_positions=None, end_positions=None, **options):
        out = self._encode(input_ids, attention_mask, token_type_ids, options)
        logits = self.qa_outputs(out.last_hidden_state)  # (B, T, 2)
        start, end = logits[..., 0], logits[..., 1]  # (B, T) each
        loss = None
        if start_positions is not None and end_positions is not None:
            T = start.shape[1]
            losses = [F.cross_entropy(scores, positions.reshape(-1).clamp(0, T), ignore_index=T)
                      for scores, positions in ((start, start_positions), (end, end_positions))]
            loss = (losses[0] + losses[1]) / 2
        return QuestionAnsweringOutput(loss, start, end, out.hidden_states, out.attentions)
