"""One `generate` for every language model here, taking transformers' arguments: greedy
decoding, sampling (temperature, top-k, top-p), beam search, the repetition penalty and the
n-gram ban, end-of-sequence tokens, batches of left-padded prompts and a KV cache.

Two kinds of model, told apart by an `encode` method:
- decoder-only (GPT): `model(input_ids, attention_mask=, position_ids=, cache=)` returns
  `(logits, loss)` with logits (B, T, vocab_size); `model.make_cache()` returns a fresh cache
  (one `nn.attention.KVCache` per layer) that the model extends on every call;
  `model.max_positions` is the longest context it takes.
- encoder-decoder (T5, the 2017 Transformer): `encode(input_ids, attention_mask)` -> memory
  (B, S, C), `decode(decoder_ids, memory, attention_mask, cache=)` -> hidden states,
  `lm_logits(hidden)`, `make_cache()` (a (self-attention, cross-attention) KVCache pair per
  block) and config.{eos,pad,decoder_start}_token_id.
Either is wrapped as a step: the ids so far (N, L) -> the next token's logits (N, V).

Sampling or not, one rule for every model: `do_sample` decides when given. Left at None,
`temperature` decides: above 0 samples, 0 or None is greedy (or beam search when num_beams > 1,
which never samples). `GPT.generate`'s temperature defaults to 1.0 as nanoGPT's does, so
`gpt.generate(idx, max_new_tokens)` samples; every other entry point's defaults to None, so it
is greedy, as in transformers. An argument that would have no effect is an error, never
silently ignored.
"""
import tensorgrad as tg

from .beam_search import beam_search
from .decoding import apply_rules, next_token


# --- batches of prompts ---------------------------------------------------------------------------
def pad_prompts(prompts, pad_token_id=0, device=None):
    """Prompts of different lengths (lists of ids) LEFT-padded into one batch, so that every
    prompt ends at the last column, where generation continues.

    Returns input_ids (B, T) int64 and attention_mask (B, T) int64: 1 at tokens, 0 at padding
    (Hugging Face's convention).
    """
    prompts = [list(p) for p in prompts]
    if not prompts or not all(prompts):
        raise ValueError("pad_prompts: expected a non-empty list of non-empty prompts")
    width = max(len(p) for p in prompts)
    ids = [[pad_token_id] * (width - len(p)) + p for p in prompts]
    mask = [[0] * (width - len(p)) + [1] * len(p) for p in prompts]
    return (tg.tensor(ids, dtype=tg.int64, device=device),
            tg.tensor(mask, dtype=tg.int64, device=device))


def positions_from_mask(attention_mask):
    """Position ids (B, T) that count only real tokens, so a left-padded prompt sees the same
    positions as the unpadded one: cumsum(mask) - 1, and 0 at padding."""
    positions = attention_mask.long().cumsum(-1) - 1
    return positions.clamp(min=0)


