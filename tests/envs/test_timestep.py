"""Timestep-style environments (``purerl/envs/timestep.py``): your own (no extra needed), then
Jumanji and XLand-MiniGrid where their extras are installed (skipped cleanly without them)."""

import json
import shutil
import sys
from types import SimpleNamespace
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import purerl
from purerl import envs
from purerl.core.env import Discrete, InvalidEnvError
from purerl.envs import timestep
from purerl.envs.render import render_frame
from tests.envs.masked_cue import ILLEGAL_REWARD, LENGTH, MaskedCue
from tests.helpers import run_cli

FACTORY = "tests.envs.masked_cue:make_env"
TINY = dict(
    num_envs=4, rollout_len=16, num_minibatches=2, num_epochs=1, hidden_sizes=(16,),
    total_timesteps=64,
)  # fmt: skip
"""One update."""
TINY_ARGS = [
    "--num-envs", "4", "--rollout-len", "16", "--num-minibatches", "2", "--num-epochs", "1",
    "--hidden-sizes", "16", "--total-timesteps", "64", "--num-seeds", "2", "--no-progress",
]  # fmt: skip


@pytest.mark.slow
def test_your_own_timestep_env_auto_resets_and_tells_truncation_from_termination():
    env = envs.make(MaskedCue(), 16)
    spec = env.spec
    assert spec.id == "object:tests.envs.masked_cue.MaskedCue" and spec.masked
    assert spec.action_space == Discrete(4) and spec.structure.names[-1] == ".action_mask"
    params = env.default_params
    state, obs = env.reset(jax.random.key(0), params)
    step = jax.jit(env.step)
    terminated = truncated = 0
    for t in range(12):
        # Action 3: illegal where the mask forbids it (an episode ends, discount 0).
        state, out = step(jax.random.key(t), state, jnp.full(16, 3), params)
        ended = np.asarray(out.terminated | out.truncated)
        assert not (out.terminated & out.truncated).any()
        np.testing.assert_array_equal(out.terminated, out.reward == ILLEGAL_REWARD)
        # A new episode starts at time 0, the final one did not.
        np.testing.assert_array_equal(out.obs.time == 0, ended)
        full = np.asarray(out.final_obs.time) == 1
        np.testing.assert_array_equal(np.asarray(out.truncated), full & ~np.asarray(out.terminated))
        terminated += int(out.terminated.sum())
        truncated += int(out.truncated.sum())
        assert (out.episode.lengths[ended] <= LENGTH).all()
    assert terminated > 0 and truncated > 0


class Joint(NamedTuple):
    action_mask: jax.Array
    last: jax.Array


class Full(NamedTuple):
    observation: Joint
    reward: jax.Array
    discount: jax.Array
    step_type: jax.Array


class Partial(NamedTuple):
    observation: Joint
    reward: jax.Array


class MultiDiscrete:
    """Actions (row, col) of a 2x3 grid; the reward names the action taken: 10 row + col."""

    def __init__(self, mask_shape=(2, 3), reward_shape=(), sizes=(2, 3), fields=True):
        self.action_spec = SimpleNamespace(num_values=np.array(sizes))
        self.mask_shape, self.reward_shape, self.fields = mask_shape, reward_shape, fields

    def timestep(self, action):
        obs = Joint(jnp.ones(self.mask_shape, bool).at[0, 0].set(False), action)
        reward = jnp.zeros(self.reward_shape) + 10.0 * action[0] + action[1]
        if not self.fields:
            return Partial(obs, reward)
        return Full(obs, reward, jnp.float32(1), jnp.int32(1))

    def reset(self, key):
        return jnp.int32(0), self.timestep(jnp.zeros(2, jnp.int32))

    def step(self, state, action):
        return state, self.timestep(action)


def test_multi_discrete_actions_and_their_joint_mask_become_one_discrete_space():
    env = timestep.adapt_own(MultiDiscrete(), "joint")
    assert env.spec.action_space == Discrete(6)
    state, obs = env.reset(jax.random.key(0), None)
    np.testing.assert_array_equal(obs.action_mask, [False] + [True] * 5)
    _, out = env.step(jax.random.key(1), state, jnp.int32(4), None)  # row-major: (1, 1)
    assert float(out.reward) == 11.0 and out.obs.last.tolist() == [1, 1]


@pytest.mark.parametrize(
    "env, message",
    [
        (MultiDiscrete(mask_shape=(2, 3), sizes=(3, 3)), "not one per joint action"),
        (MultiDiscrete(reward_shape=(2,)), "a reward of shape (2,); one environment's is a"),
        (MultiDiscrete(fields=False), "a timestep without discount; a timestep has"),
        (SimpleNamespace(reset=print, step=print, action_spec=object()), "actions are object"),
    ],
)
def test_a_timestep_env_purerl_cannot_drive_is_one_line(env, message):
    with pytest.raises(InvalidEnvError) as err:
        envs.make(env, 2)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.slow
