"""The RLHF objectives against hand-computed values: GAE, PPO's clipped losses (both sides of
the clip), the KL estimators (their expectation against the exact KL), the per-token reward,
the KL controllers, the Bradley-Terry and DPO losses."""
import math

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.models.decoding import sample as draw
from tensorgrad.models.rlhf import (
    AdaptiveKLController, FixedKLController, bradley_terry_loss, clipped_policy_loss,
    clipped_value_loss, dpo_loss, gae, kl_estimate, token_rewards,
)


def t(values):
    return tg.tensor(np.asarray(values, dtype=np.float64))


# --- GAE ----------------------------------------------------------------------------------------
def test_gae_matches_a_hand_computed_case():
    # Row 0: a prompt column, then a three-step episode; row 1: a two-step episode, then padding
    # whose (large) rewards and values must not leak in.
    rewards = t([[0.0, 0.5, -0.1, 1.0], [1.0, 2.0, 5.0, 5.0]])
    values = t([[9.0, 0.2, 0.4, 0.3], [0.5, 1.0, 7.0, 7.0]])
    mask = t([[0, 1, 1, 1], [1, 1, 0, 0]])
    advantages, returns = gae(rewards, values, mask, gamma=0.9, lam=0.8)
    # Row 0, backwards: delta_3 = 1 - 0.3 = 0.7 (terminal), A_3 = 0.7;
    # delta_2 = -0.1 + 0.9 * 0.3 - 0.4 = -0.23, A_2 = -0.23 + 0.72 * 0.7 = 0.274;
    # delta_1 = 0.5 + 0.9 * 0.4 - 0.2 = 0.66, A_1 = 0.66 + 0.72 * 0.274 = 0.85728.
    # Row 1: A_1 = 2 - 1 = 1; A_0 = (1 + 0.9 * 1 - 0.5) + 0.72 * 1 = 2.12.
    expected = [[0.0, 0.85728, 0.274, 0.7], [2.12, 1.0, 0.0, 0.0]]
    np.testing.assert_allclose(advantages.numpy(), expected, atol=1e-12)
    np.testing.assert_allclose(returns.numpy(), [[0.0, 1.05728, 0.674, 1.0], [2.62, 2.0, 0, 0]],
                               atol=1e-12)


def test_gae_with_lambda_one_is_the_return_minus_the_value():
    rewards, values, mask = t([[0.1, 0.2, 0.7]]), t([[0.3, -0.2, 0.5]]), t([[1, 1, 1]])
    advantages, returns = gae(rewards, values, mask, gamma=1.0, lam=1.0)
    np.testing.assert_allclose(returns.numpy(), [[1.0, 0.9, 0.7]], atol=1e-12)
    np.testing.assert_allclose(advantages.numpy(), [[0.7, 1.1, 0.2]], atol=1e-12)


# --- PPO's clipped losses -----------------------------------------------------------------------
@pytest.mark.parametrize("advantage, ratio, loss, moves", [
    (2.0, 1.5, -2.0 * 1.2, False),  # good action pushed past 1 + clip: clipped, no gradient
    (2.0, 0.5, -2.0 * 0.5, True),  # good action made rarer: unclipped, the gradient restores it
    (-2.0, 0.5, 2.0 * 0.8, False),  # bad action pushed below 1 - clip: clipped, no gradient
    (-2.0, 1.5, 2.0 * 1.5, True),  # bad action made likelier: unclipped, pushed back
    (2.0, 1.1, -2.0 * 1.1, True),  # inside the clip range: the plain surrogate
])
def test_clipped_policy_loss_on_both_sides_of_the_clip(advantage, ratio, loss, moves):
    old = t([[-1.0]])
    new = (old + math.log(ratio)).detach().requires_grad_()
    value, clipped = clipped_policy_loss(new, old, t([[advantage]]), t([[1.0]]), clip=0.2)
    assert value.item() == pytest.approx(loss)
    value.backward()
    grad = new.grad.item()
    if moves:
        # d(-A * ratio)/d logp = -A * ratio: descent raises logp when A > 0
        assert grad == pytest.approx(-advantage * ratio)
    else:
        assert grad == 0.0
    assert clipped.item() == (0.0 if moves else 1.0)


def test_clipped_policy_loss_averages_over_the_masked_tokens_only():
    logp = t([[-1.0, -2.0, -3.0]])
    loss, _ = clipped_policy_loss(logp, logp, t([[1.0, 3.0, 100.0]]), t([[1, 1, 0]]))
    assert loss.item() == pytest.approx(-2.0)  # ratio 1: -(1 + 3) / 2


def test_clipped_value_loss_takes_the_larger_error():
    old, returns, mask = t([[1.0, 1.0]]), t([[2.0, 0.0]]), t([[1, 1]])
    # Column 0 moved 1.0 -> 1.5 towards the return 2 (clip 0.2 stops it at 1.2): the clipped
    # error (0.8^2) is larger and taken. Column 1 moved 1.0 -> 0.5 (clipped 0.8), towards the
    # return 0: again the clipped error, 0.8^2.
    values = t([[1.5, 0.5]]).requires_grad_()
    loss = clipped_value_loss(values, old, returns, mask, clip=0.2)
    assert loss.item() == pytest.approx(0.5 * (0.64 + 0.64) / 2)
    loss.backward()
    assert values.grad.numpy().tolist() == [[0.0, 0.0]]  # the clipped side carries no gradient
    # Moving away from the return is never clipped: the full error and its gradient.
    away = t([[0.5]]).requires_grad_()
    loss = clipped_value_loss(away, t([[1.0]]), t([[2.0]]), t([[1]]), clip=0.2)
    assert loss.item() == pytest.approx(0.5 * 1.5 ** 2)
    loss.backward()
    assert away.grad.item() == pytest.approx(-1.5)


