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
             stop_tokens=(), seed=None, attention_mask=None, use_cache=True, pad_token_id=None):
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
    Returns (B, T + n) int64 ids, the prompts followed by n <= max_new_tokens new tokens.
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
        ids, mask = input_ids, attention_mask
        cache = model.make_cache() if use_cache else None
        unseen = ids  # the columns the cache has not seen yet
        done = tg.zeros(ids.shape[0], dtype=tg.bool, device=ids.device)
        for _ in range(max_new_tokens):
            if cache is not None and ids.shape[1] > window:
                cache = None  # the context slides from here on: recompute the window each step
            if cache is None:
                new, step_mask = ids[:, -window:], None if mask is None else mask[:, -window:]
            else:
                new, step_mask = unseen, mask
            positions = None
            if step_mask is not None:
                positions = positions_from_mask(step_mask)[:, -new.shape[1]:]
            logits, _ = model(new, attention_mask=step_mask, position_ids=positions, cache=cache)
            token = next_token(logits[:, -1, :], temperature, top_k, top_p)  # (B,)
            if stop_tokens:
                token = tg.where(done, pad, token)
            unseen = token.unsqueeze(1)  # (B, 1)
            ids = tg.cat([ids, unseen], dim=1)
            if mask is not None:
                mask = tg.cat([mask, tg.ones_like(mask[:, :1])], dim=1)
            if stop_tokens:
                for stop in stop_tokens:
                    done = done | (token == stop)
                if bool(done.all()):
                    break
        return ids
    finally:
        model.train(was_training)
