"""
After pre-training: in-context learning, SFT, a reward model, PPO and DPO
=========================================================================

A pre-trained language model continues text. Two things make it useful: it can pick up a task
from examples in its prompt (in-context learning), and it can be trained to follow instructions
and then towards what people prefer (InstructGPT: SFT, a reward model, PPO; or DPO, which needs
no reward model). ``tensorgrad.models.rlhf`` has each piece, on tasks whose answers a program
can check, so every number below is measured. This tutorial runs each stage small;
``examples/in_context_learning.py`` and ``examples/rlhf.py`` run them in full.
"""
import random

import matplotlib.pyplot as plt

import tensorgrad as tg
from tensorgrad.models import GPT, GPTConfig
from tensorgrad.models.rlhf import (PolicyWithValue, PPOConfig, PPOTrainer, RewardModel,
                                    TaskTokenizer, accuracy, answer_stats, bradley_terry_loss,
                                    clone, demonstrations, dpo_batch_loss, judge, judged_pairs,
                                    pair_batches, preference_accuracy, sample, sample_tasks,
                                    sft_loss, synthetic_pairs)
from tensorgrad.models.rlhf.icl import (ALPHABET, FunctionFamily, PairTokenizer,
                                        few_shot_accuracy, few_shot_text)

tg.manual_seed(0)
rng = random.Random(0)

# %%
# In-context learning
# -------------------
# The tasks are functions from 8 letters to 8 letters. A prompt shows examples of one function,
# ``a>c b>a ...``, then a query ``d>``; the answer is one token, the pair ``d>f(d)``. A model
# pre-trained on such sequences, each from a different random function, and tested on functions
# it never saw, can only answer by reading the examples. If the query letter is among k random
# examples, it can be looked up; if not, the best is a guess among 8. That bounds the accuracy:
family = FunctionFamily(n_held_out=64, seed=0)
f = family.held_out[0]
print("one held-out function:", few_shot_text(f, ALPHABET))
for k in (0, 1, 2, 4, 8):
    seen = 1 - (7 / 8) ** k
    print(f"{k} examples: lookup-or-guess bound {seen + (1 - seen) / 8:.1%}")

# %%
# An untrained model scores *below* the 12.5% of guessing: 0%. Guessing means choosing among
# the 8 pairs that start with the query letter; an untrained model answers the query ``x>``
# with ``x>`` itself, never with a pair: the head is tied to the embedding and an untrained
# block barely changes the residual stream, so the input token scores highest. Pre-training
# teaches the format first (answer with a pair for this letter: 12.5%), then the lookup.
tok = PairTokenizer()
untrained = GPT(GPTConfig.mini(vocab_size=tok.vocab_size, block_size=32, n_layer=1,
                               n_embd=64, n_head=2, d_ff=256))
print(f"untrained, 4 examples: {few_shot_accuracy(untrained, tok, family.held_out, 4):.1%}")
print("pre-trained for 400 steps (examples/in_context_learning.py, seeds 0-2, "
      "examples/results.py): 11.0-15.4%, 23.8-26.6%, 34.8-36.7%, 49.3-50.4%, 68.6-71.4% at "
      "0, 1, 2, 4, 8 examples: the bound, reached")

# %%
# Supervised fine-tuning
# ----------------------
# Instructions and answers a program can check (``23+8``, ``sort 4132``, ``reverse abc``) in a
# prompt format, with the loss on the response tokens only. The demonstrators have a habit: half
# their answers end with the sign-off ``" ok"``, which the labeller (the judge) dislikes. SFT
# learns the task and the habit alike.
task_tok = TaskTokenizer()
train_tasks = sample_tasks(20_000, seed=0)
eval_tasks = sample_tasks(150, seed=1)
config = GPTConfig.mini(vocab_size=task_tok.vocab_size, block_size=32, n_layer=2, n_head=4,
                        n_embd=64, d_ff=256)
batch = demonstrations(task_tok, train_tasks[:2], sign_off=0.5, rng=rng)
for row in batch.input_ids.tolist():
    print(repr(task_tok.decode(row)))


def fit(model, steps, lr, batch_loss):
    opt = tg.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    for _ in range(steps):
        loss = batch_loss()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


def describe(model):
    stats = answer_stats(eval_tasks, accuracy(model, task_tok, eval_tasks)[1])
    return (f"exact {stats['exact']:.0%}, answer right {stats['answer_right']:.0%}, "
            f"signs off {stats['sign_off']:.0%}")


sft = GPT(config)
fit(sft, 600, 3e-3, lambda: sft_loss(sft, demonstrations(
    task_tok, rng.sample(train_tasks, 64), sign_off=0.5, rng=rng)))
