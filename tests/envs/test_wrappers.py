import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import envs
from purerl.core.env import Discrete, EnvSpec, Step, no_episodes
from purerl.envs.gymnax import make_gymnax
from purerl.envs.wrappers import (
    ClipAction,
    NormalizeObservation,
    RecordEpisodeStats,
    ScaleReward,
    Vectorize,
)


def run_steps(env, actions, seed=0):
    params = env.default_params
    state, obs = env.reset(jax.random.key(seed), params)
    steps = []
    step_fn = jax.jit(env.step)
    for i, action in enumerate(actions):
        state, step = step_fn(jax.random.fold_in(jax.random.key(seed), i), state, action, params)
        steps.append(step)
    return obs, steps


def test_episode_stats_across_auto_resets_match_hand_count():
    # ProbeTwoStep: every episode is two steps with rewards 0 then 1.
    env = envs.make("ProbeTwoStep-v0", 2)
    _, steps = run_steps(env, [jnp.zeros(2, jnp.int32)] * 6)
    done = np.stack([np.asarray(s.episode.done) for s in steps])
    returns = np.stack([np.asarray(s.episode.returns) for s in steps])
    lengths = np.stack([np.asarray(s.episode.lengths) for s in steps])
    np.testing.assert_array_equal(done[:, 0], [0, 1, 0, 1, 0, 1])
    np.testing.assert_array_equal(returns[done], 1.0)
    np.testing.assert_array_equal(lengths[done], 2)


def test_cartpole_episode_returns_equal_summed_rewards():
    env = envs.make("CartPole-v1", 3)
    actions = [jnp.zeros(3, jnp.int32)] * 40  # always pushing left ends episodes quickly
    _, steps = run_steps(env, actions)
    rewards = np.stack([np.asarray(s.reward) for s in steps])
    dones = np.stack([np.asarray(s.terminated | s.truncated) for s in steps])
    reported = np.stack([np.asarray(s.episode.returns) for s in steps])
    for b in range(3):
        start = 0
        for t in np.nonzero(dones[:, b])[0]:
            assert reported[t, b] == rewards[start : t + 1, b].sum()
            start = t + 1
    assert dones.sum() >= 3


def test_vectorize_gives_each_env_its_own_key_and_shares_nothing_else():
    env = Vectorize(make_gymnax("CartPole-v1"), 4)
    _, obs = env.reset(jax.random.key(0), env.default_params)
    assert obs.shape == (4, 4)
    assert len({tuple(np.round(o, 6)) for o in np.asarray(obs)}) == 4


def test_vectorize_rejects_already_vectorised():
    with pytest.raises(TypeError, match="already vectorised"):
        Vectorize(Vectorize(make_gymnax("CartPole-v1"), 2), 2)


def test_clip_action_clips_what_the_env_sees():
    base = make_gymnax("Pendulum-v1")
    clipped = ClipAction(base)
    params = base.default_params
    state, _ = base.reset(jax.random.key(0), params)
    _, big = clipped.step(jax.random.key(1), state, jnp.array([50.0]), params)
    _, edge = base.step(jax.random.key(1), state, jnp.array([2.0]), params)
    np.testing.assert_allclose(big.reward, edge.reward)


@pytest.mark.slow
def test_normalize_observation_uses_stats_of_all_seen_observations():
    env = NormalizeObservation(RecordEpisodeStats(Vectorize(make_gymnax("CartPole-v1"), 64)))
    params = env.default_params
    state, obs = env.reset(jax.random.key(0), params)
    np.testing.assert_allclose(np.asarray(obs).mean(0), 0.0, atol=1e-3)
    assert np.all(np.abs(np.asarray(obs).std(0) - 1.0) < 1e-2)
    state, step = env.step(jax.random.key(1), state, jnp.zeros(64, jnp.int32), params)
    assert float(state.obs_stats.count) == pytest.approx(128, rel=1e-3)
    assert step.final_obs.shape == step.obs.shape


def test_normalize_observation_needs_a_batch():
    with pytest.raises(TypeError, match="vectorised"):
        NormalizeObservation(make_gymnax("CartPole-v1"))


