import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import envs
from purerl.config import ConfigError
from purerl.envs.partial import Flicker

NUM_ENVS = 8


def play(env, num_steps: int, seed: int = 0):
    """``num_steps`` vectorised steps under keys and random actions fixed by ``seed``: the
    first observation ``[B, ...]`` and the stacked steps ``[T, B, ...]``."""
    params = env.default_params
    reset_key, run_key = jax.random.split(jax.random.key(seed))
    state, obs = env.reset(reset_key, params)
    num_actions = env.spec.action_space.num_actions

    def one_step(state, t):
        action_key, step_key = jax.random.split(jax.random.fold_in(run_key, t))
        actions = jax.random.randint(action_key, (NUM_ENVS,), 0, num_actions)
        return env.step(step_key, state, actions, params)

    _, steps = jax.jit(lambda s: jax.lax.scan(one_step, s, jnp.arange(num_steps)))(state)
    return obs, steps


def assert_same_outcomes(steps, reference):
    for field in ("reward", "terminated", "truncated", "valid"):
        np.testing.assert_array_equal(getattr(steps, field), getattr(reference, field))


def test_cartpole_no_velocity_shows_positions_of_the_same_game():
    env = envs.make("CartPole-NoVelocity-v1", NUM_ENVS, max_steps_in_episode=40)
    full = envs.make("CartPole-v1", NUM_ENVS, max_steps_in_episode=40)
    assert env.spec.id == "CartPole-NoVelocity-v1" and env.spec.obs_shape == (2,)
    assert env.spec.obs_dtype == "float32" and env.spec.action_space == full.spec.action_space
    first, steps = play(env, 300)
    full_first, full_steps = play(full, 300)
    # [x, x_dot, theta, theta_dot] -> [x, theta]
    np.testing.assert_array_equal(first, full_first[:, [0, 2]])
    np.testing.assert_array_equal(steps.obs, full_steps.obs[..., [0, 2]])
    np.testing.assert_array_equal(steps.final_obs, full_steps.final_obs[..., [0, 2]])
    assert_same_outcomes(steps, full_steps)
    # The run covers falls and time limits, where final_obs is the ended episode's.
    assert steps.terminated.any() and steps.truncated.any()
    ended = steps.terminated | steps.truncated
    assert not np.array_equal(steps.obs[ended], steps.final_obs[ended])


def test_cartpole_no_velocity_keeps_cartpoles_defaults_and_names_itself_in_errors():
    env = envs.make("CartPole-NoVelocity-v1", 2)
    assert env.default_params == envs.make("CartPole-v1", 2).default_params
    assert env.default_params.max_steps_in_episode == 500
    with pytest.raises(ValueError, match="CartPole-NoVelocity-v1.*no parameter bogus"):
        envs.make("CartPole-NoVelocity-v1", 2, bogus=1)


FLICKER_STEPS = 400


def flicker_run(prob: float):
    env = envs.make("Breakout-MinAtar-Flicker", NUM_ENVS, flicker_prob=prob)
    return env, *play(env, FLICKER_STEPS, seed=1)


@pytest.fixture(scope="module")
def plain_breakout():
    return play(envs.make("Breakout-MinAtar", NUM_ENVS), FLICKER_STEPS, seed=1)


def test_flicker_hides_whole_observations_at_the_rate_asked_and_nothing_else(plain_breakout):
    env, first, steps = flicker_run(0.3)
    plain_first, plain = plain_breakout
    assert env.spec.id == "Breakout-MinAtar-Flicker" and env.spec.obs_shape == (10, 10, 4)
    assert_same_outcomes(steps, plain)
    axes = (-3, -2, -1)
    hidden = ~steps.obs.any(axis=axes)
    assert plain.obs.any(axis=axes).all()  # Breakout always shows its paddle
    # Each frame is either all zeros or the plain game's, obs and final_obs hidden together.
    np.testing.assert_array_equal(
        np.where(hidden[..., None, None, None], plain.obs, steps.obs), plain.obs
    )
    np.testing.assert_array_equal(hidden, ~steps.final_obs.any(axis=axes))
    # 3,200 draws at p=0.3: standard error 0.008, so 0.03 is about 4 of them.
    assert abs(hidden.mean() - 0.3) < 0.03
    assert not np.array_equal(hidden[:, 0], hidden[:, 1])  # envs draw their own
    first_hidden = ~first.any(axis=axes)
    np.testing.assert_array_equal(
        np.where(first_hidden[:, None, None, None], plain_first, first), plain_first
    )


def test_flicker_prob_zero_plays_the_plain_game_and_one_hides_everything(plain_breakout):
    env, first, steps = flicker_run(0.0)
    plain_first, plain = plain_breakout
    assert env.default_params == envs.make("Breakout-MinAtar", 1).default_params
    np.testing.assert_array_equal(first, plain_first)
    np.testing.assert_array_equal(steps.obs, plain.obs)
    np.testing.assert_array_equal(steps.final_obs, plain.final_obs)
    assert_same_outcomes(steps, plain)
    always = Flicker(env.env.env.env, prob=1.0)  # the game itself
    assert not always.hide(jax.random.key(0), plain.obs[:2])[0].any()


@pytest.mark.parametrize("prob", [-0.1, 1.5, float("nan"), True, "half"])
def test_flicker_prob_outside_the_unit_interval_is_refused(prob):
    with pytest.raises(ValueError, match=r"flicker_prob takes a probability in \[0, 1\], got"):
        envs.make("Breakout-MinAtar-Flicker", 2, flicker_prob=prob)


def test_flicker_options_reach_the_game_and_bad_ones_name_the_task():
    env = envs.make("Breakout-MinAtar-Flicker", 2, max_steps_in_episode=7)
    assert env.default_params.max_steps_in_episode == 7
    with pytest.raises(ValueError, match="Breakout-MinAtar-Flicker.*no parameter bogus"):
        envs.make("Breakout-MinAtar-Flicker", 2, bogus=1)


def test_a_run_config_with_a_bad_flicker_prob_is_a_config_error():
    from purerl.algos.ppo import PPOConfig

    cfg = PPOConfig(env="Breakout-MinAtar-Flicker", env_options=("flicker_prob=2",))
    with pytest.raises(ConfigError, match="--env-options flicker_prob=2: .*got 2"):
        envs.from_config(cfg)


def test_purerl_envs_lists_the_partially_observable_tasks(capsys):
    from purerl.cli.envs import main

    assert main(["partially observable"], "purerl envs") == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][1:]
    assert rows == [
        "| Breakout-MinAtar-Flicker | partially observable | 10x10x4 float32 | Discrete(3) |",
        "| CartPole-NoVelocity-v1 | partially observable | 2 float32 | Discrete(2) |",
    ]
