"""What every stage after pre-training needs from a GPT: batches of prompt + response sequences
with a mask that says which tokens are the response, the log-probability of each token under a
model, the final hidden states (for the value and reward heads), and sampling responses.

A batch is a `Sequences`: input_ids (B, T), attention_mask (B, T) with 1 at real tokens (prompt
and response, both paddings are 0), and response_mask (B, T) with 1 at the response tokens
(including the <eos> that ends each one). Prompts may be left-padded (as `generate` wants them)
and responses right-padded; position ids always count real tokens only, so a row means the same
whatever padding surrounds it.
"""
import dataclasses

import tensorgrad as tg

from ..generation import generate, pad_prompts, positions_from_mask


@dataclasses.dataclass
class Sequences:
    input_ids: tg.Tensor  # (B, T) int64
    attention_mask: tg.Tensor  # (B, T) int64
    response_mask: tg.Tensor  # (B, T) int64, a subset of attention_mask

    def __len__(self):
        return self.input_ids.shape[0]

    def select(self, rows):
        """The sequences at the given row indices (a list of ints)."""
        index = tg.tensor(rows, dtype=tg.int64, device=self.input_ids.device)
        return Sequences(self.input_ids[index], self.attention_mask[index],
                         self.response_mask[index])


def encode_pairs(tokenizer, prompts, responses, device=None):
    """Prompt and response strings -> right-padded `Sequences`, each response followed by <eos>."""
    rows, masks = [], []
    for prompt, response in zip(prompts, responses):
        p, r = tokenizer.encode(prompt), tokenizer.encode(response) + [tokenizer.eos_id]
        rows.append(p + r)
        masks.append([0] * len(p) + [1] * len(r))
    width = max(len(r) for r in rows)
    pad = [width - len(r) for r in rows]
    ids = [r + [tokenizer.pad_id] * n for r, n in zip(rows, pad)]
    attention = [[1] * len(r) + [0] * n for r, n in zip(rows, pad)]
    response = [m + [0] * n for m, n in zip(masks, pad)]
    as_tensor = lambda x: tg.tensor(x, dtype=tg.int64, device=device)
    return Sequences(as_tensor(ids), as_tensor(attention), as_tensor(response))


def forward(model, seqs):
    """Run a GPT over `Sequences`. Returns (logits (B, T, V), hidden (B, T, C)): hidden is the
    output of the final LayerNorm, the features the LM head reads, captured with a forward hook
    so GPT's own forward runs unchanged."""
    captured = {}

    def keep(module, inputs, output):
        captured["hidden"] = output

    with model.ln_f.register_forward_hook(keep):
        logits, _ = model(seqs.input_ids, attention_mask=seqs.attention_mask,
                          position_ids=positions_from_mask(seqs.attention_mask))
    return logits, captured["hidden"]


def token_logprobs(logits, input_ids):
    """log p(token t | tokens < t) for t = 1 .. T-1: logits (B, T, V), input_ids (B, T) ->
    (B, T-1), column t-1 holding token t's log-probability (the first token has none)."""
    logp = logits[:, :-1].log_softmax(-1)  # (B, T-1, V): the prediction made at each position
    return logp.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)  # (B, T-1)


def shifted_response_mask(seqs):
    """The response mask aligned with `token_logprobs`: (B, T-1) float, 1 where the predicted
    token is a response token."""
    return seqs.response_mask[:, 1:].float()


def sequence_logprob(model, seqs):
    """Sum over the response tokens of log p(token | everything before): (B,). The quantity
    DPO compares between the policy and the reference."""
    logits, _ = forward(model, seqs)
    return (token_logprobs(logits, seqs.input_ids) * shifted_response_mask(seqs)).sum(-1)


def last_token_index(attention_mask):
    """The column of each row's last real token: (B, T) mask -> (B,) int64. Works for left,
    right or both paddings (positions are increasing, so the last 1 has the largest index)."""
    T = attention_mask.shape[1]
    columns = tg.arange(T, device=attention_mask.device).unsqueeze(0)  # (1, T)
    return (columns * attention_mask.long()).argmax(-1)


@tg.no_grad()
def sample(model, tokenizer, prompts, max_new_tokens, temperature=1.0, seed=None):
    """Responses to prompt strings, sampled at the given temperature (0: greedy) and stopped at
    <eos>. Returns (Sequences: left-padded prompts, then the responses right-padded, texts: the
    decoded responses without <eos>)."""
    device = model.wte.weight.device
    prompt_ids, prompt_mask = pad_prompts([tokenizer.encode(p) for p in prompts],
                                          tokenizer.pad_id, device=device)
    out = generate(model, prompt_ids, max_new_tokens, temperature=temperature,
                   eos_token_id=tokenizer.eos_id, pad_token_id=tokenizer.pad_id,
                   attention_mask=prompt_mask, seed=seed)
    width = prompt_ids.shape[1]
    new = out[:, width:]  # (B, n)
    # A response runs up to and including its first <eos>: the tokens before it count, and so
    # does the <eos> itself (the policy chose to stop); everything after is padding.
    is_eos = (new == tokenizer.eos_id).long()
    eos_seen_before = is_eos.cumsum(-1) - is_eos  # how many <eos> came strictly earlier
    response = (eos_seen_before == 0).long()
    seqs = Sequences(out, tg.cat([prompt_mask, response], dim=1),
                     tg.cat([tg.zeros_like(prompt_mask), response], dim=1))
    texts = [tokenizer.decode_response(row) for row in new.tolist()]
    return seqs, texts


@tg.no_grad()
def kl_to_reference(model, reference, tokenizer, prompts, max_new_tokens, seed=None):
    """KL(model || reference) per response, estimated on responses sampled from the model: the
    mean over samples of sum_t log p(y_t) - log p_ref(y_t) over the response tokens (the k1
    estimate, unbiased for the sequence-level KL)."""
    seqs, _ = sample(model, tokenizer, prompts, max_new_tokens, temperature=1.0, seed=seed)
    mask = shifted_response_mask(seqs)
    logp = token_logprobs(forward(model, seqs)[0], seqs.input_ids)
    ref_logp = token_logprobs(forward(reference, seqs)[0], seqs.input_ids)
    return ((logp - ref_logp) * mask).sum(-1).mean().item()


def clone(model):
    """A copy of a GPT with its own parameters (the frozen reference, a fresh policy)."""
    weight = model.wte.weight
    copy = type(model)(model.config, device=weight.device, dtype=weight.dtype)
    copy.load_state_dict(model.state_dict())
    return copy
