"""The EnvPool adapter: Atari protocol, game scores over whole games, seeds sharing one pool."""

import dataclasses
import functools
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import algos, envs
from tests.helpers import roll

envpool = pytest.importorskip(
    "envpool", reason="needs the atari extra: pip install 'purerl[atari]'"
)
pytestmark = pytest.mark.envpool


def test_atari_spec_follows_the_protocol_of_the_published_results():
    env = envs.make("Breakout-v5", 2)
    assert env.spec.obs_shape == (4, 84, 84) and env.spec.obs_dtype == "uint8"
    assert env.spec.action_space == envs.Discrete(4)
    assert env.spec.frame_skip == 4 and env.spec.autoreset == "next_step"
    assert not env.pure
    config = env.pool.spec.config
    # CleanRL's EnvPool protocol: EnvPool's defaults (no sticky actions, 27k-step cap) with
    # episodic life and clipped rewards for training.
    assert config.repeat_action_probability == 0.0 and config.max_episode_steps == 27_000
    assert config.episodic_life and config.reward_clip and config.noop_max == 30
    machado = envs.make("Breakout-v5", 2, sticky_actions=0.25, episodic_life=False)
    assert machado.pool.spec.config.repeat_action_probability == 0.25
    assert not machado.pool.spec.config.episodic_life


def raw_pool_steps(actions, **kwargs):
    """The same pool driven from the host, as EnvPool documents it."""
    pool = envpool.make(
        "Breakout-v5", env_type="gymnasium", num_envs=actions.shape[1], seed=0,
        repeat_action_probability=0.0, episodic_life=True, reward_clip=True, **kwargs,
    )  # fmt: skip
    pool.reset()
    out = {"reward": [], "terminated": [], "score": [], "game_over": [], "truncated": []}
    for action in actions:
        _, reward, terminated, truncated, info = pool.step(np.asarray(action))
        out["reward"].append(reward)
        out["terminated"].append(terminated)
        out["truncated"].append(truncated)
        out["score"].append(info["reward"])
        out["game_over"].append(info["terminated"].astype(bool))
    return {k: np.stack(v) for k, v in out.items()}


@pytest.mark.slow
def test_training_signal_is_per_life_and_clipped_while_returns_are_whole_game_scores():
    # Random actions for 1500 steps of 3 games: many lives lost, several games over.
    actions = np.random.default_rng(0).integers(0, 4, (1500, 3)).astype(np.int32)
    _, steps = roll(envs.make("Breakout-v5", 3), jnp.asarray(actions))
    raw = raw_pool_steps(actions)
    np.testing.assert_array_equal(steps.terminated, raw["terminated"])  # life loss
    np.testing.assert_array_equal(steps.reward, raw["reward"])
    assert set(np.unique(steps.reward)) <= {-1.0, 0.0, 1.0}
    # The step after any end is EnvPool's reset step: it ignored the action.
    ended = np.asarray(steps.terminated | steps.truncated)
    np.testing.assert_array_equal(~np.asarray(steps.valid)[1:], ended[:-1])
    # Logged returns: raw score summed over whole games, reported at game over only.
    game_over = raw["game_over"] | raw["truncated"]
    np.testing.assert_array_equal(steps.episode.done, game_over)
    assert game_over.sum() >= 3 and (np.asarray(steps.terminated) & ~game_over).sum() > 0
    for env in range(3):
        ends = np.flatnonzero(game_over[:, env])
        starts = np.concatenate([[0], ends[:-1] + 1])
        expected = [raw["score"][a : b + 1, env].sum() for a, b in zip(starts, ends, strict=True)]
        np.testing.assert_allclose(np.asarray(steps.episode.returns)[ends, env], expected)


def test_seeds_share_one_pool_and_match_single_seed_runs():
    # Agent s of a 2-seed pool sees the environments of a 1-seed pool built with seed s.
    actions = np.random.default_rng(1).integers(0, 4, (2, 60, 2)).astype(np.int32)
    both = envs.make("Pong-v5", 2, seed=4, num_seeds=2)
    obs, steps = roll(both, jnp.asarray(actions), num_seeds=2)
    assert both.pool_size == 4 and obs.shape == (2, 2, 4, 84, 84)
    for s in range(2):
        single_obs, single = roll(envs.make("Pong-v5", 2, seed=4 + s), jnp.asarray(actions[s]))
        np.testing.assert_array_equal(obs[s], single_obs)
        np.testing.assert_array_equal(steps.obs[s], single.obs)