def test_your_timestep_env_trains_from_the_command_line_and_resumes_exactly(tmp_path):
    run_dir = tmp_path / "run"
    purerl.train(
        "ppo", env=FACTORY, run_dir=run_dir, checkpoint_every=1, keep_checkpoints=10,
        updates_per_chunk=1, **{**TINY, "total_timesteps": 4 * 64},
    )  # fmt: skip
    rows = (run_dir / "metrics.jsonl").read_text().splitlines()
    for step in (3, 4):  # as if stopped after update 2
        shutil.rmtree(run_dir / "checkpoints" / str(step))
    resumed = run_cli("train", "--resume", run_dir, "--env", FACTORY)
    assert resumed.code == 0 and "resuming at update 2" in resumed.stdout, resumed.stderr

    def without_time(lines):
        return [{k: v for k, v in json.loads(r).items() if k != "wall_time_s"} for r in lines]

    assert without_time((run_dir / "metrics.jsonl").read_text().splitlines()) == without_time(rows)


SUITES = ("jumanji", "xminigrid")


def test_a_missing_extra_is_one_error_line_naming_it(monkeypatch):
    for module, extra in (("jumanji", "jumanji"), ("xminigrid", "xminigrid")):
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed
        env_id = "jumanji/Maze-v0" if module == "jumanji" else "xminigrid/MiniGrid-Empty-5x5"
        result = run_cli("train", "ppo", "--env", env_id, "--no-progress")
        assert result.code == 2 and len(result.error_lines) == 1, result.stderr
        assert result.error_lines[0].startswith("error: ")
        assert f"pip install 'purerl[{extra}]'" in result.stderr


def test_the_suites_ppo_presets_name_listed_ids_and_valid_configs():
    from purerl.presets.ppo import PRESETS

    suites = {env: cfg for env, cfg in PRESETS.items() if env.split("/")[0] in SUITES}
    listed = {*timestep.JUMANJI_ENVS, *timestep.XMINIGRID_ENVS}
    assert sum(e.startswith("jumanji/") for e in suites) >= 2
    assert sum(e.startswith("xminigrid/") for e in suites) >= 2
    for env, cfg in suites.items():
        assert cfg.env == env and env.partition("/")[2] in listed
        cfg.check()


# Jumanji and XLand-MiniGrid themselves.


def test_the_listed_ids_are_the_suites_registries():
    jumanji = pytest.importorskip("jumanji")
    xminigrid = pytest.importorskip("xminigrid")
    assert set(timestep.JUMANJI_ENVS) == set(jumanji.registered_environments())
    assert set(timestep.XMINIGRID_ENVS) == set(xminigrid.registered_environments())
    assert envs.lookup("jumanji/Maze-v0").family == "Jumanji"


@pytest.mark.slow
def test_jumanji_steps_as_jumanji_does_and_draws_its_own_frames():
    jumanji = pytest.importorskip("jumanji")
    native = jumanji.make("Maze-v0")
    env = timestep.make_jumanji("jumanji/Maze-v0")
    key = jax.random.key(3)
    state, obs = env.reset(key, None)
    expected_state, expected = native.reset(jax.random.key_data(key))
    assert jax.tree.all(jax.tree.map(np.array_equal, obs, expected.observation))
    for action in (0, 1, 2, 3, 1):
        state, out = env.step(jax.random.key(0), state, jnp.int32(action), None)
        expected_state, expected = native.step(expected_state, jnp.int32(action))
        assert jax.tree.all(jax.tree.map(np.array_equal, out.obs, expected.observation))
        assert float(out.reward) == float(expected.reward)
        assert bool(out.terminated) == bool(expected.last() & (expected.discount == 0))
    first, second = two_frames("jumanji/Maze-v0")
    assert first.shape == (300, 300, 3) and first.dtype == np.uint8 and first.std() > 0
    assert not np.array_equal(first, second)


def two_frames(env_id: str) -> tuple[np.ndarray, np.ndarray]:
    """Video frames of environment 0 of two, before and after a step (its first legal action;
    Maze moves, XLand-MiniGrid's 1 turns right), both read after the second was drawn."""
    env = envs.make(env_id, 2)
    params = env.default_params
    state, obs = env.reset(jax.random.key(0), params)
    first = render_frame(env, state, params)
    mask = getattr(obs, "action_mask", None)
    action = jnp.ones(2, jnp.int32) if mask is None else jnp.argmax(mask, axis=-1)
    state, _ = env.step(jax.random.key(1), state, action, params)
    return first, render_frame(env, state, params)


