"""The RLHF pieces that run a GPT: the task tokenizer and judge, the SFT mask, the reward
model's last-token selection under padding, sampled responses and their masks, one PPO
iteration and the DPO batch loss."""
import math
import random

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.models import GPT, GPTConfig
from tensorgrad.models.rlhf import (
    SIGN_OFF, PolicyWithValue, PPOConfig, PPOTrainer, RewardModel, Task, TaskTokenizer,
    answer_stats, bradley_terry_loss, clone, demonstrations, dpo_batch_loss, encode_pairs, judge,
    judged_pairs, kl_to_reference, last_token_index, pair_batches, preference_accuracy, sample,
    sample_tasks, sequence_logprob, sft_loss, sft_targets, synthetic_pairs, with_sign_off,
)
from tensorgrad.models.rlhf.lm import forward, token_logprobs
from tensorgrad.models.rlhf.tasks import corrupt

TOK = TaskTokenizer()


@pytest.fixture
def lm():
    return GPT(GPTConfig.tiny(vocab_size=TOK.vocab_size, n_embd=32))


# --- tasks, tokenizer, judge ------------------------------------------------------------------
def test_the_tokenizer_reads_the_format_markers_as_single_tokens():
    task = Task("add", "23+45", "68")
    ids = TOK.encode(task.prompt + "68<eos>")
    assert task.prompt == "### Instruction: 23+45 ### Response: "
    assert len(ids) == 1 + 5 + 1 + 2 + 1
    assert TOK.decode(ids) == task.prompt + "68<eos>"
    assert TOK.decode_response(TOK.encode("68<eos>12")) == "68"
    with pytest.raises(ValueError, match="character 'A' is not in the vocabulary"):
        TOK.encode("A")


def test_tasks_have_checkable_answers():
    for task in sample_tasks(30, seed=1):
        if task.kind == "add":
            a, b = task.instruction.split("+")
            assert int(task.answer) == int(a) + int(b)
        elif task.kind == "sort":
            assert task.answer == "".join(sorted(task.instruction.split()[1]))
        else:
            assert task.answer == task.instruction.split()[1][::-1]
    assert sample_tasks(5, seed=3) == sample_tasks(5, seed=3)


def test_the_judge_prefers_correct_then_shorter_then_closer():
    task = Task("add", "23+45", "68")
    assert judge(task, "68") == 1.0
    assert judge(task, "689") == 0.5  # right but longer
    assert judge(task, "69") == pytest.approx(0.2)  # one of two characters in place
    assert judge(task, "x") == 0.0
    pairs = judged_pairs(task, ["69", "68", "689", "69"])
    assert [(p.chosen, p.rejected) for p in pairs] == [("68", "689"), ("68", "69"),
                                                        ("689", "69")]
    rng = random.Random(0)
    for task in sample_tasks(60, seed=2):
        wrong = corrupt(task, rng)
        assert judge(task, wrong) < judge(task, task.answer)
    tasks = sample_tasks(12, seed=4)
    for task, pair in zip(tasks, synthetic_pairs(tasks, seed=0)):
        assert pair.prompt == task.prompt and pair.chosen == task.answer
        assert judge(task, pair.rejected) < 1.0


def test_the_demonstrators_sign_off_at_the_rate_asked_and_the_judge_dislikes_it():
    answers = [str(i) for i in range(2000)]
    signed = with_sign_off(answers, 0.6, random.Random(0))
    assert all(s in (a, a + SIGN_OFF) for a, s in zip(answers, signed))
    assert 0.56 < sum(s.endswith(SIGN_OFF) for s in signed) / len(signed) < 0.64
    assert with_sign_off(answers, 0.0, random.Random(0)) == answers
    with pytest.raises(ValueError, match="rate must be in"):
        with_sign_off(answers, 1.5, random.Random(0))
    task = Task("add", "23+45", "68")
    assert judge(task, "68" + SIGN_OFF) == 0.5  # right, but longer than asked
    tasks = sample_tasks(64, seed=5)
    seqs = demonstrations(TOK, tasks, sign_off=1.0, rng=random.Random(0))
    responses = [TOK.decode(row[mask.astype(bool)]) for row, mask in
                 zip(seqs.input_ids.numpy(), seqs.response_mask.numpy())]
    assert responses == [t.answer + SIGN_OFF + "<eos>" for t in tasks]
    with pytest.raises(ValueError, match="sign_off needs rng"):
        demonstrations(TOK, tasks, sign_off=0.5)


def test_answer_stats_tell_exact_from_right_but_signed_off():
    tasks = [Task("add", "1+1", "2"), Task("add", "2+2", "4"), Task("sort", "sort 21", "12"),
             Task("reverse", "reverse ab", "ba")]
    stats = answer_stats(tasks, ["2", "4" + SIGN_OFF, "21", "ba" + SIGN_OFF + SIGN_OFF])
    assert stats == {"exact": 0.25, "answer_right": 0.75, "sign_off": 0.5}
    with pytest.raises(ValueError, match="one response per task"):
        answer_stats(tasks, ["2"])