# --- the one entry point ----------------------------------------------------------------------
@tg.no_grad()
def generate(model, input_ids, max_new_tokens=20, temperature=None, top_k=None, *, do_sample=None,
             top_p=None, num_beams=1, length_penalty=1.0, early_stopping=False,
             no_repeat_ngram_size=0, repetition_penalty=1.0, num_return_sequences=1,
             eos_token_id=None, pad_token_id=None, attention_mask=None,
             decoder_start_token_id=None, use_cache=True, seed=None):
    """Up to max_new_tokens new tokens for each input; the arguments mean what they mean in
    transformers' `generate`. Runs under no_grad, in eval mode (the mode is restored after).

    input_ids: (B, T) integer ids: the prompts of a decoder-only model, the sources of an
        encoder-decoder one. attention_mask (B, T): 1 at tokens, 0 at padding. Prompts of
        different lengths must be LEFT-padded (see `pad_prompts`); positions then count only
        real tokens, so each row continues exactly as it would alone. Sources may be padded
        on either side.
    do_sample, temperature, top_k, top_p: the rule in the module docstring; a sample is drawn
        from softmax(logits / temperature) restricted to the top_k tokens and/or the nucleus
        top_p. seed: if given, reseeds tensorgrad's generators first (`tg.manual_seed`).
    num_beams > 1: beam search (`beam_search`) with length_penalty, early_stopping (True,
        False or "never"); a decoder-only model needs the prompt and the new tokens within
        max_positions.
    num_return_sequences: sequences per input (beam search: at most num_beams; sampling:
        independent samples; greedy decoding has only one).
    repetition_penalty: CTRL's penalty on every token already in the sequence (the prompt
        included for a decoder-only model). no_repeat_ngram_size: no n-gram occurs twice.
    eos_token_id: an id or a list of ids that end a sequence (kept); later columns of an ended
        row hold pad_token_id. Generation stops when every row has ended. Defaults: the
        model's config, else none (eos) and eos or 0 (pad).
    decoder_start_token_id: an encoder-decoder model's first decoder token (default: config).
    use_cache: feed one new token per step to a KV cache instead of re-running the sequence
        (the tokens are the same). Past a decoder-only model's max_positions the context
        slides (the last max_positions tokens), recomputed each step: learned positions
        cannot slide inside a cache.
    Returns (B * num_return_sequences, L) int64 ids: for a decoder-only model the prompt then
    the new tokens, for an encoder-decoder one the start token then the new tokens.
    """
    if input_ids.ndim != 2 or input_ids.dtype.kind not in "iu":
        raise ValueError(f"generate: input_ids must be (B, T) integer ids, got {input_ids.dtype} "
                         f"of shape {input_ids.shape}")
    if attention_mask is not None and attention_mask.shape != input_ids.shape:
        raise ValueError(f"generate: attention_mask of shape {attention_mask.shape} must match "
                         f"input_ids of shape {input_ids.shape}")
    do_sample, temperature = _sampling(do_sample, temperature, top_k, top_p, num_beams)
    if num_beams == 1 and num_return_sequences > 1 and not do_sample:
        raise ValueError("generate: greedy decoding returns one sequence per input; use "
                         "num_beams >= num_return_sequences or do_sample=True")
    if not 1 <= num_return_sequences or (num_beams > 1 and num_return_sequences > num_beams):
        raise ValueError(f"generate: num_return_sequences={num_return_sequences} must be >= 1 "
                         f"and at most num_beams={num_beams}")
    config = getattr(model, "config", None)
    eos = getattr(config, "eos_token_id", None) if eos_token_id is None else eos_token_id
    eos = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
    pad = getattr(config, "pad_token_id", None) if pad_token_id is None else pad_token_id
    pad = pad if pad is not None else eos[0] if eos else 0
    if seed is not None:
        tg.manual_seed(seed)
    was_training = model.training
    model.eval()
    try:
        copies = num_beams if num_beams > 1 else num_return_sequences
        if hasattr(model, "encode"):
            start = (config.decoder_start_token_id if decoder_start_token_id is None
                     else decoder_start_token_id)
            step = _EncoderDecoderSteps(model, input_ids, attention_mask, copies, use_cache)
            ids = tg.full((input_ids.shape[0] * copies, 1), start, dtype=tg.int64,
                          device=input_ids.device)
        else:
            if decoder_start_token_id is not None:
                raise ValueError("generate: decoder_start_token_id is for encoder-decoder models; "
                                 "a decoder-only model continues its prompt")
            _check_fits(model, input_ids, max_new_tokens, num_beams)
            step = _DecoderOnlySteps(model, attention_mask, copies, use_cache)
            ids = input_ids.repeat_interleave(copies, dim=0) if copies > 1 else input_ids

        def rules(scores, ids):
            return apply_rules(scores, ids, repetition_penalty, no_repeat_ngram_size)

        if num_beams > 1:
            return beam_search(step, ids, num_beams, ids.shape[1] + max_new_tokens, eos, pad,
                               length_penalty, early_stopping, num_return_sequences,
                               reorder=step.reorder, rules=rules)

        def choose(logits):
            return next_token(logits, temperature, top_k, top_p)

        return _extend(step, ids, max_new_tokens, choose, rules, eos, pad)
    finally:
        model.train(was_training)


def _sampling(do_sample, temperature, top_k, top_p, num_beams):
    """(do_sample, temperature) by the module docstring's rule; a sampling argument given to
    greedy decoding or beam search is an error."""
    if do_sample is None:
        do_sample = num_beams == 1 and temperature is not None and temperature > 0
    if do_sample:
        temperature = 1.0 if temperature is None else temperature
        if temperature <= 0:
            raise ValueError(f"generate: sampling needs a temperature > 0, got {temperature}; "
                             f"greedy decoding is do_sample=False")
        if num_beams > 1:
            raise ValueError("generate: beam search does not sample; pass num_beams=1 to "
                             "sample or do_sample=False for beam search")
        return True, temperature
    given = [f"{name}={value}" for name, value in
             (("temperature", temperature), ("top_k", top_k), ("top_p", top_p))
             if value is not None and not (name == "temperature" and value in (0, 1))]
    if given:
        search = "beam search" if num_beams > 1 else "greedy decoding"
        raise ValueError(f"generate: {', '.join(given)} only apply when sampling, and this is "
                         f"{search}; pass do_sample=True (num_beams=1) or leave them out")
    return False, 0.0


