"""A GPT after pre-training, the InstructGPT way, on tasks a program can check: supervised
fine-tuning (SFT) on instructions, a reward model trained on preference pairs, PPO against that
reward with a KL penalty to the SFT model; and DPO on the same pairs, with no reward model.

    ### Instruction: 23+8 ### Response: 31<eos>        (also: sort 3142, reverse abcd)

The demonstrators have a habit, as people do: a fraction of their answers end with the sign-off
" ok" (our stand-in for "I hope this helps!"). The labeller (the judge) prefers the answer
without it. SFT learns the task and the habit alike; the preferences are what teach it to stop.

1. SFT: a small GPT learns the format and the tasks from demonstrations, the loss on the
   response tokens only. Greedy accuracy on held-out tasks before and after: exact, answer
   right (whatever follows it), and how often it signs off.
2. Reward model: the SFT model answers training prompts several times (sampling); the judge
   ranks the answers (exact > right but longer > closer) into (chosen, rejected) pairs, with one
   (correct, corrupted) pair per prompt too, and such a pair for 8,000 more prompts. A copy of
   the SFT model with a scalar head learns them with the Bradley-Terry loss. Preference
   accuracy on pairs of held-out prompts, by kind of pair; then the head is normalised (mean 0,
   std 1 on SFT samples) so that beta weighs the KL against a known reward scale.
3. PPO: the policy (SFT copy + value head) samples answers, the reward model scores them
   (`--reward judge`: the judge itself does), each token pays beta * KL(policy || SFT); GAE,
   clipped surrogate, several epochs per batch. The judge's score and the exact accuracy are
   measured every iteration.
4. DPO: another SFT copy trained on the reward model's pairs with the DPO loss.
Then one table: greedy accuracy on held-out tasks, KL to the SFT model, wall time.

    python examples/rlhf.py             # under 3 minutes on one core
    python examples/rlhf.py --quick     # one layer, every stage far shorter: seconds
Writes into --out (out/rlhf): ppo.png (score, KL and accuracy per PPO iteration), loss.png
(each stage's training loss; both need matplotlib) and sft, reward_model, ppo and dpo
.safetensors (the models' weights).
"""
import argparse
import dataclasses
import os
import random
import time

from common import SMALL_MATRICES_NOTE, HelpFormatter, Progress, one_blas_thread, plot_curves

one_blas_thread()  # before NumPy loads; SMALL_MATRICES_NOTE in --help says why

import tensorgrad as tg  # noqa: E402
from tensorgrad import nn  # noqa: E402
from tensorgrad.models import GPT, GPTConfig  # noqa: E402
from tensorgrad.models.rlhf import (  # noqa: E402
    PolicyWithValue, PPOConfig, PPOTrainer, RewardModel, TaskTokenizer, accuracy, answer_stats,
    bradley_terry_loss, clone, demonstrations, dpo_batch_loss, judge, judged_pairs,
    kl_to_reference, pair_batches, preference_accuracy, sample, sample_tasks, sft_loss,
    synthetic_pairs,
)


