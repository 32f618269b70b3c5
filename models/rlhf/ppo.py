"""Reinforcement learning from a reward with a KL penalty: PPO (Schulman et al., 2017) as
Ziegler et al. (2019) and InstructGPT (Ouyang et al., 2022) apply it to a language model.

Each iteration samples responses from the policy, scores each one at its end (a judge or a
reward model), and gives every response token the reward

    r_t = -beta * KL_t(policy || reference)  (+ the score, on the last response token)

where the reference is the frozen SFT model and KL_t is a per-token estimate of the KL from the
sampled token's log-probabilities. Generalised advantage estimation (Schulman et al., 2016)
turns rewards and the value head's predictions into advantages; several epochs of minibatch
updates on the clipped surrogate objective and a clipped value loss follow. beta is fixed, or
adapted towards a target KL (Ziegler et al., 2019).

beta weighs the KL against the score, so it only means something on a known score scale:
normalise a reward model first (`RewardModel.normalize_`, mean 0 and std 1 on the starting
policy's samples). Measured in examples/rlhf.py: a reward model left at its trained scale (std
3.3) made beta = 0.2 act like 0.06, and PPO over-optimised it (held-out exact accuracy peaked at
99% in iteration 3 and fell to 73% by iteration 20, KL 3 nats); normalised, the same run ends
at 96% with KL 0.6.
"""
import dataclasses

import tensorgrad as tg
from tensorgrad import nn

from .lm import Sequences, forward, last_token_index, sample, shifted_response_mask, \
    token_logprobs


# --- the pieces of the objective -----------------------------------------------------------------
def kl_estimate(logprobs, ref_logprobs, estimator="k1"):
    """A per-token estimate of KL(p || q) from log p and log q of tokens sampled from p
    (Schulman's "Approximating KL divergence"): 'k1' = log p - log q (unbiased, can be negative),
    'k2' = (log p - log q)^2 / 2 (biased, low variance), 'k3' = q/p - 1 - log(q/p) (unbiased and
    never negative). Elementwise over tensors of the same shape."""
    log_ratio = logprobs - ref_logprobs  # log p/q
    if estimator == "k1":
        return log_ratio
    if estimator == "k2":
        return 0.5 * log_ratio ** 2
    if estimator == "k3":
        return (-log_ratio).exp() - 1 + log_ratio
    raise ValueError(f"kl_estimate: unknown estimator {estimator!r}; expected 'k1', 'k2' or 'k3'")


def masked_mean(x, mask):
    return (x * mask).sum() / mask.sum().clamp(min=1)


def whiten(x, mask, eps=1e-8):
    """x with mean 0 and standard deviation 1 over the masked entries (0 elsewhere)."""
    mean = masked_mean(x, mask)
    var = masked_mean((x - mean) ** 2, mask)
    return (x - mean) / (var + eps).sqrt() * mask


@tg.no_grad()
def gae(rewards, values, mask, gamma=1.0, lam=0.95):
    """Generalised advantage estimation over (B, T) rewards and values, mask (B, T) marking the
    steps of each episode (a contiguous run per row; the step after the run is terminal).

    delta_t = r_t + gamma * V_{t+1} - V_t,  A_t = delta_t + gamma * lam * A_{t+1},
    with V and A zero after the episode. Returns (advantages, returns = advantages + values),
    both (B, T) and 0 outside the mask.
    """
    B, T = rewards.shape
    next_value = tg.zeros(B, dtype=values.dtype, device=values.device)
    next_advantage = tg.zeros_like(next_value)
    columns = []
    for t in reversed(range(T)):
        m = mask[:, t]
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        advantage = (delta + gamma * lam * next_advantage) * m
        columns.append(advantage)
        next_value, next_advantage = values[:, t] * m, advantage
    advantages = tg.stack(columns[::-1], dim=1)  # (B, T)
    return advantages, (advantages + values) * mask


def clipped_policy_loss(logprobs, old_logprobs, advantages, mask, clip=0.2):
    """PPO's clipped surrogate, as a loss to minimise: the mean over masked tokens of
    max(-A * ratio, -A * clip(ratio, 1 - clip, 1 + clip)), ratio = p_new / p_old of the token.
    Returns (loss, the fraction of tokens where the clipped term was the one taken)."""
    ratio = (logprobs - old_logprobs).exp()
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1 - clip, 1 + clip)
    loss = masked_mean(tg.maximum(unclipped, clipped), mask)
    return loss, masked_mean((clipped > unclipped).float(), mask)


