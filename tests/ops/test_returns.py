import chex
import hypothesis.extra.numpy as hnp
import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from purerl.core.ops.returns import (
    clipped_double_q_targets,
    compute_gae,
    compute_lambda_returns,
    q_learning_targets,
)


def next_step_values(values, last_value):
    """Shifts ``[T, B]`` values one step forward, appending ``last_value`` (``[B]``)."""
    chex.assert_rank([values, last_value], [2, 1])
    return np.concatenate([values[1:], last_value[None]], axis=0)


def gae_reference(rewards, values, next_values, terminated, done, gamma, lam):
    """Plain NumPy GAE, one step at a time."""
    num_steps, num_envs = rewards.shape
    advantages = np.zeros((num_steps, num_envs))
    running = np.zeros(num_envs)
    for t in reversed(range(num_steps)):
        delta = rewards[t] + gamma * (1 - terminated[t]) * next_values[t] - values[t]
        running = delta + gamma * lam * (1 - done[t]) * running
        advantages[t] = running
    return advantages, advantages + values


def random_rollout(seed, num_steps=7, num_envs=3):
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(num_steps, num_envs)).astype(np.float32)
    values = rng.normal(size=(num_steps, num_envs)).astype(np.float32)
    next_values = rng.normal(size=(num_steps, num_envs)).astype(np.float32)
    terminated = rng.random((num_steps, num_envs)) < 0.2
    truncated = (rng.random((num_steps, num_envs)) < 0.2) & ~terminated
    return rewards, values, next_values, terminated, terminated | truncated


def test_hand_computed_two_steps_with_termination():
    # One env, gamma 0.5, lambda 1: step 0 continues, step 1 terminates.
    # delta_1 = 1 + 0 - 0.5 = 0.5;  A_1 = 0.5
    # delta_0 = 0 + 0.5 * 2 - 1 = 0; A_0 = 0 + 0.5 * 1 * 0.5 = 0.25
    rewards = np.array([[0.0], [1.0]], np.float32)
    values = np.array([[1.0], [0.5]], np.float32)
    next_values = np.array([[2.0], [9.0]], np.float32)  # 9 is never used: terminal
    terminated = np.array([[False], [True]])
    adv, targets = compute_gae(rewards, values, next_values, terminated, terminated, 0.5, 1.0)
    np.testing.assert_allclose(adv, [[0.25], [0.5]])
    np.testing.assert_allclose(targets, [[1.25], [1.0]])


def test_truncation_bootstraps_but_cuts_the_trace():
    # Truncated at step 0: delta_0 = 1 + 0.9 * 3 - 0 = 3.7, and step 1's advantage must not leak in.
    rewards = np.array([[1.0], [5.0]], np.float32)
    values = np.zeros((2, 1), np.float32)
    next_values = np.array([[3.0], [0.0]], np.float32)
    terminated = np.zeros((2, 1), bool)
    done = np.array([[True], [False]])
    adv, _ = compute_gae(rewards, values, next_values, terminated, done, 0.9, 0.95)
    np.testing.assert_allclose(adv[0, 0], 3.7, rtol=1e-6)


@pytest.mark.parametrize("seed", range(5))
def test_matches_numpy_reference_with_episode_boundaries(seed):
    rollout = random_rollout(seed)
    with jax.numpy_rank_promotion("raise"):
        adv, targets = compute_gae(*rollout, 0.97, 0.9)
    ref_adv, ref_targets = gae_reference(*rollout, 0.97, 0.9)
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(targets, ref_targets, rtol=1e-5, atol=1e-5)


def test_jit_equals_no_jit():
    rollout = random_rollout(11)
    jitted = jax.jit(compute_gae)(*rollout, 0.99, 0.95)
    with jax.disable_jit():
        eager = compute_gae(*rollout, 0.99, 0.95)
    np.testing.assert_allclose(jitted[0], eager[0], rtol=1e-6, atol=1e-6)


floats = st.floats(-5, 5, width=32)


@given(
    hnp.arrays(np.float32, (6, 2), elements=floats),
    hnp.arrays(np.float32, (6, 2), elements=floats),
    hnp.arrays(np.float32, (6, 2), elements=floats),
    hnp.arrays(bool, (6, 2)),
)
def test_lambda_zero_gives_one_step_td_errors(rewards, values, next_values, terminated):
    adv, _ = compute_gae(rewards, values, next_values, terminated, terminated, 0.9, 0.0)
    expected = rewards + 0.9 * (1 - terminated) * next_values - values
    np.testing.assert_allclose(adv, expected, rtol=1e-5, atol=1e-5)


@given(
    hnp.arrays(np.float32, (6, 2), elements=floats), hnp.arrays(np.float32, (6, 2), elements=floats)
)
def test_lambda_one_without_terminations_is_discounted_return_minus_value(rewards, values):
    last_value = np.float32([0.5, -1.0])
    next_values = np.asarray(next_step_values(values, last_value))
    no_done = np.zeros_like(rewards, bool)
    adv, _ = compute_gae(rewards, values, next_values, no_done, no_done, 0.9, 1.0)
    discounts = 0.9 ** np.arange(6)
    for t in range(6):
        ret = np.sum(discounts[: 6 - t, None] * rewards[t:], axis=0) + 0.9 ** (6 - t) * last_value
        np.testing.assert_allclose(adv[t], ret - values[t], rtol=1e-4, atol=1e-4)


