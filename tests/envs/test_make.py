import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import envs
from purerl.core.env import Box, Discrete
from purerl.envs.wrappers import NormalizeObservation, RecordEpisodeStats, ScaleReward
from purerl.presets.ppo import PRESETS as PPO_PRESETS


def test_unknown_id_lists_close_matches():
    with pytest.raises(envs.UnknownEnvError, match="did you mean CartPole-v1"):
        envs.make("CartPol-v1")
    with pytest.raises(envs.UnknownEnvError, match="CartPole-v1"):
        envs.make("cartpole-v1")
    with pytest.raises(envs.UnknownEnvError, match="list_envs"):
        envs.make("zzzzzz")


def test_specs_describe_spaces_and_batch():
    cartpole = envs.make("CartPole-v1", 8)
    assert cartpole.spec.obs_shape == (4,) and cartpole.spec.num_envs == 8
    assert cartpole.spec.action_space == Discrete(2)
    pendulum = envs.make("Pendulum-v1", 2).spec
    assert pendulum.action_space == Box((-2.0,), (2.0,), (1,))
    assert envs.make("Breakout-MinAtar").spec.obs_shape == (10, 10, 4)
    assert "ProbeConstant-v0" in envs.list_envs() and "Acrobot-v1" in envs.list_envs()


def test_options_override_gymnax_params_and_unknown_options_fail():
    env = envs.make("CartPole-v1", 2, max_steps_in_episode=20)
    assert env.default_params.max_steps_in_episode == 20
    with pytest.raises(ValueError, match="no parameter bogus"):
        envs.make("CartPole-v1", 2, bogus=1)


def test_non_positive_num_envs_is_rejected():
    with pytest.raises(ValueError, match="num_envs must be positive"):
        envs.make("CartPole-v1", 0)


def test_truncated_cartpole_reports_final_obs_and_bootstrap_flags():
    env = envs.make("CartPole-v1", 1, max_steps_in_episode=3)
    params = env.default_params
    state, obs = env.reset(jax.random.key(0), params)
    steps = []
    for i in range(3):
        state, step = env.step(jax.random.key(i + 1), state, jnp.array([i % 2], jnp.int32), params)
        steps.append(step)
    last = steps[-1]
    assert bool(last.truncated[0]) and not bool(last.terminated[0])
    # The auto-reset observation is new; the final one continues the episode.
    assert not np.allclose(last.obs, last.final_obs)
    np.testing.assert_allclose(steps[1].obs, steps[1].final_obs)
    assert int(last.episode.lengths[0]) == 3 and float(last.episode.returns[0]) == 3.0


def test_from_config_stacks_the_normalisers_a_config_asks_for():
    cfg = dataclasses.replace(PPO_PRESETS["Pendulum-v1"], normalize_reward=True, gamma=0.9)
    env = envs.from_config(cfg)
    # Observation statistics outermost, where policies and evaluation read them.
    assert isinstance(env, NormalizeObservation)
    assert isinstance(env.env, ScaleReward) and env.env.gamma == 0.9
    assert isinstance(env.env.env, RecordEpisodeStats)
    plain = envs.from_config(dataclasses.replace(cfg, normalize_reward=False, normalize_obs=False))
    assert isinstance(plain, RecordEpisodeStats)