# --- SFT: the loss on response tokens only -------------------------------------------------------
def test_sft_targets_cover_the_response_and_its_eos_only():
    seqs = encode_pairs(TOK, ["### Instruction: 1+1 ### Response: ", "### Instruction: 9 ### "
                              "Response: "], ["2", "10"])
    targets = sft_targets(seqs).numpy()
    ids = seqs.input_ids.numpy()
    # row 0: prompt of 5 tokens, response "2" + <eos>; the position before each response token
    # predicts it
    assert targets[0].tolist() == [-100] * 4 + [ids[0, 5], TOK.eos_id] + [-100]
    assert targets[1].tolist() == [-100] * 2 + [ids[1, 3], ids[1, 4], TOK.eos_id] + [-100] * 2
    assert seqs.attention_mask.numpy().tolist() == [[1] * 7, [1] * 6 + [0]]


def test_sft_loss_is_the_mean_response_token_nll(lm):
    tasks = sample_tasks(4, seed=0)
    seqs = encode_pairs(TOK, [t.prompt for t in tasks], [t.answer for t in tasks])
    logits, _ = forward(lm, seqs)
    logp = token_logprobs(logits, seqs.input_ids).detach().numpy()
    response = seqs.response_mask.numpy()[:, 1:]
    real = seqs.attention_mask.numpy()[:, 1:]
    on_response = -(logp * response).sum() / response.sum()
    on_everything = -(logp * real).sum() / real.sum()
    assert sft_loss(lm, seqs).item() == pytest.approx(on_response, rel=1e-5)
    assert abs(on_response - on_everything) > 1e-3  # the mask makes a difference here


