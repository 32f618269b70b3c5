"""A reward model (Stiennon et al., 2020; Ouyang et al., 2022): a GPT backbone whose final
hidden state at the last real token of prompt + response goes through a linear head to one
number, trained on preference pairs with the Bradley-Terry loss -log sigmoid(r_chosen -
r_rejected), so that the probability the model gives to "chosen beats rejected" is
sigmoid(r_chosen - r_rejected).
"""
import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad import nn

from ..gpt import GPT
from .lm import encode_pairs, forward, last_token_index


class RewardModel(nn.Module):
    """GPT backbone + scalar head. `Sequences` -> rewards (B,).

    Parameters: `backbone` (a GPT; its LM head is unused), `head` (Linear n_embd -> 1).
    """

    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        self.backbone = GPT(config, device=device, dtype=dtype)
        self.head = nn.Linear(config.n_embd, 1, device=device, dtype=dtype)
        nn.init.zeros_(self.head.weight)  # every response starts at reward 0
        nn.init.zeros_(self.head.bias)

    @classmethod
    def from_lm(cls, lm):
        """A reward model whose backbone starts as a copy of a trained GPT (InstructGPT starts
        it from the SFT model: it already reads the task)."""
        weight = lm.wte.weight
        model = cls(lm.config, device=weight.device, dtype=weight.dtype)
        model.backbone.load_state_dict(lm.state_dict())
        return model

    def forward(self, seqs):
        _, hidden = forward(self.backbone, seqs)  # (B, T, C)
        B = hidden.shape[0]
        last = last_token_index(seqs.attention_mask)  # (B,)
        rows = tg.arange(B, device=last.device)
        return self.head(hidden[rows, last]).squeeze(-1)  # (B, C) -> (B,)

    @tg.no_grad()
    def normalize_(self, tokenizer, prompts, responses, batch_size=256):
        """Rescale the head so that the rewards of these responses have mean 0 and standard
        deviation 1 (Ziegler et al., 2019, normalise their reward model on samples of the
        policy PPO starts from). The Bradley-Terry loss sees only differences, so training
        leaves the offset arbitrary, and its scale is whatever separated the training pairs;
        after this, PPO's KL weight beta means the same whatever the reward model learned, and
        the value head does not spend its first updates learning an offset through the trunk it
        shares with the policy. The order of any two responses is unchanged. Returns the
        (mean, std) removed."""
        if len(prompts) < 2:
            raise ValueError(f"RewardModel.normalize_: a standard deviation needs at least two "
                             f"responses, got {len(prompts)}")
        scores = tg.cat([self.score(tokenizer, prompts[i:i + batch_size],
                                    responses[i:i + batch_size])
                         for i in range(0, len(prompts), batch_size)])
        mean, std = scores.mean(), scores.std()
        # Equal responses score equal only to rounding (the BLAS may sum a batch's rows in
        # different orders), so a spread within sqrt(eps) of the scores' size counts as none:
        # dividing by it would blow rounding noise up to unit variance.
        noise = tg.finfo(scores.dtype).eps ** 0.5 * max(scores.abs().max().item(), 1e-30)
        if not std.item() > noise:
            raise ValueError(f"RewardModel.normalize_: the rewards of the {len(prompts)} "
                             f"responses have standard deviation {std.item():.3g}, within "
                             f"rounding of 0 (below {noise:.3g}); it needs at least two "
                             "responses the model scores differently")
        self.head.weight.div_(std)
        self.head.bias.sub_(mean).div_(std)
        return mean.item(), std.item()

    @tg.no_grad()
    def score(self, tokenizer, prompts, responses):
        """Rewards (B,) for prompt and response strings."""
        device = self.head.weight.device
        return self(encode_pairs(tokenizer, prompts, responses, device=device))


def bradley_terry_loss(chosen_rewards, rejected_rewards):
    """-log sigmoid(r_chosen - r_rejected), averaged over pairs: the negative log-likelihood of
    the preferences under the Bradley-Terry model. Both (B,); returns a scalar."""
    return -F.logsigmoid(chosen_rewards - rejected_rewards).mean()


def pair_batches(tokenizer, pairs, device=None):
    """(chosen `Sequences`, rejected `Sequences`) for a list of `PreferencePair`s."""
    prompts = [p.prompt for p in pairs]
    return (encode_pairs(tokenizer, prompts, [p.chosen for p in pairs], device=device),
            encode_pairs(tokenizer, prompts, [p.rejected for p in pairs], device=device))


@tg.no_grad()
def preference_accuracy(model, tokenizer, pairs, batch_size=256):
    """The fraction of pairs whose chosen response the reward model scores strictly higher."""
    right = 0
    for i in range(0, len(pairs), batch_size):
        chosen, rejected = pair_batches(tokenizer, pairs[i:i + batch_size],
                                        device=model.head.weight.device)
        right += int((model(chosen) > model(rejected)).sum().item())
    return right / len(pairs)