@pytest.mark.parametrize("num_seeds", [1, 2])
@pytest.mark.slow
def test_the_host_callback_path_steps_the_same_episodes_as_the_xla_step(num_seeds):
    assert envs.make("Breakout-v5", 2).step_mode == "xla"  # on CPU, auto takes the custom call
    actions = np.random.default_rng(2).integers(0, 4, (num_seeds, 400, 2)).astype(np.int32)
    actions = actions if num_seeds > 1 else actions[0]
    runs = {}
    for mode in ("xla", "callback"):
        env = envs.make("Breakout-v5", 2, seed=3, num_seeds=num_seeds, step_mode=mode)
        assert env.step_mode == mode
        runs[mode] = roll(env, jnp.asarray(actions), num_seeds=num_seeds)
    (xla_obs, xla_steps), (host_obs, host_steps) = runs["xla"], runs["callback"]
    np.testing.assert_array_equal(xla_obs, host_obs)
    for a, b in zip(jax.tree.leaves(xla_steps), jax.tree.leaves(host_steps), strict=True):
        np.testing.assert_array_equal(a, b)
    assert np.asarray(xla_steps.terminated).any()  # lives were lost along the way


def test_an_unknown_step_mode_is_refused():
    with pytest.raises(ValueError, match="step_mode must be one of auto, xla, callback"):
        envs.make("Pong-v5", 2, step_mode="gpu")


def test_mapping_over_the_wrong_number_of_seeds_is_refused():
    env = envs.make("envpool/CartPole-v1", 2, num_seeds=2)
    keys = jax.random.split(jax.random.key(0), 3)
    with pytest.raises(ValueError, match="built for 2 seed\\(s\\) but is mapped over 3"):
        jax.jit(jax.vmap(lambda k: env.reset(k, None)))(keys)


def test_classic_control_through_envpool_has_its_own_ids():
    env = envs.make("envpool/CartPole-v1", 3)
    assert env.spec.obs_shape == (4,) and env.spec.action_space == envs.Discrete(2)
    _, steps = roll(env, jnp.zeros((300, 3), jnp.int32))
    assert np.asarray(steps.episode.done).sum() >= 3  # always pushing left falls quickly
    assert "CartPole-v1" in envs.list_envs() and "envpool/CartPole-v1" in envs.list_envs()


def test_missing_envpool_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "envpool", None)
    with pytest.raises(ImportError, match=r"pip install 'purerl\[atari\]'"):
        envs.make("Breakout-v5", 2)


DISCRETE_ALGOS = [
    name for name in algos.names() if envs.make(algos.get(name).smoke.env).spec.discrete
]
"""The algorithms whose smoke configuration has discrete actions (the others run continuous ones
only: tests/envs/test_mujoco.py trains them through EnvPool)."""


def train_on_breakout(name: str):
    """Three updates of ``name``'s smoke configuration on Breakout-v5, through a fresh pool."""
    import purerl

    smoke = algos.get(name).smoke
    fields = {k: v for k, v in dataclasses.asdict(smoke).items() if k != "env"}
    fields["total_timesteps"] = 3 * smoke.env_steps_per_update
    return purerl.train(name, env="Breakout-v5", **fields)


# Each pool's custom call carries its own handle, so every run compiles its program afresh (the
# compilation cache cannot serve it): the determinism test reuses this process's PPO run.
first_breakout_run = functools.cache(train_on_breakout)


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.parametrize("name", DISCRETE_ALGOS)
def test_a_short_run_of_every_algorithm_trains_on_breakout(name):
    first = first_breakout_run(name)
    assert first.summary.total_frames == first.summary.total_env_steps * 4 > 0
    assert first.summary.num_updates == 3
    assert np.isfinite(first.summary.steps_per_second) and first.summary.steps_per_second > 0
    assert np.isfinite(first.history["loss/total"][:, -1]).all()
    if name == "dqn":
        # The replay buffer keeps Atari frames as uint8, each frame once: the next observation
        # is read from the following slot rather than stored a second time.
        assert first.agents.state.buffer.data.obs.dtype == jnp.uint8
        assert first.agents.state.buffer.data.next_obs == ()
        assert first.history["optim/gradient_steps"][:, -1].min() > 0


@pytest.mark.slow
def test_a_second_pool_with_the_same_seed_trains_the_same_agent():
    # Whether a run repeats depends on the pool's seeding and stepping, the same for every
    # algorithm; the algorithms' own determinism is checked on JAX environments
    # (tests/algos/test_invariants.py).
    first, second = first_breakout_run("ppo"), train_on_breakout("ppo")
    for a, b in zip(
        jax.tree.leaves((first.agents.state.params, first.history)),
        jax.tree.leaves((second.agents.state.params, second.history)),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