# --- configuration ------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, epilog=SMALL_MATRICES_NOTE,
                                formatter_class=HelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="one layer, every stage far shorter: seconds, not minutes")
    p.add_argument("--n-layer", type=int, default=2, help="transformer blocks")
    p.add_argument("--n-embd", type=int, default=64, help="model width (embedding size)")
    p.add_argument("--sign-off", type=float, default=0.5,
                   help="the fraction of demonstrations that end with the sign-off")
    p.add_argument("--sft-steps", type=int, default=800, help="supervised fine-tuning steps")
    p.add_argument("--rm-steps", type=int, default=1500, help="reward-model training steps")
    p.add_argument("--rm-tasks", type=int, default=800,
                   help="training prompts whose sampled answers the judge ranks into pairs")
    p.add_argument("--rm-corrupted", type=int, default=8000,
                   help="training prompts with a (correct, corrupted) pair each: telling a right "
                   "answer from a near miss is what the reward model needs most data for")
    p.add_argument("--ppo-iters", type=int, default=20,
                   help="PPO iterations (sample, score, update)")
    p.add_argument("--dpo-steps", type=int, default=150, help="DPO training steps")
    p.add_argument("--batch-size", type=int, default=64, help="examples per training step")
    p.add_argument("--rollouts", type=int, default=128, help="PPO samples per iteration: more "
                   "samples, less noisy advantages")
    p.add_argument("--reward", choices=["judge", "model"], default="model",
                   help="what scores PPO's samples: the reward model or the judge itself")
    p.add_argument("--lr", type=float, default=5e-5, help="PPO's learning rate")
    p.add_argument("--beta", type=float, default=0.2, help="the KL penalty's weight: lower "
                   "lets PPO over-optimise the reward model")
    p.add_argument("--kl-target", type=float, default=None,
                   help="adapt beta towards this KL per response (None: beta fixed)")
    p.add_argument("--kl-horizon", type=int, default=500,
                   help="with --kl-target: beta moves by at most 20%% per this many samples "
                   "(Ziegler et al. use 10,000 over far longer runs)")
    p.add_argument("--dpo-beta", type=float, default=0.5, help="higher keeps DPO nearer SFT")
    p.add_argument("--eval-tasks", type=int, default=300,
                   help="held-out tasks scored after each stage")
    p.add_argument("--seed", type=int, default=0, help="random seed: weights, data order, sampling")
    p.add_argument("--out", default=os.path.join("out", "rlhf"),
                   help="folder for everything it writes")
    args = p.parse_args(argv)
    if args.quick:
        vars(args).update(n_layer=1, batch_size=32, sft_steps=300, rm_steps=100, rm_tasks=100,
                          rm_corrupted=500, ppo_iters=3, rollouts=64, dpo_steps=30,
                          eval_tasks=100)
    return args


def pair_kinds(pairs, task_of):
    """Preference pairs grouped by what tells them apart: only what follows the right answer
    (a sign-off, mostly), right over wrong, or a nearer miss over a farther one."""
    kinds = {"exact > right but longer": [], "right > wrong": [], "nearer > farther miss": []}
    for pair in pairs:
        task = task_of[pair.prompt]
        chosen, rejected = judge(task, pair.chosen), judge(task, pair.rejected)
        kind = ("exact > right but longer" if (chosen, rejected) == (1.0, 0.5) else
                "right > wrong" if chosen >= 0.5 else "nearer > farther miss")
        kinds[kind].append(pair)
    return {k: v for k, v in kinds.items() if v}


def fit(name, model, lr, steps, batch_loss, warmup_cosine=False):
    """AdamW on model for `steps` steps of batch_loss() (a scalar; it draws its own batch), under
    a progress bar; the loss of every step. warmup_cosine: 30 warm-up steps, then a cosine decay
    to a tenth of lr (SFT, which starts from scratch)."""
    optimizer = nn.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = nn.optim.lr_scheduler.WarmupCosineLR(optimizer, min(30, steps - 1), steps,
                                                    min_lr_ratio=0.1) if warmup_cosine else None
    losses, progress = [], Progress(0, steps)
    for step in range(steps):
        loss = batch_loss()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if schedule is not None:
            schedule.step()
        losses.append(loss.item())
        progress.update(step + 1, loss=losses[-1])
    progress.close()
    print(f"  {name}: loss {losses[0]:.3f} -> {losses[-1]:.3f} in {steps} steps")
    return losses


def evaluate(model, tok, tasks):
    """Greedy answers to held-out tasks: the fraction exact, with the answer right whatever
    follows, and signing off."""
    _, responses = accuracy(model, tok, tasks)
    return answer_stats(tasks, responses)


def describe(stats):
    return (f"exact {stats['exact']:.1%}, answer right {stats['answer_right']:.1%}, "
            f"sign-off {stats['sign_off']:.1%}")