@given(st.integers(0, 4), hnp.arrays(np.float32, (6, 1), elements=floats))
def test_values_after_a_termination_do_not_change_earlier_advantages(term_step, later_values):
    rewards, values, next_values, _, _ = random_rollout(3, num_steps=6, num_envs=1)
    terminated = np.zeros((6, 1), bool)
    terminated[term_step] = True
    base, _ = compute_gae(rewards, values, next_values, terminated, terminated, 0.9, 0.9)
    values2, next2 = values.copy(), next_values.copy()
    values2[term_step + 1 :] = later_values[term_step + 1 :]
    next2[term_step:] = later_values[term_step:]  # next value at the terminal step is unused too
    changed, _ = compute_gae(rewards, values2, next2, terminated, terminated, 0.9, 0.9)
    np.testing.assert_allclose(
        base[: term_step + 1], changed[: term_step + 1], rtol=1e-6, atol=1e-6
    )


def test_next_step_values_shifts_and_appends():
    values = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = next_step_values(values, np.float32([10, 11]))
    np.testing.assert_array_equal(out, [[2, 3], [4, 5], [10, 11]])


def q_targets_reference(rewards, terminated, next_q_target, gamma, next_q_online=None):
    """Plain NumPy one-step targets, one transition at a time."""
    out = np.zeros(len(rewards))
    for i in range(len(rewards)):
        if next_q_online is None:
            best = next_q_target[i].max()
        else:
            best = next_q_target[i, np.argmax(next_q_online[i])]
        out[i] = rewards[i] + (0.0 if terminated[i] else gamma * best)
    return out


def test_q_targets_by_hand():
    # Transition 0 continues: 1 + 0.5 * max(2, 3) = 2.5. Transition 1 terminates: just -1.
    # Double DQN: the online net prefers action 0 for transition 0, so 1 + 0.5 * 2 = 2.
    rewards = np.array([1.0, -1.0], np.float32)
    terminated = np.array([False, True])
    next_q_target = np.array([[2.0, 3.0], [7.0, 9.0]], np.float32)
    next_q_online = np.array([[5.0, 0.0], [0.0, 5.0]], np.float32)
    np.testing.assert_allclose(
        q_learning_targets(rewards, terminated, next_q_target, 0.5), [2.5, -1]
    )
    double = q_learning_targets(rewards, terminated, next_q_target, 0.5, next_q_online)
    np.testing.assert_allclose(double, [2.0, -1.0])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("double", [False, True])
def test_q_targets_match_numpy_reference(seed, double):
    rng = np.random.default_rng(seed)
    n, num_actions = 16, 3
    rewards = rng.normal(size=n).astype(np.float32)
    # A truncated transition is simply not terminated: it must bootstrap like any other.
    terminated = rng.random(n) < 0.3
    next_q_target = rng.normal(size=(n, num_actions)).astype(np.float32)
    next_q_online = rng.normal(size=(n, num_actions)).astype(np.float32) if double else None
    with jax.numpy_rank_promotion("raise"):
        got = q_learning_targets(rewards, terminated, next_q_target, 0.9, next_q_online)
        jitted = jax.jit(q_learning_targets)(rewards, terminated, next_q_target, 0.9, next_q_online)
    expected = q_targets_reference(rewards, terminated, next_q_target, 0.9, next_q_online)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jitted, got, rtol=1e-6, atol=1e-6)


def test_q_targets_pass_no_gradient():
    grad = jax.grad(lambda q: q_learning_targets(np.ones(2), np.zeros(2, bool), q, 0.9).sum())
    np.testing.assert_array_equal(grad(np.ones((2, 3), np.float32)), 0.0)


# ---- Q(lambda) / TD(lambda) returns ---------------------------------------------------------


def lambda_returns_reference(rewards, next_values, terminated, done, gamma, lam):
    """The recursion itself, step by step, with no values of the states acted on."""
    num_steps, num_envs = rewards.shape
    returns = np.zeros((num_steps, num_envs))
    for t in reversed(range(num_steps)):
        later = returns[t + 1] if t + 1 < num_steps else next_values[t]
        cont = 1.0 - done[t]
        mixed = (1.0 - lam * cont) * next_values[t] + lam * cont * later
        returns[t] = rewards[t] + gamma * (1.0 - terminated[t]) * mixed
    return returns


def consistent_rollout(seed, num_steps=9, num_envs=3):
    """A rollout whose values agree with its next values within episodes, as values taken from
    one pass over the rollout do: ``values[t + 1] == next_values[t]`` unless step t ended."""
    rewards, values, next_values, terminated, done = random_rollout(seed, num_steps, num_envs)
    for t in range(num_steps - 1):
        values[t + 1] = np.where(done[t], values[t + 1], next_values[t])
    return rewards, values, next_values, terminated, done