def _check_fits(model, input_ids, max_new_tokens, num_beams):
    T = input_ids.shape[1]
    if num_beams > 1 and T + max_new_tokens > model.max_positions:
        raise ValueError(f"generate: beam search needs the prompt ({T}) and max_new_tokens "
                         f"({max_new_tokens}) within max_positions={model.max_positions}")


def _extend(step, ids, max_new_tokens, choose, rules, eos, pad):
    """Greedy decoding or sampling: ids (N, L) extended one token per step by
    choose(rules(logits, ids)); a row ends at an eos token."""
    N, L0 = ids.shape
    # one buffer written a column at a time: a cat per token would copy the whole sequence
    # every step (generate)
    out = tg.full((N, L0 + max_new_tokens), pad, dtype=tg.int64, device=ids.device)
    out[:, :L0] = ids
    done = tg.zeros(N, dtype=tg.bool, device=ids.device)
    for L in range(L0, L0 + max_new_tokens):
        token = choose(rules(step(out[:, :L]), out[:, :L]))  # (N,)
        if eos:
            token = tg.where(done, pad, token)
            for stop in eos:
                done = done | (token == stop)
        out[:, L] = token
        if eos and bool(done.all()):
            return out[:, :L + 1]
    return out


class _DecoderOnlySteps:
    """The next-token logits (N, V) of a decoder-only model for the ids (N, L) so far: the
    prompt's mask grows by a column of ones per new token; with a cache only the columns it
    has not seen are fed, until the context has to slide."""

    def __init__(self, model, attention_mask, copies, use_cache):
        self.model, self.mask, self.seen = model, attention_mask, 0
        if attention_mask is not None and copies > 1:
            self.mask = attention_mask.repeat_interleave(copies, dim=0)
        self.cache = model.make_cache() if use_cache else None

    def __call__(self, ids):
        N, L = ids.shape
        window = self.model.max_positions
        if self.mask is not None and self.mask.shape[1] < L:
            grown = tg.ones(N, L - self.mask.shape[1], dtype=self.mask.dtype,
                            device=self.mask.device)
            self.mask = tg.cat([self.mask, grown], dim=1)  # (N, L)
        mask = self.mask
        if self.cache is not None and L > window:
            self.cache = None  # the context slides from here on: recompute the window each step
        if self.cache is None:
            new, mask = ids[:, -window:], None if mask is None else mask[:, -window:]
        else:
            new, self.seen = ids[:, self.seen:], L
        positions = None if mask is None else positions_from_mask(mask)[:, -new.shape[1]:]
        logits, _ = self.model(new, attention_mask=mask, position_ids=positions, cache=self.cache)
        return logits[:, -1]  # (N, V)

    def reorder(self, indices):
        for layer in self.cache or ():
            layer.reorder(indices)


class _EncoderDecoderSteps:
    """The next-token logits (N, V) of an encoder-decoder model for the decoder ids (N, L) so
    far. The encoder runs once; with a cache only the columns it has not seen are fed, the
    cross-attention keys and values computed on the first step only."""

    def __init__(self, model, input_ids, attention_mask, copies, use_cache):
        self.model, self.mask, self.seen = model, attention_mask, 0
        self.memory = model.encode(input_ids, attention_mask)  # (B, S, C)
        if copies > 1:  # each input's rows side by side: (B * copies, S, C)
            self.memory = self.memory.repeat_interleave(copies, dim=0)
            if attention_mask is not None:
                self.mask = attention_mask.repeat_interleave(copies, dim=0)
        self.cache = model.make_cache() if use_cache else None

    def __call__(self, ids):
        new = ids
        if self.cache is not None:
            new, self.seen = ids[:, self.seen:], ids.shape[1]
        hidden = self.model.decode(new, self.memory, self.mask, cache=self.cache)
        return self.model.lm_logits(hidden[:, -1:])[:, -1]  # only the last position's logits

    def reorder(self, indices):
        # the cross-attention caches hold the memory, equal for every beam of an input
        for self_attention, _ in self.cache or ():
            self_attention.reorder(indices)
