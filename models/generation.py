"""Autoregressive generation for decoder-only language models: greedy decoding, temperature,
top-k (Fan et al., 2018) and nucleus / top-p sampling (Holtzman et al., 2020), stop tokens,
batched prompts and a KV cache.

`generate` works with any model that follows tensorgrad.models' decoder-only convention:
- `model(input_ids, attention_mask=, position_ids=, cache=)` returns `(logits, loss)` with
  logits (B, T, vocab_size) for the T given tokens;
- `model.make_cache()` returns a fresh cache to pass as `cache=` (one `nn.attention.KVCache`
  per layer), which the model extends on every call;
- `model.max_positions` is the longest context the model can take.
"""
import tensorgrad as tg


# --- choosing the next token --------------------------------------------------------------------
def top_k_filter(logits, k):
    """(B, V) logits with everything below each row's k-th largest value set to -inf (ties
    with the k-th value are kept)."""
    if not 0 < k:
        raise ValueError(f"top_k_filter: k must be a positive integer, got {k}")
    if k >= logits.shape[-1]:
        return logits
    kth = logits.topk(k, dim=-1).values[:, -1:]  # (B, 1)
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_filter(logits, p):
    """(B, V) logits keeping, in each row, the most likely tokens whose probabilities first add
    up to at least p (the nucleus; always at least one token); the rest set to -inf."""
    if not 0.0 < p <= 1.0:
        raise ValueError(f"top_p_filter: p must be in (0, 1], got {p}")
    ordered = logits.sort(dim=-1, descending=True).values  # (B, V)
    probs = ordered.softmax(-1)
    mass_before = probs.cumsum(-1) - probs  # probability of the tokens ranked above each one
    kept = (mass_before < p).sum(-1, keepdim=True)  # (B, 1): the nucleus size, >= 1
    smallest_kept = ordered.gather(-1, kept - 1)  # (B, 1)
    return logits.masked_fill(logits < smallest_kept, float("-inf"))


def sample(probs):
    """One index per row of (B, V) probabilities (rows need not be normalised), drawn with
    tensorgrad's generator: the first index whose cumulative probability passes u * total,
    u ~ U[0, 1). Zero-probability indices are never drawn."""
    cdf = probs.cumsum(-1)  # (B, V)
    u = tg.rand(probs.shape[0], 1, dtype=probs.dtype, device=probs.device) * cdf[:, -1:]
    return (cdf <= u).sum(-1).clamp(max=probs.shape[-1] - 1)  # (B,)


def next_token(logits, temperature=1.0, top_k=None, top_p=None):
    """The next token of each row from its (B, V) logits: the argmax when temperature is 0
    (greedy), else a sample from softmax(logits / temperature), restricted by top_k and/or
    top_p."""
    if temperature < 0:
        raise ValueError(f"next_token: temperature must be >= 0, got {temperature}")
    if temperature == 0:
        return logits.argmax(-1)
    logits = logits / temperature
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return sample(logits.softmax(-1))


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