# --- the KL penalty ------------------------------------------------------------------------------
P = np.array([0.5, 0.2, 0.15, 0.1, 0.05])
Q = np.array([0.3, 0.3, 0.2, 0.1, 0.1])
EXACT_KL = float((P * np.log(P / Q)).sum())


@pytest.mark.parametrize("estimator", ["k1", "k3"])
def test_unbiased_kl_estimators_have_the_exact_kl_as_expectation(estimator):
    per_outcome = kl_estimate(t(np.log(P)), t(np.log(Q)), estimator).numpy()
    assert float((P * per_outcome).sum()) == pytest.approx(EXACT_KL, rel=1e-12)


def test_k2_is_close_for_close_distributions_and_k3_is_never_negative():
    k2 = kl_estimate(t(np.log(P)), t(np.log(Q)), "k2").numpy()
    assert float((P * k2).sum()) == pytest.approx(EXACT_KL, rel=0.25)
    assert (kl_estimate(t(np.log(P)), t(np.log(Q)), "k3").numpy() >= 0).all()
    assert (kl_estimate(t(np.log(P)), t(np.log(Q)), "k1").numpy() < 0).any()
    with pytest.raises(ValueError, match="unknown estimator 'k4'"):
        kl_estimate(t([0.0]), t([0.0]), "k4")


def test_kl_estimate_on_samples_converges_to_the_exact_kl():
    tg.manual_seed(0)
    n = 20_000
    drawn = draw(t(np.tile(P, (n, 1)))).numpy()  # n tokens sampled from P
    logp, logq = t(np.log(P)[drawn]), t(np.log(Q)[drawn])
    for estimator in ("k1", "k3"):
        estimate = kl_estimate(logp, logq, estimator).mean().item()
        assert estimate == pytest.approx(EXACT_KL, abs=0.015), estimator  # ~4 standard errors


def test_token_rewards_put_the_score_on_the_last_response_token():
    logp = t([[-1.0, -1.0, -2.0, -1.0], [-1.0, -0.5, -1.0, -1.0]])
    ref = t([[-1.0, -2.0, -1.0, -1.0], [-1.0, -1.0, -1.0, -1.0]])
    mask = t([[0, 1, 1, 0], [0, 1, 1, 1]])
    rewards, kl = token_rewards(t([3.0, -1.0]), logp, ref, mask, beta=0.5)
    np.testing.assert_allclose(kl.numpy(), [[0, 1.0, -1.0, 0], [0, 0.5, 0, 0]])
    np.testing.assert_allclose(rewards.numpy(), [[0, -0.5, 0.5 + 3.0, 0], [0, -0.25, 0, -1.0]])


def test_the_adaptive_kl_controller_moves_beta_towards_the_target():
    control = AdaptiveKLController(0.1, target=1.0, horizon=100)
    control.update(kl=5.0, n_steps=10)  # far above target: the error is clipped at +0.2
    assert control.beta == pytest.approx(0.1 * 1.02)
    control.update(kl=0.5, n_steps=10)  # below target: -0.5 -> clipped -0.2
    assert control.beta == pytest.approx(0.1 * 1.02 * 0.98)
    fixed = FixedKLController(0.3)
    fixed.update(kl=100.0, n_steps=10)
    assert fixed.beta == 0.3


# --- preference losses -------------------------------------------------------------------------
def test_bradley_terry_loss_against_hand_values():
    chosen = t([0.0, 3.0, 1.0]).requires_grad_()
    rejected = t([0.0, 1.0, 2.0])
    loss = bradley_terry_loss(chosen, rejected)
    # -log sigmoid(d) = log(1 + e^-d) for d = 0, 2, -1
    hand = [math.log(2), math.log1p(math.exp(-2)), math.log1p(math.exp(1))]
    assert loss.item() == pytest.approx(sum(hand) / 3, rel=1e-12)
    loss.backward()
    sig = lambda x: 1 / (1 + math.exp(-x))
    np.testing.assert_allclose(chosen.grad.numpy(), [-sig(-d) / 3 for d in (0, 2, -1)])


def test_dpo_loss_against_hand_values():
    # log pi/pi_ref: chosen -1 - (-2) = 1, rejected -3 - (-2) = -1; beta (1 - (-1)) = 1
    loss, chosen_reward, rejected_reward = dpo_loss(t([-1.0]), t([-3.0]), t([-2.0]), t([-2.0]),
                                                    beta=0.5)
    assert loss.item() == pytest.approx(math.log1p(math.exp(-1.0)), rel=1e-12)
    assert chosen_reward.item() == pytest.approx(0.5)
    assert rejected_reward.item() == pytest.approx(-0.5)
    # The policy equal to the reference: no preference yet, log 2 whatever beta is.
    same = t([-4.0, -7.0])
    assert dpo_loss(same, same * 2, same, same * 2, beta=3.0)[0].item() == \
        pytest.approx(math.log(2))


def test_dpo_gradient_raises_chosen_and_lowers_rejected():
    chosen, rejected = t([-2.0]).requires_grad_(), t([-2.0]).requires_grad_()
    loss, _, _ = dpo_loss(chosen, rejected, t([-2.0]), t([-2.0]), beta=0.1)
    loss.backward()
    assert chosen.grad.item() == pytest.approx(-0.05)  # -beta * sigmoid(0)
    assert rejected.grad.item() == pytest.approx(0.05)