# --- the reward model --------------------------------------------------------------------------
def test_last_token_index_under_any_padding():
    mask = tg.tensor([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [0, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert last_token_index(mask).tolist() == [2, 4, 2, 4]


def test_the_reward_model_reads_the_last_real_token(lm):
    rm = RewardModel.from_lm(lm)
    tg.nn.init.normal_(rm.head.weight)  # a head that is not all zero
    prompts = ["### Instruction: 12+3 ### Response: ", "### Instruction: sort 321 ### Response: ",
               "### Instruction: 1+1 ### Response: "]
    responses = ["15", "123", "2222"]
    batch = rm(encode_pairs(TOK, prompts, responses))  # right-padded to the longest
    alone = [rm(encode_pairs(TOK, [p], [r])).item() for p, r in zip(prompts, responses)]
    np.testing.assert_allclose(batch.detach().numpy(), alone, rtol=1e-5, atol=1e-6)
    # The score is the head applied to the hidden state of <eos>, the last real token.
    seqs = encode_pairs(TOK, prompts, responses)
    _, hidden = forward(rm.backbone, seqs)
    last = last_token_index(seqs.attention_mask).tolist()
    assert [seqs.input_ids[i, j].item() for i, j in enumerate(last)] == [TOK.eos_id] * 3
    by_hand = [rm.head(hidden[i, j]).item() for i, j in enumerate(last)]
    np.testing.assert_allclose(batch.detach().numpy(), by_hand, rtol=1e-5, atol=1e-6)


def test_the_reward_model_starts_from_the_lm_and_learns_a_preference(lm):
    rm = RewardModel.from_lm(lm)
    assert np.array_equal(rm.backbone.wte.weight.detach().numpy(), lm.wte.weight.detach().numpy())
    pairs = synthetic_pairs(sample_tasks(8, seed=0), seed=0)
    chosen, rejected = pair_batches(TOK, pairs)
    optimizer = tg.optim.AdamW(rm.parameters(), lr=3e-3)
    first = None
    for _ in range(40):
        loss = bradley_terry_loss(rm(chosen), rm(rejected))
        first = first if first is not None else loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert first == pytest.approx(math.log(2))  # the zero head scores everything 0
    assert loss.item() < 0.35
    assert preference_accuracy(rm, TOK, pairs) >= 0.75
    # Normalising is one gain and one offset: these responses' rewards get mean 0 and std 1 and
    # every preference keeps its sign.
    prompts, answers = [p.prompt for p in pairs], [p.chosen for p in pairs]
    before = rm.score(TOK, prompts, answers).numpy()
    margin = (rm(chosen) - rm(rejected)).detach().numpy()
    mean, std = rm.normalize_(TOK, prompts, answers, batch_size=3)
    after = rm.score(TOK, prompts, answers).numpy()
    assert (mean, std) == (pytest.approx(before.mean(), abs=1e-6),
                           pytest.approx(before.std(ddof=1), rel=1e-5))
    assert abs(after.mean()) < 1e-5 and after.std(ddof=1) == pytest.approx(1, rel=1e-5)
    np.testing.assert_allclose(after, (before - mean) / std, atol=1e-5)
    np.testing.assert_allclose((rm(chosen) - rm(rejected)).detach().numpy(), margin / std,
                               atol=1e-5)
    with pytest.raises(ValueError, match="standard deviation"):
        rm.normalize_(TOK, prompts[:1], answers[:1])
    with pytest.raises(ValueError, match="standard deviation"):
        rm.normalize_(TOK, prompts[:1] * 2, answers[:1] * 2)


@pytest.mark.parametrize("scores, spread", [([2.0, 2.0], False), ([2.0, 2.0000002], False),
                                             ([2.0, 2.01], True)])
def test_normalize_calls_a_spread_within_rounding_none(lm, monkeypatch, scores, spread):
    """Equal responses may score a few ulps apart (the BLAS sums a batch's rows in different
    orders): that is no spread to normalise by, while a real one is."""
    rm = RewardModel.from_lm(lm)
    monkeypatch.setattr(rm, "score", lambda *args: tg.tensor(scores, dtype=tg.float32))
    if spread:
        rm.normalize_(TOK, ["a", "b"], ["c", "d"])
    else:
        with pytest.raises(ValueError, match="within rounding of 0"):
            rm.normalize_(TOK, ["a", "b"], ["c", "d"])


# --- sampling, PPO, DPO --------------------------------------------------------------------------
def test_sampled_responses_end_at_eos_and_their_mask_says_so(lm):
    prompts = [t.prompt for t in sample_tasks(6, seed=0)]
    seqs, texts = sample(lm, TOK, prompts, max_new_tokens=6, temperature=1.0, seed=0)
    width = seqs.input_ids.shape[1] - 6
    for row, text in enumerate(texts):
        new = seqs.input_ids[row, width:].tolist()
        n = seqs.response_mask[row].sum().item()
        assert seqs.response_mask[row, :width].sum().item() == 0
        stop = new.index(TOK.eos_id) + 1 if TOK.eos_id in new else 6
        assert n == stop  # up to and including the <eos>
        assert TOK.decode_response(new) == text
        prompt_len = len(TOK.encode(prompts[row]))
        assert seqs.attention_mask[row].sum().item() == prompt_len + n


def test_one_ppo_iteration_updates_the_policy_and_reports(lm):
    reference = GPT(lm.config)
    reference.load_state_dict(lm.state_dict())
    tasks = sample_tasks(8, seed=0)
    # An untrained model is never right: score the length instead, so the rewards vary.
    score = lambda prompts, texts: [len(text) / 5 for text in texts]
    trainer = PPOTrainer(PolicyWithValue(lm), reference, TOK, score,
                         PPOConfig(minibatch=4, epochs=2, max_new_tokens=5,
                                   lr=1e-3, kl_target=0.5))
    before = lm.wte.weight.detach().numpy().copy()
    stats = trainer.step([t.prompt for t in tasks])
    assert set(stats) >= {"score", "kl", "beta", "reward", "clip_fraction", "value_loss"}
    assert all(math.isfinite(v) for v in stats.values())
    assert abs(stats["kl"]) < 1e-5  # the first rollout comes from the reference itself
    assert not np.array_equal(before, lm.wte.weight.detach().numpy())
    assert reference.wte.weight.grad is None
    assert trainer.kl_control.beta < 0.1  # KL below target: beta shrinks


def test_dpo_batch_loss_starts_at_log2_and_lowers(lm):
    reference = GPT(lm.config)
    reference.load_state_dict(lm.state_dict())
    pairs = synthetic_pairs(sample_tasks(6, seed=0), seed=0)
    chosen, rejected = pair_batches(TOK, pairs)
    optimizer = tg.optim.AdamW(lm.parameters(), lr=3e-3)
    losses = []
    for _ in range(10):
        loss, _, _ = dpo_batch_loss(lm, reference, chosen, rejected, beta=0.5)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert losses[0] == pytest.approx(math.log(2), abs=1e-6)
    assert losses[-1] < losses[0] - 0.1
    assert (sequence_logprob(lm, chosen) - sequence_logprob(reference, chosen)).mean().item() > \
        (sequence_logprob(lm, rejected) - sequence_logprob(reference, rejected)).mean().item()


def test_a_clone_is_independent_and_has_no_kl_to_its_original(lm):
    copy = clone(lm)
    prompts = [t.prompt for t in sample_tasks(6, seed=0)]
    assert kl_to_reference(copy, lm, TOK, prompts, 5, seed=0) == pytest.approx(0.0, abs=1e-6)
    with tg.no_grad():
        copy.wte.weight.mul_(2.0)
    assert not np.array_equal(copy.wte.weight.detach().numpy(), lm.wte.weight.detach().numpy())
    assert kl_to_reference(copy, lm, TOK, prompts, 5, seed=0) > 0.01
