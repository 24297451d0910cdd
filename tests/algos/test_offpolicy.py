"""SAC and TD3 specifics beyond the shared invariants: warm-up, update-to-data, delayed policy
updates, fixed temperature, target smoothing and the configurations they refuse."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import algos
from purerl.algos.td3 import smoothed_target_actions
from purerl.config import ConfigError
from purerl.core.env import Box
from tests.helpers import leaves_equal


def build(name: str, **changes):
    spec = algos.get(name)
    cfg = dataclasses.replace(spec.smoke, **changes)
    algo = spec.make(cfg).algo
    return cfg, algo, jax.jit(algo.update)


def test_smoothed_target_actions_clip_the_noise_then_the_bounds():
    # Bounds [-2, 2] (half width 2). With policy_noise 1e6 every noise draw is clipped to
    # +-noise_clip 0.5, i.e. +-1 in action units: 1.5 -> 2.5 is clipped to the bound 2, or 0.5.
    space = Box((-2.0,), (2.0,), (1,))
    actions = jnp.full((64, 1), 1.5)
    out = np.asarray(smoothed_target_actions(actions, jax.random.key(0), 1e6, 0.5, space))
    assert set(np.round(out.ravel(), 6)) <= {2.0, 0.5}
    assert {2.0, 0.5} <= set(np.round(out.ravel(), 6))
    # Small noise stays within noise_clip half-widths of the target action.
    small = np.asarray(smoothed_target_actions(actions * 0, jax.random.key(1), 0.2, 0.5, space))
    assert np.abs(small).max() <= 1.0 and np.abs(small).max() > 0


@pytest.mark.parametrize("name", ["sac", "td3"])
def test_warm_up_acts_uniformly_and_takes_no_gradient_step(name):
    # learning_starts 32 with 4 envs: the first update's 8 vector steps are all warm-up.
    cfg, algo, update = build(name)
    state = algo.init(jax.random.key(0))
    after, metrics = update(state, jax.random.key(1))
    assert int(metrics["optim/gradient_steps"]) == 0 and np.isnan(metrics["loss/total"])
    assert leaves_equal(after.params, state.params)
    actions = np.asarray(after.buffer.data.action[: cfg.rollout_len])
    assert np.abs(actions).max() <= 2.0 and actions.std() > 0.8  # uniform on [-2, 2]: 1.15


@pytest.mark.parametrize("name", ["sac", "td3"])
def test_gradient_steps_per_vector_step_set_the_update_to_data_ratio(name):
    _, algo, update = build(name, learning_starts=0, gradient_steps=3)
    _, metrics = update(algo.init(jax.random.key(0)), jax.random.key(1))
    assert int(metrics["optim/gradient_steps"]) == 8 * 3  # rollout_len 8 vector steps


@pytest.mark.parametrize("name", ["sac", "td3"])
def test_the_policy_moves_only_every_policy_frequency_gradient_steps(name):
    # One vector step and one gradient step per update: gradient steps 0, 1, 2, 3.
    _, algo, update = build(name, learning_starts=0, rollout_len=1, total_timesteps=4 * 6)
    state = algo.init(jax.random.key(0))
    moved = []
    for i in range(4):
        new, _ = update(state, jax.random.key(i))
        moved.append(not leaves_equal(new.params.actor, state.params.actor))
        assert not leaves_equal(new.params.critic, state.params.critic)
        state = new
    assert moved == [True, False, True, False]


def test_sac_without_autotune_keeps_the_entropy_coefficient():
    _, algo, update = build("sac", learning_starts=0, autotune=False, alpha=0.3)
    state, metrics = update(algo.init(jax.random.key(0)), jax.random.key(1))
    assert float(state.params.log_alpha_delta) == 0.0
    np.testing.assert_allclose(metrics["policy/alpha"], 0.3, rtol=1e-6)
    _, algo, update = build("sac", learning_starts=0)
    state, _ = update(algo.init(jax.random.key(0)), jax.random.key(1))
    assert float(state.params.log_alpha_delta) != 0.0


@pytest.mark.parametrize("name", ["sac", "td3"])
def test_configurations_that_cannot_run_are_refused(name):
    smoke = algos.get(name).smoke
    for changes, words in [
        ({"buffer_size": 63}, "multiple of --num-envs"),
        ({"batch_size": 128}, "exceeds --buffer-size"),
        ({"learning_starts": 10_000}, "would never learn"),
        ({"tau": 0.0}, "--tau"),
    ]:
        with pytest.raises(ConfigError, match=words):
            dataclasses.replace(smoke, **changes)
    cfg = dataclasses.replace(smoke, env="CartPole-v1")
    with pytest.raises(ConfigError, match="continuous"):
        algos.get(name).make(cfg)