def main(argv=None):
    tg.backend.tune_process()  # opt-in: malloc and thread settings for speed (backend/process.py)
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    tg.manual_seed(args.seed)
    rng = random.Random(args.seed)
    tok = TaskTokenizer()
    train_tasks = sample_tasks(20_000, seed=args.seed)
    eval_tasks = sample_tasks(args.eval_tasks, seed=args.seed + 1)
    rm_eval_tasks = sample_tasks(min(150, args.eval_tasks), seed=args.seed + 2)
    config = GPTConfig.mini(vocab_size=tok.vocab_size, block_size=32, n_layer=args.n_layer,
                            n_head=4, n_embd=args.n_embd, d_ff=4 * args.n_embd)
    rows = {}

    # --- 1. supervised fine-tuning ---------------------------------------------------------------
    sft = GPT(config)
    print(f"GPT: {sft.num_parameters():,} parameters; {len(eval_tasks)} held-out tasks; "
          f"{args.sign_off:.0%} of the demonstrations sign off")
    before = evaluate(sft, tok, eval_tasks)
    began = time.perf_counter()
    curves = {}
    curves["SFT"] = fit("sft", sft, 3e-3, args.sft_steps, warmup_cosine=True,
        batch_loss=lambda: sft_loss(sft, demonstrations(
            tok, rng.sample(train_tasks, args.batch_size), sign_off=args.sign_off, rng=rng)))
    sft_time = time.perf_counter() - began
    after = evaluate(sft, tok, eval_tasks)
    print(f"SFT ({sft_time:.0f} s): before {describe(before)}\n                after  "
          f"{describe(after)}")
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
    train_pairs = (pairs_for(rng.sample(train_tasks, args.rm_tasks), args.seed)
                   + synthetic_pairs(rng.sample(train_tasks, args.rm_corrupted), args.seed + 3))
    held_out_pairs = pairs_for(rm_eval_tasks, args.seed + 1)
    reward_model = RewardModel.from_lm(sft).train()
    reward_model.requires_grad_(True)

    def preference_loss():
        chosen, rejected = pair_batches(tok, rng.sample(train_pairs, args.batch_size))
        return bradley_terry_loss(reward_model(chosen), reward_model(rejected))

    curves["reward model"] = fit("reward model", reward_model, 1e-3, args.rm_steps,
                                 preference_loss)
    rm_time = time.perf_counter() - began
    rm_accuracy = preference_accuracy(reward_model, tok, held_out_pairs)
    print(f"reward model: {len(train_pairs)} training pairs; held-out preference accuracy "
          f"{rm_accuracy:.1%} on {len(held_out_pairs)} pairs ({rm_time:.0f} s)")
    by_kind = pair_kinds(held_out_pairs, {t.prompt: t for t in rm_eval_tasks})
    for kind, pairs in by_kind.items():
        print(f"  {kind}: {preference_accuracy(reward_model, tok, pairs):.1%} of {len(pairs)}")
    reward_model.eval().requires_grad_(False)
    prompts = [t.prompt for t in rng.sample(train_tasks, min(1000, 4 * args.rm_tasks))]
    _, texts = sample(sft, tok, prompts, 8, temperature=1.0, seed=args.seed + 4)
    mean, std = reward_model.normalize_(tok, prompts, texts)
    print(f"  normalised on SFT samples: reward mean {mean:+.3f}, std {std:.3f} -> 0, 1")

    # --- 3. PPO against the reward model, KL-penalised towards the SFT model -------------------
    by_prompt = {t.prompt: t for t in train_tasks}
    judged = lambda prompts, texts: [judge(by_prompt[p], r) for p, r in zip(prompts, texts)]
    if args.reward == "model":
        score = lambda prompts, texts: reward_model.score(tok, prompts, texts).tolist()
    else:
        score = judged
    policy = PolicyWithValue(clone(sft).requires_grad_(True))
    trainer = PPOTrainer(policy, sft, tok, score,
                         PPOConfig(minibatch=32, epochs=4, lr=args.lr,
                                   beta=args.beta, kl_target=args.kl_target,
                                   kl_horizon=args.kl_horizon))
    history, measuring = [], 0.0
    began = time.perf_counter()
    for it in range(args.ppo_iters):
        # Every figure of an iteration is of the policy that samples its rollouts (the first
        # iteration's is the SFT model's); the update comes after. The wall time leaves out
        # these evaluations, as DPO's does.
        start = time.perf_counter()
        stats = evaluate(policy.lm, tok, eval_tasks)
        measuring += time.perf_counter() - start
        prompts = [t.prompt for t in rng.sample(train_tasks, args.rollouts)]
        stats.update(trainer.step(prompts))
        stats["judge"] = sum(judged(prompts, trainer.last_rollout.texts)) / len(prompts)
        history.append(stats)
        print(f"  ppo iteration {it + 1}: score {stats['score']:+.3f}  judge {stats['judge']:.3f}"
              f"  KL {stats['kl']:.3f}  beta {stats['beta']:.3f}  {describe(stats)}")
    ppo_time = time.perf_counter() - began - measuring
    eval_prompts = [t.prompt for t in eval_tasks]
    rows["PPO"] = (evaluate(policy.lm, tok, eval_tasks),
                   kl_to_reference(policy.lm, sft, tok, eval_prompts, 8, seed=args.seed),
                   ppo_time)

    # --- 4. DPO on the reward model's training pairs ---------------------------------------------
    dpo = clone(sft).requires_grad_(True)
    began = time.perf_counter()

    def dpo_pairs_loss():
        chosen, rejected = pair_batches(tok, rng.sample(train_pairs, args.batch_size))
        return dpo_batch_loss(dpo, sft, chosen, rejected, beta=args.dpo_beta)[0]

    curves["DPO"] = fit("dpo", dpo, 1e-4, args.dpo_steps, dpo_pairs_loss)
    dpo_time = time.perf_counter() - began
    rows["DPO"] = (evaluate(dpo, tok, eval_tasks),
                   kl_to_reference(dpo, sft, tok, eval_prompts, 8, seed=args.seed), dpo_time)

    # --- results ---------------------------------------------------------------------------------
    print(f"\nbefore SFT: {describe(before)}; reward model: held-out preference accuracy "
          f"{rm_accuracy:.1%} ({rm_time:.0f} s, not counted below)")
    print(f"{'method':<8}{'exact':>8}{'answer right':>14}{'sign-off':>10}{'KL to SFT':>11}"
          f"{'wall time':>11}")
    for name, (stats, kl, seconds) in rows.items():
        print(f"{name:<8}{stats['exact']:>8.1%}{stats['answer_right']:>14.1%}"
              f"{stats['sign_off']:>10.1%}{kl:>11.3f}{seconds:>10.0f}s")
    if args.quick:
        print("--quick: one layer and short stages, so SFT gets only some answers right; what "
              "the rows show is the sign-off unlearned by PPO and by DPO, not the accuracies of "
              "the default run")
    plot(history, os.path.join(args.out, "ppo.png"))
    plot_curves(os.path.join(args.out, "loss.png"), "RLHF: each stage's training loss", "step",
                ("loss", {name: (range(1, len(c) + 1), c) for name, c in curves.items()}))
    for name, model in [("sft", sft), ("reward_model", reward_model), ("ppo", policy.lm),
                        ("dpo", dpo)]:
        nn.save({"model": model.state_dict(), "config": dataclasses.asdict(config)},
                os.path.join(args.out, f"{name}.safetensors"))
    print(f"checkpoints: sft, reward_model, ppo, dpo .safetensors in {args.out}")
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
    panels = ((("score", "reward model (or judge)"), ("judge", "judge")),
              (("kl", "KL(policy || SFT) per response"),),
              (("exact", "exact"), ("answer_right", "answer right"), ("sign_off", "sign-off")))
    titles = ("mean score of the samples", "KL to SFT (nats per response)",
              "held-out greedy answers")
    for ax, lines, title in zip(axes, panels, titles):
        for key, label in lines:
            ax.plot(its, [h[key] for h in history], marker="o", label=label)
        ax.set_xlabel("PPO iteration")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        if len(lines) > 1:
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
