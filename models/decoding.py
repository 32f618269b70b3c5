"""The rules that turn one step's next-token scores into a choice, as transformers' logits
processors do: the repetition penalty (Keskar et al., 2019), the n-gram ban (Paulus et al.,
2018), temperature, top-k (Fan et al., 2018) and nucleus / top-p sampling (Holtzman et al.,
2020)."""
import tensorgrad as tg


# --- rules that read the ids so far ---------------------------------------------------------------
def penalize_repetition(scores, ids, penalty):
    """(N, V) scores with every token already in the row of ids (N, L) made less likely: a
    positive score divided by penalty, a negative one multiplied (CTRL's rule, as transformers
    applies it)."""
    if penalty <= 0:
        raise ValueError(f"repetition_penalty must be a positive float, got {penalty}")
    seen = tg.zeros(scores.shape, dtype=scores.dtype, device=scores.device).scatter(1, ids, 1.0)
    penalized = tg.where(scores < 0, scores * penalty, scores / penalty)
    return tg.where(seen > 0, penalized, scores)


def banned_ngram_mask(ids, n, vocab_size):
    """(N, V) bool, True at the tokens that would complete, at the end of each row of ids
    (N, L), an n-gram that already occurs in that row (`no_repeat_ngram_size`). Nothing is
    banned while a row is shorter than n."""
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


def apply_rules(scores, ids, repetition_penalty=1.0, no_repeat_ngram_size=0):
    """(N, V) scores after the rules that read the ids (N, L) so far, in transformers' order:
    the repetition penalty, then the n-gram ban (-inf)."""
    if repetition_penalty != 1.0:
        scores = penalize_repetition(scores, ids, repetition_penalty)
    if no_repeat_ngram_size:
        banned = banned_ngram_mask(ids, no_repeat_ngram_size, scores.shape[-1])
        scores = scores.masked_fill(banned, float("-inf"))
    return scores


# --- sampling -------------------------------------------------------------------------------------
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