@pytest.mark.slow
def test_xminigrid_steps_as_xminigrid_does_truncates_at_max_steps_and_draws_frames():
    xminigrid = pytest.importorskip("xminigrid")
    native, params = xminigrid.make("MiniGrid-Empty-5x5")
    params = params.replace(max_steps=3)
    env = timestep.make_xminigrid("xminigrid/MiniGrid-Empty-5x5", max_steps=3)
    assert env.spec.obs_shape == (7, 7, 2) and env.spec.action_space == Discrete(6)
    key = jax.random.key(4)
    state, obs = env.reset(key, env.default_params)
    expected = native.reset(params, jax.random.key_data(key))
    np.testing.assert_array_equal(obs, expected.observation)
    for action in (2, 2, 2):  # forward, forward, forward: the goal is not reached
        state, out = env.step(jax.random.key(0), state, jnp.int32(action), env.default_params)
        expected = native.step(params, expected, jnp.int32(action))
        np.testing.assert_array_equal(out.obs, expected.observation)
    assert bool(out.truncated) and not bool(out.terminated)
    first, second = two_frames("xminigrid/MiniGrid-Empty-5x5")
    assert first.shape == (160, 160, 3) and first.dtype == np.uint8
    assert not np.array_equal(first, second)


@pytest.mark.slow
def test_navix_steps_as_navix_does_tells_truncation_from_termination_and_draws_frames():
    navix = pytest.importorskip("navix")
    native = navix.make("Navix-Empty-5x5-v0", max_steps=3)
    env = timestep.make_navix("navix/Navix-Empty-5x5-v0", max_steps=3)
    assert env.spec.obs_shape == (5, 5, 3) and env.spec.action_space == Discrete(7)
    key = jax.random.key(4)
    state, obs = env.reset(key, env.default_params)
    expected = native.reset(jax.random.key_data(key))
    np.testing.assert_array_equal(obs, expected.observation)
    for action in (0, 0, 0):  # turning in place: the third step meets the time limit
        state, out = env.step(jax.random.key(0), state, jnp.int32(action), env.default_params)
        expected = native.step(expected, jnp.int32(action))
        np.testing.assert_array_equal(out.obs, expected.observation)
        assert float(out.reward) == float(expected.reward)
    assert int(expected.step_type) == timestep.NAVIX_TRUNCATION
    assert bool(out.truncated) and not bool(out.terminated)
    # Reaching the goal (forward twice, turn right, forward twice on Empty-5x5's fixed layout)
    # ends the episode as a termination that pays.
    long = timestep.make_navix("navix/Navix-Empty-5x5-v0")
    state, _ = long.reset(key, long.default_params)
    for action in (2, 2, 1, 2, 2):
        state, out = long.step(jax.random.key(0), state, jnp.int32(action), long.default_params)
    assert bool(out.terminated) and float(out.reward) > 0
    first, second = two_frames("navix/Navix-Empty-5x5-v0")
    assert first.ndim == 3 and first.shape[2] == 3 and first.dtype == np.uint8
    assert not np.array_equal(first, second)


def test_the_listed_navix_ids_are_its_registry():
    navix = pytest.importorskip("navix")
    assert set(timestep.NAVIX_ENVS) == set(navix.registry())
    assert envs.lookup("navix/Navix-Empty-5x5-v0").family == "Navix"


@pytest.mark.slow
@pytest.mark.parametrize(
    "env_id", ["jumanji/Maze-v0", "xminigrid/MiniGrid-Empty-5x5", "navix/Navix-Empty-5x5-v0"]
)
def test_ppo_trains_on_the_suites_from_the_command_line_and_loads(env_id, tmp_path):
    pytest.importorskip(env_id.partition("/")[0])
    run_dir = tmp_path / "run"
    result = run_cli("train", "ppo", "--env", env_id, "--run-dir", run_dir, *TINY_ARGS)
    assert result.code == 0, result.stderr
    video = tmp_path / "episode.gif"
    evaluated = run_cli("eval", run_dir, "--episodes", "2", "--max-steps", "8", "--video", video)
    assert evaluated.code == 0 and video.stat().st_size > 0, evaluated.stderr
    policy = purerl.load(run_dir)
    env = envs.make(env_id, 64)
    _, obs = env.reset(jax.random.key(1), env.default_params)
    for greedy in (True, False):
        actions = np.asarray(policy(obs, greedy=greedy))
        assert actions.shape == (64,) and actions.min() >= 0
        assert actions.max() < env.spec.action_space.num_actions
        if env.spec.masked:
            assert np.asarray(obs.action_mask)[np.arange(64), actions].all()
    listed = run_cli("envs", env_id)
    assert listed.code == 0 and "Discrete(" in listed.stdout, listed.stderr