def clipped_value_loss(values, old_values, returns, mask, clip=0.2):
    """Half the mean squared error to the returns, the larger of the unclipped one and the one
    whose prediction moved at most `clip` from the rollout's (the value side of PPO's clip)."""
    moved = old_values + (values - old_values).clamp(-clip, clip)
    worst = tg.maximum((values - returns) ** 2, (moved - returns) ** 2)
    return 0.5 * masked_mean(worst, mask)


class FixedKLController:
    """beta stays where it is set."""

    def __init__(self, beta):
        self.beta = beta

    def update(self, kl, n_steps):
        pass


class AdaptiveKLController:
    """Ziegler et al. (2019): beta *= 1 + clip(KL / target - 1, -0.2, 0.2) * n_steps / horizon,
    so the measured KL per sequence drifts towards `target`."""

    def __init__(self, beta, target, horizon=10_000):
        self.beta, self.target, self.horizon = beta, target, horizon

    def update(self, kl, n_steps):
        error = min(max(kl / self.target - 1, -0.2), 0.2)
        self.beta *= 1 + error * n_steps / self.horizon


# --- policy and rollouts ----------------------------------------------------------------------
class PolicyWithValue(nn.Module):
    """A GPT policy sharing its trunk with a value head (Linear n_embd -> 1 on the final hidden
    states). `Sequences` -> (log-probs (B, T-1) of tokens 1..T-1, values (B, T-1)): column t-1
    belongs to the step that chooses token t, its value is read at position t-1.

    Parameters: `lm` (the GPT), `value_head`.
    """

    def __init__(self, lm):
        super().__init__()
        self.lm = lm
        weight = lm.wte.weight
        self.value_head = nn.Linear(lm.config.n_embd, 1, device=weight.device, dtype=weight.dtype)
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)

    def forward(self, seqs):
        logits, hidden = forward(self.lm, seqs)  # (B, T, V), (B, T, C)
        values = self.value_head(hidden[:, :-1]).squeeze(-1)  # (B, T-1)
        return token_logprobs(logits, seqs.input_ids), values


@dataclasses.dataclass
class Rollout:
    """A batch of sampled responses and everything PPO computes from them before updating;
    per-token tensors are (B, T-1), aligned with `token_logprobs`."""
    seqs: Sequences
    mask: tg.Tensor  # 1 at the response tokens
    logprobs: tg.Tensor  # under the policy that sampled them
    ref_logprobs: tg.Tensor
    values: tg.Tensor
    rewards: tg.Tensor
    advantages: tg.Tensor
    returns: tg.Tensor
    scores: tg.Tensor  # (B,) the judge's or reward model's score of each response
    texts: list

    def select(self, rows):
        index = tg.tensor(rows, dtype=tg.int64, device=self.mask.device)
        picked = {f.name: getattr(self, f.name)[index] for f in dataclasses.fields(self)
                  if f.name not in ("seqs", "texts")}
        return Rollout(seqs=self.seqs.select(rows), texts=[self.texts[i] for i in rows], **picked)


def token_rewards(scores, logprobs, ref_logprobs, mask, beta, estimator="k1"):
    """Per-token rewards (B, T-1): -beta * KL estimate at every response token, plus the
    sequence's score (B,) at its last response token. Returns (rewards, kl per token)."""
    kl = kl_estimate(logprobs, ref_logprobs, estimator) * mask
    return -beta * kl + scores.unsqueeze(1) * _one_hot_last(mask), kl


def _one_hot_last(mask):
    """(B, T) float with a 1 at each row's last masked column."""
    last = last_token_index(mask)  # (B,)
    columns = tg.arange(mask.shape[1], device=mask.device).unsqueeze(0)  # (1, T)
    return (columns == last.unsqueeze(1)).float()