def test_lambda_returns_by_hand():
    # One env, gamma 0.5, lambda 0.5, three steps; step 1 is truncated (bootstrap 4, no trace).
    # G_2 = 1 + 0.5 * 8 = 5                    (the last step bootstraps fully from 8)
    # G_1 = 0 + 0.5 * 4 = 2                    (truncated: its final observation's value)
    # G_0 = 2 + 0.5 * (0.5 * 6 + 0.5 * G_1) = 2 + 0.5 * 4 = 4
    rewards = np.array([[2.0], [0.0], [1.0]], np.float32)
    next_values = np.array([[6.0], [4.0], [8.0]], np.float32)
    values = np.array([[0.0], [6.0], [3.0]], np.float32)
    terminated = np.zeros((3, 1), bool)
    done = np.array([[False], [True], [False]])
    returns = compute_lambda_returns(rewards, values, next_values, terminated, done, 0.5, 0.5)
    np.testing.assert_allclose(returns, [[4.0], [2.0], [5.0]], rtol=1e-6)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("lam", [0.0, 0.65, 1.0])
def test_lambda_returns_match_the_numpy_recursion(seed, lam):
    rewards, values, next_values, terminated, done = consistent_rollout(seed)
    expected = lambda_returns_reference(rewards, next_values, terminated, done, 0.9, lam)
    got = compute_lambda_returns(rewards, values, next_values, terminated, done, 0.9, lam)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@given(
    hnp.arrays(np.float32, (5, 2), elements=floats),
    hnp.arrays(np.float32, (5, 2), elements=floats),
    hnp.arrays(np.bool_, (5, 2)),
)
def test_lambda_zero_gives_one_step_q_learning_targets(rewards, next_values, terminated):
    values = np.zeros_like(rewards)
    got = compute_lambda_returns(rewards, values, next_values, terminated, terminated, 0.9, 0.0)
    np.testing.assert_allclose(got, rewards + 0.9 * (1 - terminated) * next_values, atol=1e-4)


# ---- clipped double-Q targets (TD3, SAC) ------------------------------------------------------


def clipped_double_q_reference(rewards, terminated, next_q, gamma, next_log_prob, alpha):
    """One transition at a time, in float64."""
    out = np.zeros(len(rewards))
    for i in range(len(rewards)):
        value = min(float(q) for q in next_q[:, i])
        if next_log_prob is not None:
            value -= alpha * float(next_log_prob[i])
        out[i] = rewards[i] + (0.0 if terminated[i] else gamma * value)
    return out


def test_clipped_double_q_targets_by_hand():
    # Transition 0 continues: 1 + 0.5 * min(2, 3) = 2 (TD3); with the soft term and
    # alpha 0.1, log pi = -2: 1 + 0.5 * (2 + 0.2) = 2.1 (SAC). Transition 1 terminates: -1.
    rewards = np.array([1.0, -1.0], np.float32)
    terminated = np.array([False, True])
    next_q = np.array([[2.0, 7.0], [3.0, 5.0]], np.float32)
    np.testing.assert_allclose(
        clipped_double_q_targets(rewards, terminated, next_q, 0.5), [2.0, -1.0]
    )
    soft = clipped_double_q_targets(
        rewards, terminated, next_q, 0.5, np.array([-2.0, 4.0], np.float32), 0.1
    )
    np.testing.assert_allclose(soft, [2.1, -1.0], rtol=1e-6)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("soft", [False, True])
def test_clipped_double_q_targets_match_numpy_reference(seed, soft):
    rng = np.random.default_rng(seed)
    n, num_critics = 16, 2 + seed % 2  # twin critics, and a three-critic ensemble
    rewards = rng.normal(size=n).astype(np.float32)
    terminated = rng.random(n) < 0.3
    next_q = rng.normal(size=(num_critics, n)).astype(np.float32)
    log_prob = rng.normal(size=n).astype(np.float32) if soft else None
    with jax.numpy_rank_promotion("raise"):
        got = clipped_double_q_targets(rewards, terminated, next_q, 0.9, log_prob, 0.2)
        jitted = jax.jit(clipped_double_q_targets)(rewards, terminated, next_q, 0.9, log_prob, 0.2)
    expected = clipped_double_q_reference(rewards, terminated, next_q, 0.9, log_prob, 0.2)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jitted, got, rtol=1e-6, atol=1e-6)


def test_clipped_double_q_targets_pass_no_gradient():
    def total(next_q, log_prob):
        targets = clipped_double_q_targets(
            np.ones(2), np.zeros(2, bool), next_q, 0.9, log_prob, 0.2
        )
        return targets.sum()

    grads = jax.grad(total, argnums=(0, 1))(np.ones((2, 2), np.float32), np.ones(2, np.float32))
    for grad in grads:
        np.testing.assert_array_equal(grad, 0.0)
