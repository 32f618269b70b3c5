"""tensorgrad.models.rlhf: what makes a pre-trained GPT useful, on tasks a program can check.

- tasks.py: `TaskTokenizer`, instruction tasks (addition, sorting, reversing), the `judge` and
  preference pairs.
- lm.py: `Sequences` (prompt + response batches with a response mask), token log-probabilities,
  hidden states, sampling responses.
- sft.py: supervised fine-tuning with the loss on response tokens only; greedy accuracy.
- reward.py: `RewardModel` (GPT + scalar head on the last real token), the Bradley-Terry loss.
- ppo.py: PPO with a KL penalty to a reference (per-token KL, GAE, clipped surrogate and value
  losses, fixed or adaptive beta): `PPOTrainer`.
- dpo.py: the DPO loss.
- icl.py: in-context learning of held-out functions from few-shot examples.
"""
from .dpo import dpo_batch_loss, dpo_loss  # noqa: F401
from .lm import (  # noqa: F401
    Sequences, clone, encode_pairs, kl_to_reference, last_token_index, sample, sequence_logprob,
)
from .ppo import (  # noqa: F401
    AdaptiveKLController, FixedKLController, PolicyWithValue, PPOConfig, PPOTrainer,
    clipped_policy_loss, clipped_value_loss, gae, kl_estimate, token_rewards,
)
from .reward import RewardModel, bradley_terry_loss, pair_batches, preference_accuracy  # noqa: F401
from .sft import accuracy, answer_stats, demonstrations, sft_loss, sft_targets  # noqa: F401
from .tasks import (  # noqa: F401
    SIGN_OFF, PreferencePair, Task, TaskTokenizer, judge, judged_pairs, sample_tasks,
    synthetic_pairs, with_sign_off,
)
