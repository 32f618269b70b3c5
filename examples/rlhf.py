"""A GPT after pre-training, the InstructGPT way, on tasks a program can check: supervised
fine-tuning (SFT) on instructions, a reward model trained on preference pairs, PPO against that
reward with a KL penalty to the SFT model; and DPO on the same pairs, with no reward model.

    ### Instruction: 23+8 ### Response: 31<eos>        (also: sort 3142, reverse abcd)

1. SFT: a small GPT learns the format and the tasks from demonstrations, the loss on the
   response tokens only. Greedy accuracy on held-out tasks before and after.
2. Reward model: the SFT model answers training prompts several times (sampling); a judge
   ranks the answers (exact > right but longer > closer) into (chosen, rejected) pairs, with one
   (correct, corrupted) pair per prompt too. A copy of the SFT model with a scalar head learns
   them with the Bradley-Terry loss. Preference accuracy on pairs of held-out prompts.
3. PPO: the policy (SFT copy + value head) samples answers, the judge scores them (`--reward
   model`: the reward model does), each token pays beta * KL(policy || SFT); GAE, clipped
   surrogate, several epochs per batch.
4. DPO: another SFT copy trained on the reward model's pairs with the DPO loss.
Then one table: greedy accuracy on held-out tasks, KL to the SFT model, wall time.

    python examples/rlhf.py             # 600 SFT steps, 150 reward-model steps, 20 PPO iterations
    python examples/rlhf.py --quick     # 300 / 40 / 10: about 8 minutes on 2 busy cores
"""
import argparse
import os
import random
import time

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.models import GPT, GPTConfig
from tensorgrad.models.rlhf import (
    PolicyWithValue, PPOConfig, PPOTrainer, RewardModel, TaskTokenizer, accuracy,
    bradley_terry_loss, clone, demonstrations, dpo_batch_loss, judge, judged_pairs,
    kl_to_reference, pair_batches, preference_accuracy, sample, sample_tasks, sft_loss,
    synthetic_pairs,
)


