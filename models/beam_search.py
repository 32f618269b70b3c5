"""Beam search with the scoring, length penalty and stopping rules of transformers' `generate`,
for any model that gives the next token's logits for a batch of hypotheses."""
import tensorgrad as tg


def _gather_rows(x, index):
    """x (B, K, ...) rows picked per batch entry by index (B, J) -> (B, J, ...)."""
    offsets = tg.arange(x.shape[0], device=x.device).unsqueeze(-1) * x.shape[1]  # (B, 1)
    flat = x.reshape((x.shape[0] * x.shape[1],) + tuple(x.shape[2:]))
    return flat[(index + offsets).reshape(-1)].reshape(tuple(index.shape) + tuple(x.shape[2:]))


_MASKED = -1.0e9  # what Hugging Face adds to a score to take it out of the running


@tg.no_grad()
def beam_search(step, input_ids, num_beams, max_length, eos_token_id=None, pad_token_id=0,
                length_penalty=1.0, early_stopping=False, num_return_sequences=1, reorder=None,
                rules=None):
    """Beam search over B inputs with num_beams hypotheses each, by Hugging Face's rules, so
    that the same model gives the same token ids as `transformers`' generate.

    step(ids (B * num_beams, L)) -> next-token logits (B * num_beams, V), ids being every
        hypothesis so far (the model may feed only the new column to a cache). Before each
        later call, `reorder(indices)` (B * num_beams,) tells it which earlier row each
        hypothesis continues (to reorder a KV cache).
    rules(scores, ids) -> scores: applied to each step's log-probabilities (N, V), as
        transformers applies its logits processors (`decoding.apply_rules`).
    eos_token_id: an id, a list of ids or None (hypotheses then end only at max_length).
    input_ids: (B * num_beams, L0), each prompt repeated num_beams times (the decoder's start
        token for encoder-decoder models). max_length: L0 plus the most tokens to add.
    Each step every beam proposes its tokens with their summed log-probabilities and the best
    2 num_beams of all (beam, token) pairs are ranked. Those among the first num_beams that end
    in an eos_token_id (or reach max_length) are finished hypotheses, scored by
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
    eos_ids = [] if eos_token_id is None else [eos_token_id] if isinstance(eos_token_id, int) \
        else list(eos_token_id)
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
        logp = step(flat).to(tg.float32).log_softmax(-1)
        if rules is not None:
            logp = rules(logp, flat)
        V = logp.shape[-1]
        totals = (logp.reshape(B, K, V) + running_scores.unsqueeze(-1)).reshape(B, K * V)
        top_scores, top = totals.topk(keep, dim=-1)  # (B, 2K), best first
        source, token = top // V, top % V  # the beam each candidate extends, its new token
        candidates = tg.cat([_gather_rows(running, source), token.unsqueeze(-1)], dim=-1)
        hits = tg.full(token.shape, cur_len + 1 >= max_length, dtype=tg.bool, device=device)
        for eos in eos_ids:
            hits = hits | (token == eos)  # (B, 2K)

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