# --- the loop ----------------------------------------------------------------------------------
@tg.no_grad()
def generate(model, input_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None,
             stop_tokens=(), seed=None, attention_mask=None, use_cache=True, pad_token_id=None,
             num_beams=1, length_penalty=1.0, early_stopping=False, no_repeat_ngram_size=0,
             num_return_sequences=1):
    """Extend each prompt by up to max_new_tokens tokens. Runs under no_grad, in eval mode
    (the model's mode is restored afterwards).

    input_ids: (B, T) int64 prompts. Prompts of equal length need no mask. Prompts of different
        lengths must be LEFT-padded (see `pad_prompts`) with attention_mask (B, T): 1 at
        tokens, 0 at padding; positions then count only real tokens, so each row continues
        exactly as it would alone.
    temperature, top_k, top_p: see `next_token`; temperature=0 is greedy decoding.
    stop_tokens: ids that end a row (the stop token is kept); the row's later columns hold
        pad_token_id (default: the first stop token). Generation ends when every row stopped.
    seed: if given, reseeds tensorgrad's generators first (`tg.manual_seed`), so the same call
        samples the same tokens.
    use_cache: keep each layer's keys and values (`model.make_cache()`) and feed one new token
        per step, instead of re-running the whole sequence; the tokens are the same.
        Past `model.max_positions` tokens the context slides (the last max_positions tokens),
        and each step recomputes that window: learned positions cannot slide inside a cache.
    num_beams > 1: beam search instead (`beam_search`, Hugging Face's rules; the first stop
        token is its end of sequence), with length_penalty, early_stopping,
        no_repeat_ngram_size and num_return_sequences as in `generate_seq2seq`; the prompt
        and the new tokens must fit max_positions.
    Returns (B, T + n) int64 ids, the prompts followed by n <= max_new_tokens new tokens
    (beam search: B * num_return_sequences rows).
    """
    if input_ids.ndim != 2 or input_ids.dtype.kind not in "iu":
        raise ValueError(f"generate: input_ids must be (B, T) integer ids, got {input_ids.dtype} "
                         f"of shape {input_ids.shape}")
    if attention_mask is not None and attention_mask.shape != input_ids.shape:
        raise ValueError(f"generate: attention_mask of shape {attention_mask.shape} must match "
                         f"input_ids of shape {input_ids.shape}")
    if seed is not None:
        tg.manual_seed(seed)
    stop_tokens = list(stop_tokens)
    pad = pad_token_id if pad_token_id is not None else (stop_tokens[0] if stop_tokens else 0)
    window = model.max_positions
    was_training = model.training
    model.eval()
    try:
        if num_beams > 1:
            return _beam_generate(model, input_ids, max_new_tokens, attention_mask, use_cache,
                                  num_beams, stop_tokens, pad, length_penalty, early_stopping,
                                  no_repeat_ngram_size, num_return_sequences)
        mask = attention_mask
        cache = model.make_cache() if use_cache else None
        # The prompt and each step's (B, 1) column, joined once at the end: a cat per token
        # would copy the whole sequence every step (generate). Without a cache, `ids` is
        # joined again whenever the model has to re-read the sequence.
        columns, length = [input_ids], input_ids.shape[1]
        unseen = input_ids  # the columns the cache has not seen yet
        done = tg.zeros(input_ids.shape[0], dtype=tg.bool, device=input_ids.device)
        for _ in range(max_new_tokens):
            if cache is not None and length > window:
                cache = None  # the context slides from here on: recompute the window each step
            if cache is None:
                ids = tg.cat(columns, dim=1) if len(columns) > 1 else columns[0]
                columns = [ids]
                new, step_mask = ids[:, -window:], None if mask is None else mask[:, -window:]
            else:
                new, step_mask = unseen, mask
            positions = None
            if step_mask is not None:
                positions = positions_from_mask(step_mask)[:, -new.shape[1]:]
            logits, _ = model(new, attention_mask=step_mask, position_ids=positions, cache=cache)
            last = logits[:, -1:] if logits.shape[1] > 1 else logits  # (B, 1, V)
            if temperature == 0:  # greedy: the (B, 1) column straight from argmax (generate)
                unseen = last.argmax(-1)
            else:
                unseen = next_token(last[:, 0], temperature, top_k, top_p).unsqueeze(1)  # (B, 1)
            if stop_tokens:
                unseen = tg.where(done.unsqueeze(1), pad, unseen)
            columns.append(unseen)
            length += 1
            if mask is not None:
                mask = tg.cat([mask, tg.ones_like(mask[:, :1])], dim=1)
            if stop_tokens:
                token = unseen.squeeze(1)  # (B,)
                for stop in stop_tokens:
                    done = done | (token == stop)
                if bool(done.all()):
                    break
        return tg.cat(columns, dim=1) if len(columns) > 1 else columns[0]
    finally:
        model.train(was_training)


# --- encoder-decoder models and beam search ------------------------------------------------------
def banned_ngram_mask(ids, n, vocab_size):
    """(N, V) bool, True at the tokens that would complete, at the end of each row of ids
    (N, L), an n-gram that already occurs in that row (`no_repeat_ngram_size`; Paulus et al.,
    2018). Nothing is banned while a row is shorter than n."""
    N, L = ids.shape
    banned = tg.zeros(N, vocab_size, dtype=tg.bool, device=ids.device)
    if n <= 0 or L + 1 < n:
        return banned
    rows, tokens = [], []
    for r, row in enumerate(ids.tolist()):
        prefix = row[L + 1 - n:] if n > 1 else []  # the n - 1 tokens the next one extends
        for start in range(L + 1 - n):
            if row[start:start + n - 1] == prefix and row[start + n - 1] < vocab_size:
                rows.append(r)
                tokens.append(row[start + n - 1])
    if rows:
        banned[tg.tensor(rows, device=ids.device), tg.tensor(tokens, device=ids.device)] = True
    return banned