# --- configuration ------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--quick", action="store_true", help="every stage, a few times shorter")
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--n-embd", type=int, default=64)
    p.add_argument("--sft-steps", type=int, default=600)
    p.add_argument("--rm-steps", type=int, default=150)
    p.add_argument("--ppo-iters", type=int, default=20)
    p.add_argument("--dpo-steps", type=int, default=150)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--rollouts", type=int, default=128, help="PPO samples per iteration: more "
                   "samples, less noisy advantages")
    p.add_argument("--reward", choices=["judge", "model"], default="judge",
                   help="what scores PPO's samples: the judge itself or the reward model")
    p.add_argument("--beta", type=float, default=0.1, help="the KL penalty's weight")
    p.add_argument("--kl-target", type=float, default=None,
                   help="adapt beta towards this KL per response (default: beta fixed)")
    p.add_argument("--dpo-beta", type=float, default=0.5, help="higher keeps DPO nearer SFT")
    p.add_argument("--eval-tasks", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=os.path.join("out", "rlhf"))
    args = p.parse_args(argv)
    if args.quick:
        args.sft_steps, args.rm_steps, args.ppo_iters, args.dpo_steps = 300, 40, 10, 40
        args.eval_tasks = 150
    return args


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    tg.manual_seed(args.seed)
    rng = random.Random(args.seed)
    tok = TaskTokenizer()
    train_tasks = sample_tasks(20_000, seed=args.seed)
    eval_tasks = sample_tasks(args.eval_tasks, seed=args.seed + 1)
    rm_eval_tasks = sample_tasks(150, seed=args.seed + 2)
    config = GPTConfig.mini(vocab_size=tok.vocab_size, block_size=32, n_layer=args.n_layer,
                            n_head=4, n_embd=args.n_embd, d_ff=4 * args.n_embd)
    rows = {}

    # --- 1. supervised fine-tuning ---------------------------------------------------------------
    sft = GPT(config)
    print(f"GPT: {sft.num_parameters():,} parameters; {len(eval_tasks)} held-out tasks")
    before, _ = accuracy(sft, tok, eval_tasks)
    began = time.perf_counter()
    optimizer = nn.optim.AdamW(sft.parameters(), lr=3e-3, weight_decay=0.0)
    schedule = nn.optim.lr_scheduler.WarmupCosineLR(optimizer, min(30, args.sft_steps - 1),
                                                    args.sft_steps,
                                                    min_lr_ratio=0.1)
    for step in range(args.sft_steps):
        loss = sft_loss(sft, demonstrations(tok, rng.sample(train_tasks, args.batch_size)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if (step + 1) % 100 == 0:
            print(f"  sft step {step + 1}: loss {loss.item():.3f}")
    sft_time = time.perf_counter() - began
    after, _ = accuracy(sft, tok, eval_tasks)
    print(f"SFT: accuracy {before:.1%} -> {after:.1%} ({sft_time:.0f} s)")
    rows["SFT"] = (after, 0.0, sft_time)
    sft.eval().requires_grad_(False)

    # --- 2. preference pairs and the reward model ----------------------------------------------
    def pairs_for(tasks, seed):
        """Pairs the judge makes from 4 sampled answers per task, plus (correct, corrupted)."""
        prompts = [t.prompt for t in tasks for _ in range(4)]
        _, texts = sample(sft, tok, prompts, 8, temperature=1.0, seed=seed)
        pairs = []
        for i, task in enumerate(tasks):
            pairs += judged_pairs(task, texts[4 * i:4 * i + 4])
        return pairs + synthetic_pairs(tasks, seed)

    began = time.perf_counter()
    train_pairs = pairs_for(rng.sample(train_tasks, 400 if not args.quick else 150), args.seed)
    held_out_pairs = pairs_for(rm_eval_tasks, args.seed + 1)
    reward_model = RewardModel.from_lm(sft).train()
    reward_model.requires_grad_(True)
    optimizer = nn.optim.AdamW(reward_model.parameters(), lr=1e-3, weight_decay=0.0)
    for step in range(args.rm_steps):
        chosen, rejected = pair_batches(tok, rng.sample(train_pairs, args.batch_size))
        loss = bradley_terry_loss(reward_model(chosen), reward_model(rejected))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if (step + 1) % 50 == 0:
            print(f"  reward model step {step + 1}: loss {loss.item():.3f}")
    rm_time = time.perf_counter() - began
    rm_accuracy = preference_accuracy(reward_model, tok, held_out_pairs)
    print(f"reward model: {len(train_pairs)} training pairs; held-out preference accuracy "
          f"{rm_accuracy:.1%} on {len(held_out_pairs)} pairs ({rm_time:.0f} s)")
    reward_model.eval().requires_grad_(False)

    # --- 3. PPO against the reward model, KL-penalised towards the SFT model -------------------
    by_prompt = {t.prompt: t for t in train_tasks}
    if args.reward == "model":
        score = lambda prompts, texts: reward_model.score(tok, prompts, texts).tolist()
    else:
        score = lambda prompts, texts: [judge(by_prompt[p], r) for p, r in zip(prompts, texts)]
    policy = PolicyWithValue(clone(sft).requires_grad_(True))
    trainer = PPOTrainer(policy, sft, tok, score,
                         PPOConfig(minibatch=32, epochs=4, lr=2e-4,
                                   beta=args.beta, kl_target=args.kl_target))
    history = []
    began = time.perf_counter()
    for it in range(args.ppo_iters):
        stats = trainer.step([t.prompt for t in rng.sample(train_tasks, args.rollouts)])
        stats["accuracy"], _ = accuracy(policy.lm, tok, eval_tasks)
        history.append(stats)
        print(f"  ppo iteration {it + 1}: score {stats['score']:+.3f}  KL {stats['kl']:.3f}  "
              f"beta {stats['beta']:.3f}  accuracy {stats['accuracy']:.1%}  "
              f"clip {stats['clip_fraction']:.2f}")
    ppo_time = time.perf_counter() - began
    eval_prompts = [t.prompt for t in eval_tasks]
    rows["PPO"] = (history[-1]["accuracy"], kl_to_reference(policy.lm, sft, tok, eval_prompts, 8,
                                                            seed=args.seed), ppo_time)

    # --- 4. DPO on the reward model's training pairs ---------------------------------------------
    dpo = clone(sft).requires_grad_(True)
    optimizer = nn.optim.AdamW(dpo.parameters(), lr=1e-4, weight_decay=0.0)
    began = time.perf_counter()
    for step in range(args.dpo_steps):
        chosen, rejected = pair_batches(tok, rng.sample(train_pairs, args.batch_size))
        loss, _, _ = dpo_batch_loss(dpo, sft, chosen, rejected, beta=args.dpo_beta)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if (step + 1) % 50 == 0:
            print(f"  dpo step {step + 1}: loss {loss.item():.3f}")
    dpo_time = time.perf_counter() - began
    rows["DPO"] = (accuracy(dpo, tok, eval_tasks)[0],
                   kl_to_reference(dpo, sft, tok, eval_prompts, 8, seed=args.seed), dpo_time)

    # --- results ---------------------------------------------------------------------------------
    print(f"\nbefore SFT: accuracy {before:.1%}; reward model: held-out preference accuracy "
          f"{rm_accuracy:.1%} ({rm_time:.0f} s, not counted below)")
    print(f"{'method':<8}{'accuracy':>10}{'KL to SFT':>11}{'wall time':>11}")
    for name, (acc, kl, seconds) in rows.items():
        print(f"{name:<8}{acc:>10.1%}{kl:>11.3f}{seconds:>10.0f}s")
    plot(history, os.path.join(args.out, "ppo.png"))
    return {"before": before, "rm_accuracy": rm_accuracy, "rows": rows, "history": history}


def plot(history, path):
    """Score, KL and accuracy per PPO iteration (needs matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no plot)")
        return
    its = range(1, len(history) + 1)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
    for ax, key, label in zip(axes, ("score", "kl", "accuracy"),
                              ("score of the samples", "KL(policy || SFT) per response",
                               "held-out accuracy (greedy)")):
        ax.plot(its, [h[key] for h in history], marker="o")
        ax.set_xlabel("PPO iteration")
        ax.set_title(label)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
