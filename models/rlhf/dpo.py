"""Direct Preference Optimization (Rafailov et al., 2023): fine-tune the policy on preference
pairs directly, with no reward model and no sampling. The policy's implicit reward of a response
is beta * log(pi(y | x) / pi_ref(y | x)); the loss is the Bradley-Terry loss on those rewards,

    -log sigmoid(beta * [(log pi(y_c) - log pi_ref(y_c)) - (log pi(y_r) - log pi_ref(y_r))]),

which is minimised by the optimum of the KL-penalised reward objective PPO climbs, with beta the
same KL weight.
"""
import tensorgrad as tg
import tensorgrad.nn.functional as F

from .lm import sequence_logprob


def dpo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta=0.1):
    """The DPO loss from the summed response log-probabilities (each (B,)) of the chosen and
    rejected responses under the policy and the reference.

    Returns (loss: scalar mean over pairs, chosen_rewards (B,), rejected_rewards (B,)): the
    implicit rewards beta * (log pi - log pi_ref), detached, for monitoring.
    """
    chosen_margin = policy_chosen - ref_chosen  # log pi/pi_ref of the chosen responses
    rejected_margin = policy_rejected - ref_rejected
    loss = -F.logsigmoid(beta * (chosen_margin - rejected_margin)).mean()
    return loss, (beta * chosen_margin).detach(), (beta * rejected_margin).detach()


def dpo_batch_loss(policy, reference, chosen, rejected, beta=0.1):
    """`dpo_loss` for a GPT policy and a frozen reference GPT on chosen and rejected `Sequences`
    (see `reward.pair_batches`)."""
    with tg.no_grad():
        ref_chosen = sequence_logprob(reference, chosen)
        ref_rejected = sequence_logprob(reference, rejected)
    return dpo_loss(sequence_logprob(policy, chosen), sequence_logprob(policy, rejected),
                    ref_chosen, ref_rejected, beta)