print("SFT:", describe(sft))
sft.eval().requires_grad_(False)

# %%
# A reward model
# --------------
# The judge ranks 4 sampled answers per prompt (exact > right but longer > closer miss); each
# ordered pair is a preference, plus (correct, corrupted) pairs. The reward model is the SFT
# model with a scalar head on the last token, trained with the Bradley-Terry loss
# -log sigmoid(r_chosen - r_rejected), then normalised to mean 0 and standard deviation 1 on the
# SFT model's samples, so that PPO's KL weight beta means the same whatever its scale.
prompts = [t.prompt for t in train_tasks[:200] for _ in range(4)]
_, texts = sample(sft, task_tok, prompts, 8, temperature=1.0, seed=0)
pairs = [p for i, t in enumerate(train_tasks[:200])
         for p in judged_pairs(t, texts[4 * i:4 * i + 4])]
pairs += synthetic_pairs(train_tasks[200:1200], seed=0)
held_out = synthetic_pairs(eval_tasks, seed=1)
print(f"{len(pairs)} preference pairs; one: {pairs[0]}")
reward_model = RewardModel.from_lm(sft).train().requires_grad_(True)


def preference_batch_loss():
    chosen, rejected = pair_batches(task_tok, rng.sample(pairs, 64))
    return bradley_terry_loss(reward_model(chosen), reward_model(rejected))


fit(reward_model, 250, 1e-3, preference_batch_loss)
reward_model.eval().requires_grad_(False)
print(f"held-out preference accuracy (correct over corrupted): "
      f"{preference_accuracy(reward_model, task_tok, held_out):.1%}")
norm_prompts = [t.prompt for t in train_tasks[:300]]
_, norm_texts = sample(sft, task_tok, norm_prompts, 8, temperature=1.0, seed=1)
mean, std = reward_model.normalize_(task_tok, norm_prompts, norm_texts)
print(f"normalised: the SFT samples' rewards had mean {mean:+.2f}, std {std:.2f}")

# %%
# PPO
# ---
# The policy samples answers, the reward model scores each, and the reward is that score minus
# beta times the KL divergence from the SFT model on every token, so the policy improves the
# score without wandering off the language it started from. Advantages come from GAE with a
# value head; the update is the clipped surrogate, 4 epochs per batch of rollouts.
policy = PolicyWithValue(clone(sft).requires_grad_(True))
score = lambda prompts, texts: reward_model.score(task_tok, prompts, texts).tolist()  # noqa: E731
trainer = PPOTrainer(policy, sft, task_tok, score,
                     PPOConfig(minibatch=32, epochs=4, lr=5e-5, beta=0.2))
history = []
for it in range(6):
    stats = trainer.step([t.prompt for t in rng.sample(train_tasks, 96)])
    history.append((stats["score"], stats["kl"]))
    print(f"PPO iteration {it + 1}: reward model score {stats['score']:+.3f}, "
          f"KL to SFT {stats['kl']:.3f}")
print("PPO:", describe(policy.lm))

# %%
# DPO
# ---
# DPO optimises the same preference objective without a reward model or sampling: the policy's
# log-probability ratio to the SFT model, log pi/pi_ref, is an implicit reward, and the loss is
# -log sigmoid(beta [ratio(chosen) - ratio(rejected)]) on the same pairs.
dpo = clone(sft).requires_grad_(True)


def dpo_pairs_loss():
    chosen, rejected = pair_batches(task_tok, rng.sample(pairs, 64))
    return dpo_batch_loss(dpo, sft, chosen, rejected, beta=0.5)[0]


fit(dpo, 60, 1e-4, dpo_pairs_loss)
print("DPO:", describe(dpo))

# %%
# What happened
# -------------
# SFT learns the answers and the sign-off. The preferences carry what the demonstrations did
# not: the labeller wants the answer alone. PPO removes the habit by raising the reward model's
# score while the KL term holds it near SFT; DPO gets there from the pairs directly. With the
# full budgets (``examples/rlhf.py``, seeds 0-2, ``examples/results.py``) PPO ends at 80.7-92.3%
# exact and DPO at 90.7-97.0%.
scores, kls = zip(*history)
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(range(1, len(scores) + 1), scores, "o-", label="reward model score")
ax.plot(range(1, len(kls) + 1), kls, "o-", label="KL to SFT (nats)")
ax.set_xlabel("PPO iteration")
ax.legend()
plt.tight_layout()
plt.show()
print("judge's score of one answer with and without the sign-off:",
      judge(eval_tasks[0], eval_tasks[0].answer),
      judge(eval_tasks[0], eval_tasks[0].answer + " ok"))
