import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import envs
from purerl.envs.gymnax import make_gymnax
from purerl.envs.wrappers import ClipAction, NormalizeObservation, RecordEpisodeStats, Vectorize


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