def _no_repeat(logits, ids, n):
    if not n:
        return logits
    return logits.masked_fill(banned_ngram_mask(ids, n, logits.shape[-1]), float("-inf"))


def _gather_rows(x, index):
    """x (B, K, ...) rows picked per batch entry by index (B, J) -> (B, J, ...)."""
    offsets = tg.arange(x.shape[0], device=x.device).unsqueeze(-1) * x.shape[1]  # (B, 1)
    flat = x.reshape((x.shape[0] * x.shape[1],) + tuple(x.shape[2:]))
    return flat[(index + offsets).reshape(-1)].reshape(tuple(index.shape) + tuple(x.shape[2:]))


_MASKED = -1.0e9  # what Hugging Face adds to a score to take it out of the running


@tg.no_grad()
def beam_search(step, input_ids, num_beams, max_length, eos_token_id, pad_token_id=0,
                length_penalty=1.0, early_stopping=False, no_repeat_ngram_size=0,
                num_return_sequences=1, reorder=None):
    """Beam search over B inputs with num_beams hypotheses each, by Hugging Face's rules, so
    that the same model gives the same token ids as `transformers`' generate.

    step(ids (B * num_beams, L)) -> next-token logits (B * num_beams, V), ids being every
        hypothesis so far (the model may feed only the new column to a cache). Before each
        later call, `reorder(indices)` (B * num_beams,) tells it which earlier row each
        hypothesis continues (to reorder a KV cache).
    input_ids: (B * num_beams, L0), each prompt repeated num_beams times (the decoder's start
        token for encoder-decoder models). max_length: L0 plus the most tokens to add.
    Each step every beam proposes its tokens with their summed log-probabilities and the best
    2 num_beams of all (beam, token) pairs are ranked. Those among the first num_beams that end
    in eos_token_id (or reach max_length) are finished hypotheses, scored by
    sum log p / generated_length ** length_penalty (the eos counted, the prompt not), kept if
    among the num_beams best finished so far; the best num_beams unfinished ones continue.
    The search ends when every input's best running beam cannot beat its worst kept finished
    one (assuming, for early_stopping=False, that its score stays where it is; "never": the
    best a longer sequence could reach), when early_stopping=True and num_beams hypotheses
    are finished, or at max_length.
    Returns (B * num_return_sequences, L) int64: each input's best finished hypotheses, best
    first, padded with pad_token_id to the longest.
    """
    N, prompt_len = input_ids.shape
    K, device = num_beams, input_ids.device
    if N % K or not 1 <= num_return_sequences <= K:
        raise ValueError(f"beam_search: {N} rows must be B inputs x num_beams={K}, and "
                         f"num_return_sequences={num_return_sequences} at most num_beams")
    B, keep = N // K, 2 * K  # 2 K candidates leave K unfinished ones even if K end in eos
    running = input_ids.reshape(B, K, prompt_len)
    # only the first beam starts live, so that the K copies do not propose the same tokens
    running_scores = tg.tensor([[0.0] + [_MASKED] * (K - 1)] * B, device=device)  # (B, K)
    finished = tg.full((B, K, max_length), pad_token_id, dtype=tg.int64, device=device)
    finished_scores = tg.full((B, K), _MASKED, device=device)
    finished_len = tg.zeros(B, K, dtype=tg.int64, device=device)
    is_finished = tg.zeros(B, K, dtype=tg.bool, device=device)
    improvable = tg.ones(B, 1, dtype=tg.bool, device=device)
    top_k_mask = tg.arange(keep, device=device) < K  # (2K,): only these may finish
    cur_len = prompt_len
    while True:
        flat = running.reshape(N, cur_len)
        logp = _no_repeat(step(flat).to(tg.float32).log_softmax(-1), flat, no_repeat_ngram_size)
        V = logp.shape[-1]
        totals = (logp.reshape(B, K, V) + running_scores.unsqueeze(-1)).reshape(B, K * V)
        top_scores, top = totals.topk(keep, dim=-1)  # (B, 2K), best first
        source, token = top // V, top % V  # the beam each candidate extends, its new token
        candidates = tg.cat([_gather_rows(running, source), token.unsqueeze(-1)], dim=-1)
        hits = (token == eos_token_id) | (cur_len + 1 >= max_length)  # (B, 2K)

        # the K best candidates that did not stop run on
        alive = top_scores + hits.to(tg.float32) * _MASKED
        chosen = alive.topk(K, dim=-1).indices  # (B, K)
        running = _gather_rows(candidates, chosen)  # (B, K, cur_len + 1)
        running_scores = alive.gather(1, chosen)
        origin = (source.gather(1, chosen) + tg.arange(B, device=device).unsqueeze(-1) * K)

        # candidates that stopped join the finished ones if they rank among the K best
        just_finished = hits & top_k_mask
        scores = top_scores / float(cur_len + 1 - prompt_len) ** length_penalty
        full = is_finished.all(-1, keepdim=True) & (early_stopping is True)
        scores = scores + (full | ~improvable).to(tg.float32) * _MASKED \
            + (~just_finished).to(tg.float32) * _MASKED
        padded = tg.cat([candidates, tg.full((B, keep, max_length - cur_len - 1), pad_token_id,
                                             dtype=tg.int64, device=device)], dim=-1)
        merged = tg.cat([finished_scores, scores], dim=1)  # (B, 3K)
        best = merged.topk(K, dim=-1).indices
        finished = _gather_rows(tg.cat([finished, padded], dim=1), best)
        finished_scores = merged.gather(1, best)
        new_len = tg.full((B, keep), cur_len + 1, dtype=tg.int64, device=device)
        finished_len = tg.cat([finished_len, new_len], dim=1).gather(1, best)
        is_finished = tg.cat([is_finished, just_finished], dim=1).gather(1, best)

        cur_len += 1
        best_len = max_length - prompt_len if early_stopping == "never" and length_penalty > 0 \
            else cur_len - prompt_len
        best_running = running_scores[:, :1] / float(best_len) ** length_penalty  # (B, 1)
        worst_kept = tg.where(is_finished, finished_scores.min(1, keepdim=True).values, _MASKED)
        improvable = improvable & (best_running > worst_kept).any(-1, keepdim=True)
        all_done = bool(is_finished.all()) and early_stopping is True
        if not bool(improvable.any()) or all_done or bool(hits.all()):
            break
        if reorder is not None:
            reorder(origin.reshape(N))
    length = int(finished_len[:, :num_return_sequences].max())
    return finished[:, :num_return_sequences, :length].reshape(B * num_return_sequences, length)