# --- the trainer ---------------------------------------------------------------------------------
@dataclasses.dataclass
class PPOConfig:
    minibatch: int = 16
    epochs: int = 4  # passes over each batch (PPO reuses samples; the clip keeps that safe)
    lr: float = 1e-4
    clip: float = 0.2
    value_clip: float = 0.2
    value_coef: float = 0.5
    gamma: float = 1.0  # episodes are a few tokens long: no discounting
    lam: float = 0.95
    beta: float = 0.1  # the KL penalty's initial weight
    kl_target: float | None = None  # None: beta fixed; else adapted towards this KL per response
    kl_horizon: int = 10_000
    kl_estimator: str = "k1"  # in the reward (see kl_estimate)
    max_new_tokens: int = 8
    temperature: float = 1.0  # sampling must be from the policy itself for the ratios to hold
    grad_clip: float = 1.0


class PPOTrainer:
    """PPO with a KL penalty for a `PolicyWithValue` against a frozen reference GPT.

    score_fn(prompts, responses) -> (B,) scores of response strings (the judge, or a reward
    model). `step(prompts)` runs one iteration, one sampled response per prompt (a batch of
    rollouts), and returns its statistics; `last_rollout` keeps that batch (its `texts` are the
    sampled responses, for scoring them some other way).
    """

    def __init__(self, policy, reference, tokenizer, score_fn, config=None):
        self.policy, self.reference, self.tokenizer = policy, reference, tokenizer
        self.score_fn, self.config = score_fn, config or PPOConfig()
        c = self.config
        self.reference.eval().requires_grad_(False)
        self.kl_control = FixedKLController(c.beta) if c.kl_target is None else \
            AdaptiveKLController(c.beta, c.kl_target, c.kl_horizon)
        self.optimizer = nn.optim.AdamW(policy.parameters(), lr=c.lr, weight_decay=0.0)
        self.last_rollout = None

    @tg.no_grad()
    def rollout(self, prompts):
        """Sample responses, score them, and compute rewards, advantages and returns."""
        c = self.config
        seqs, texts = sample(self.policy.lm, self.tokenizer, prompts, c.max_new_tokens,
                             temperature=c.temperature)
        mask = shifted_response_mask(seqs)  # (B, T-1)
        logprobs, values = self.policy(seqs)
        ref_logits, _ = forward(self.reference, seqs)
        ref_logprobs = token_logprobs(ref_logits, seqs.input_ids)
        device = mask.device
        scores = tg.tensor(self.score_fn(prompts, texts), dtype=mask.dtype, device=device)
        rewards, _ = token_rewards(scores, logprobs, ref_logprobs, mask, self.kl_control.beta,
                                   c.kl_estimator)
        advantages, returns = gae(rewards, values * mask, mask, c.gamma, c.lam)
        return Rollout(seqs, mask, logprobs, ref_logprobs, values, rewards,
                       whiten(advantages, mask), returns, scores, texts)

    def step(self, prompts):
        c = self.config
        batch = self.last_rollout = self.rollout(prompts)
        n, stats = len(prompts), {"clip_fraction": [], "policy_loss": [], "value_loss": []}
        self.policy.train()
        for _ in range(c.epochs):
            order = tg.randperm(n).tolist()
            for start in range(0, n, c.minibatch):
                mb = batch.select(order[start:start + c.minibatch])
                logprobs, values = self.policy(mb.seqs)
                policy_loss, clipped = clipped_policy_loss(logprobs, mb.logprobs, mb.advantages,
                                                           mb.mask, c.clip)
                value_loss = clipped_value_loss(values, mb.values, mb.returns, mb.mask,
                                                c.value_clip)
                loss = policy_loss + c.value_coef * value_loss
                self.optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(self.policy.parameters(), c.grad_clip)
                self.optimizer.step()
                stats["clip_fraction"].append(clipped.item())
                stats["policy_loss"].append(policy_loss.item())
                stats["value_loss"].append(value_loss.item())
        # The KL of each response to the reference, summed over its tokens (the k1 estimate:
        # its mean over samples is the sequence-level KL the penalty controls).
        kl = (kl_estimate(batch.logprobs, batch.ref_logprobs) * batch.mask).sum(-1).mean().item()
        beta = self.kl_control.beta
        self.kl_control.update(kl, n)
        summary = {k: sum(v) / len(v) for k, v in stats.items()}
        return {"score": batch.scores.mean().item(), "kl": kl, "beta": beta,
                "reward": batch.rewards.sum(-1).mean().item(), **summary}