@dataclasses.dataclass(frozen=True)
class Scripted:
    """A vectorised environment that plays back fixed ``[T, B]`` rewards and episode ends."""

    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    pure: bool = True

    @property
    def spec(self) -> EnvSpec:
        return EnvSpec("Scripted", (1,), "float32", Discrete(2), self.rewards.shape[1])

    @property
    def default_params(self) -> Any:
        return None

    def reset(self, key, params):
        return jnp.int32(0), jnp.zeros((self.spec.num_envs, 1), jnp.float32)

    def step(self, key, t, action, params):
        reward = jnp.asarray(self.rewards)[t]
        obs = jnp.zeros((self.spec.num_envs, 1), jnp.float32)
        terminated = jnp.asarray(self.terminated)[t]
        truncated = jnp.asarray(self.truncated)[t]
        valid = jnp.ones_like(terminated)
        return t + 1, Step(obs, reward, terminated, truncated, obs, valid, no_episodes(reward))


def scale_reward_reference(rewards, dones, gamma, clip=10.0):
    """Rewards divided by the standard deviation of every discounted return seen so far."""
    seen, returns, scaled = [], np.zeros(rewards.shape[1]), []
    for reward, done in zip(rewards.astype(np.float64), dones, strict=True):
        returns = returns * gamma + reward
        seen.extend(returns)
        # The statistics start from a prior of weight 1e-4 at mean 0, variance 1.
        count = 1e-4 + len(seen)
        mean = np.sum(seen) / count
        var = (1e-4 + np.sum(np.square(seen))) / count - mean**2
        scaled.append(np.clip(reward / np.sqrt(var + 1e-8), -clip, clip))
        returns = np.where(done, 0.0, returns)
    return np.array(scaled)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scale_reward_matches_numpy_and_leaves_episode_returns_unscaled(seed):
    rng = np.random.default_rng(seed)
    steps, num_envs, gamma = 40, 3, 0.9
    rewards = rng.normal(-4.0, 3.0, (steps, num_envs)).astype(np.float32)
    terminated = rng.random((steps, num_envs)) < 0.1
    truncated = ~terminated & (rng.random((steps, num_envs)) < 0.1)
    env = ScaleReward(RecordEpisodeStats(Scripted(rewards, terminated, truncated)), gamma=gamma)
    _, out = run_steps(env, [jnp.zeros(num_envs, jnp.int32)] * steps)
    expected = scale_reward_reference(rewards, terminated | truncated, gamma)
    np.testing.assert_allclose([s.reward for s in out], expected, rtol=2e-4, atol=1e-5)
    # What is learned from is scaled; what is reported is the environment's own return.
    done = [np.asarray(s.episode.done) for s in out]
    assert np.any(done)
    returns = np.zeros(num_envs)
    for reward, step, ended in zip(rewards, out, done, strict=True):
        returns += reward
        np.testing.assert_allclose(np.asarray(step.episode.returns)[ended], returns[ended], 1e-5)
        returns[ended] = 0.0


def test_scale_reward_keeps_large_rewards_within_the_clip():
    # After 50 steps of unit-scale rewards on 8 envs, one of 1e4 is hundreds of deviations out.
    rewards = np.random.default_rng(0).normal(0.0, 1.0, (51, 8)).astype(np.float32)
    rewards[50, 0] = 1e4
    no = np.zeros(rewards.shape, bool)
    env = ScaleReward(RecordEpisodeStats(Scripted(rewards, no, no)), gamma=0.99)
    _, out = run_steps(env, [jnp.zeros(8, jnp.int32)] * 51)
    assert float(out[50].reward[0]) == 10.0
    assert np.all(np.abs(np.asarray(out[50].reward[1:])) < 10.0)


def test_scale_reward_needs_a_batch():
    with pytest.raises(TypeError, match="vectorised"):
        ScaleReward(make_gymnax("CartPole-v1"))
    with pytest.raises(ValueError, match="scale_reward_gamma needs num_envs"):
        envs.make("CartPole-v1", scale_reward_gamma=0.99)