@tg.no_grad()
def generate_seq2seq(model, input_ids, max_new_tokens=20, attention_mask=None, do_sample=False,
                     temperature=1.0, top_k=None, top_p=None, num_beams=1, length_penalty=1.0,
                     early_stopping=False, no_repeat_ngram_size=0, num_return_sequences=1,
                     eos_token_id=None, pad_token_id=None, decoder_start_token_id=None,
                     seed=None, use_cache=True):
    """Decode up to max_new_tokens tokens for each source sequence with an encoder-decoder
    model; the arguments mean what they mean in Hugging Face's `generate`.

    The model provides `encode(input_ids, attention_mask)` -> memory (B, S, C),
    `decode(decoder_ids, memory, attention_mask, cache=)` -> hidden states, `lm_logits(hidden)`,
    `make_cache()` (a (self-attention, cross-attention) KVCache pair per block) and
    config.{eos,pad,decoder_start}_token_id. The encoder runs once; with use_cache the decoder
    feeds one new token per step, its self-attention keys and values growing in the cache and
    the cross-attention ones computed on the first step only (the tokens equal use_cache=False).
    input_ids (B, S) and attention_mask (B, S), 1 at tokens, 0 at padding (right-padding is
        fine: nothing is generated after the source).
    Greedy by default; do_sample=True samples (temperature, top_k, top_p as `next_token`,
        seed as in `generate`), num_return_sequences samples per input; num_beams > 1 runs
        `beam_search` (length_penalty, early_stopping, num_return_sequences <= num_beams).
    no_repeat_ngram_size: no n-gram occurs twice in an output.
    Returns (B * num_return_sequences, 1 + n) int64: the start token, then the tokens; rows
    that ended (eos) early are padded with pad_token_id.
    """
    c = model.config
    eos = c.eos_token_id if eos_token_id is None else eos_token_id
    pad = c.pad_token_id if pad_token_id is None else pad_token_id
    start = c.decoder_start_token_id if decoder_start_token_id is None else decoder_start_token_id
    if input_ids.ndim != 2 or input_ids.dtype.kind not in "iu":
        raise ValueError(f"generate_seq2seq: input_ids must be (B, S) integer ids, got "
                         f"{input_ids.dtype} of shape {input_ids.shape}")
    if num_beams == 1 and num_return_sequences > 1 and not do_sample:
        raise ValueError("generate_seq2seq: greedy decoding returns one sequence per input; "
                         "use num_beams >= num_return_sequences or do_sample=True")
    if seed is not None:
        tg.manual_seed(seed)
    was_training = model.training
    model.eval()
    try:
        memory = model.encode(input_ids, attention_mask)  # (B, S, C), once
        copies = num_beams if num_beams > 1 else num_return_sequences
        if copies > 1:  # each input's rows side by side: (B * copies, S, C)
            memory = memory.repeat_interleave(copies, dim=0)
            if attention_mask is not None:
                attention_mask = attention_mask.repeat_interleave(copies, dim=0)
        decoder = _DecoderSteps(model, memory, attention_mask, use_cache)
        ids = tg.full((memory.shape[0], 1), start, dtype=tg.int64, device=memory.device)
        if num_beams > 1:
            return beam_search(decoder, ids, num_beams, 1 + max_new_tokens, eos, pad,
                               length_penalty, early_stopping, no_repeat_ngram_size,
                               num_return_sequences, reorder=decoder.reorder)
        done = tg.zeros(ids.shape[0], dtype=tg.bool, device=ids.device)
        for _ in range(max_new_tokens):
            logits = _no_repeat(decoder(ids), ids, no_repeat_ngram_size)
            token = next_token(logits, temperature if do_sample else 0.0, top_k, top_p)
            token = tg.where(done, pad, token)  # (B,)
            ids = tg.cat([ids, token.unsqueeze(1)], dim=1)
            done = done | (token == eos)
            if bool(done.all()):
                break
        return ids
    finally:
        model.train(was_training)


class _DecoderSteps:
    """The next-token logits (N, V) of an encoder-decoder model for decoder ids (N, L), the
    memory fixed; with a cache only the columns it has not seen are fed."""

    def __init__(self, model, memory, attention_mask, use_cache):
        self.model, self.memory, self.mask = model, memory, attention_mask
        self.cache = model.make_cache() if use_cache else None

    def __call__(self, ids):
        new = ids if self.cache is None else ids[:, len(self.cache[0][0]):]
        hidden = self.model.decode(new, self.memory, self.mask, cache=self.cache)
        return self.model.lm_logits(hidden[:, -1:])[:, -1]  # only the last position's logits

    def reorder(self, indices):
        # the cross-attention caches hold the memory, equal for every beam of an input
        if self.cache is not None:
            for self_attention, _ in self.cache:
                self_attention.reorder(indices)


def _beam_generate(model, input_ids, max_new_tokens, attention_mask, use_cache, num_beams,
                   stop_tokens, pad, length_penalty, early_stopping, no_repeat_ngram_size,
                   num_return_sequences):
    """`generate`'s beam search for a decoder-only model: each prompt repeated num_beams
    times, the mask growing by one column per step, the KV cache reordered with the beams."""
    B, T = input_ids.shape
    if T + max_new_tokens > model.max_positions:
        raise ValueError(f"generate: beam search needs the prompt ({T}) and max_new_tokens "
                         f"({max_new_tokens}) within max_positions={model.max_positions}")
    if not stop_tokens:
        raise ValueError("generate: beam search needs stop_tokens (the first ends a sequence)")
    ids = input_ids.repeat_interleave(num_beams, dim=0)
    mask = None if attention_mask is None else attention_mask.repeat_interleave(num_beams, 0)
    cache = model.make_cache() if use_cache else None

    def step(rows):
        past = len(cache[0]) if cache else 0
        step_mask, positions = None, None
        if mask is not None:
            grown = rows.shape[1] - mask.shape[1]
            step_mask = tg.cat([mask, tg.ones(mask.shape[0], grown, dtype=mask.dtype,
                                              device=mask.device)], dim=1)
            positions = positions_from_mask(step_mask)[:, past:]
        logits, _ = model(rows[:, past:], attention_mask=step_mask, position_ids=positions,
                          cache=cache)
        return logits[:, -1]

    def reorder(indices):
        for layer in cache or ():
            layer.reorder(indices)

    return beam_search(step, ids, num_beams, T + max_new_tokens, stop_tokens[0], pad,
                       length_penalty, early_stopping, no_repeat_ngram_size,
                       num_return_sequences, reorder=reorder)
