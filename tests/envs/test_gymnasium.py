"""Gymnasium environments in the compiled loop: semantics against Gymnasium itself, seeds,
spaces, objects from Python, evaluation, videos and resume."""

from __future__ import annotations

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium import spaces

import purerl
from purerl import envs
from purerl.cli import main as cli_main
from purerl.core.env import Box, Discrete, InvalidEnvError


class Countdown(gymnasium.Env):
    """Observation ``[t, start]``; an episode of ``start`` steps pays the action each step and
    terminates; every third episode is cut (truncated) one step early."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, render_mode=None):
        self.observation_space = spaces.Box(-100, 100, (2,), np.float32)
        self.action_space = spaces.Discrete(3)
        self.render_mode = render_mode
        self.episodes = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.start = int(self.np_random.integers(3, 6))
        self.t, self.episodes = 0, self.episodes + 1
        return np.array([0, self.start], np.float32), {}

    def step(self, action):
        self.t += 1
        obs = np.array([self.t, self.start], np.float32)
        terminated = self.t >= self.start
        truncated = self.episodes % 3 == 0 and self.t >= self.start - 1 and not terminated
        return obs, float(action), terminated, truncated, {}

    def render(self):
        frame = np.zeros((8, 8, 3), np.uint8)
        frame[: self.t] = 255
        return frame


def jax_steps(env, actions: np.ndarray):
    """Steps ``env`` through ``actions`` ``[T, B]`` inside one jitted scan."""

    @jax.jit
    def run(actions):
        state, obs = env.reset(jax.random.key(0), env.default_params)

        def step(state, action):
            state, out = env.step(jax.random.key(0), state, action, env.default_params)
            return state, out

        return obs, jax.lax.scan(step, state, actions)[1]

    return jax.device_get(run(jnp.asarray(actions)))


def test_steps_match_gymnasiums_own_vector_env_with_its_autoreset():
    num, steps = 3, 24
    actions = np.random.default_rng(0).integers(0, 3, (steps, num))
    env = envs.make(Countdown, num, seed=5)
    assert env.spec.autoreset == "next_step" and not env.pure
    first, out = jax_steps(env, actions)

    reference = gymnasium.vector.SyncVectorEnv([Countdown] * num)
    obs, _ = reference.reset(seed=[5 * num + j for j in range(num)])
    np.testing.assert_array_equal(first, obs)
    prev_done = np.zeros(num, bool)
    returns, finished = np.zeros(num), []
    for t in range(steps):
        obs, reward, terminated, truncated, _ = reference.step(actions[t])
        np.testing.assert_array_equal(out.obs[t], obs)
        np.testing.assert_array_equal(out.final_obs[t], obs)
        np.testing.assert_array_equal(out.reward[t], reward)
        np.testing.assert_array_equal(out.terminated[t], terminated)
        np.testing.assert_array_equal(out.truncated[t], truncated)
        # The step after an episode's end only reset it: its action was ignored.
        np.testing.assert_array_equal(out.valid[t], ~prev_done)
        returns = np.where(prev_done, 0, returns + reward)
        done = terminated | truncated
        np.testing.assert_array_equal(out.episode.done[t], done)
        np.testing.assert_allclose(out.episode.returns[t][done], returns[done])
        finished += list(returns[done])
        prev_done = done
    assert out.truncated.any() and out.terminated.any() and len(finished) >= 6


def test_each_seed_sees_the_environments_of_a_single_seed_run():
    actions = np.random.default_rng(1).integers(0, 3, (12, 2, 2))
    both = envs.make(Countdown, 2, seed=3, num_seeds=2)

    @jax.jit
    def run(actions):
        def one(key, actions):
            state, obs = both.reset(key, None)
            return obs, jax.lax.scan(lambda s, a: both.step(key, s, a, None), state, actions)[1]

        return jax.vmap(one, in_axes=(0, 1))(jax.random.split(jax.random.key(0), 2), actions)

    first, out = jax.device_get(run(jnp.asarray(actions)))
    for s in range(2):
        alone_first, alone = jax_steps(envs.make(Countdown, 2, seed=3 + s), actions[:, s])
        np.testing.assert_array_equal(first[s], alone_first)
        np.testing.assert_array_equal(out.obs[s], alone.obs)


def test_registered_ids_spaces_and_options():
    env = envs.make("gymnasium/CartPole-v1", 2, max_episode_steps=7)
    assert env.spec.obs_shape == (4,) and env.spec.action_space == Discrete(2)
    out = jax_steps(env, np.ones((8, 2), np.int32))[1]
    assert out.truncated[6].all() and not out.valid[7].any()  # the time limit, then resets
    continuous = envs.make("gymnasium/MountainCarContinuous-v0", 1)
    assert isinstance(continuous.spec.action_space, Box)
    assert continuous.spec.action_space.shape == (1,)
    assert "gymnasium/CartPole-v1" in envs.list_envs()


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("gymnasium/NoSuchEnv-v0", "Gymnasium cannot make 'NoSuchEnv-v0'"),
        (lambda: gymnasium.make("Blackjack-v1"), "observation space Tuple"),
        (lambda: gymnasium.vector.SyncVectorEnv([Countdown] * 3), "has 3 environments"),
        (
            lambda: gymnasium.vector.SyncVectorEnv(
                [Countdown] * 2, autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP
            ),
            "AutoresetMode.NEXT_STEP",
        ),
    ],
)
def test_what_purerl_cannot_drive_is_refused_in_one_line(source, words):
    with pytest.raises(InvalidEnvError, match=words) as caught:
        envs.make(source, 2)
    assert "\n" not in str(caught.value)


def test_bad_gymnasium_options_and_the_vector_mode_are_checked():
    with pytest.raises(InvalidEnvError, match="Gymnasium cannot make"):
        envs.make("gymnasium/CartPole-v1", 2, no_such_option=1)
    with pytest.raises(ValueError, match="vector must be one of sync, async"):
        envs.make("gymnasium/CartPole-v1", 2, vector="threads")


@pytest.mark.slow
def test_async_vector_env_steps_what_the_sync_one_does():
    actions = np.random.default_rng(2).integers(0, 2, (10, 2))
    sync = jax_steps(envs.make("gymnasium/CartPole-v1", 2, seed=1), actions)[1]
    env = envs.make("gymnasium/CartPole-v1", 2, seed=1, vector="async")
    try:
        np.testing.assert_array_equal(jax_steps(env, actions)[1].obs, sync.obs)
    finally:
        env.close()


class Signal(gymnasium.Env):
    """A class the rest of the suite never saw: the observation shows which of 3 actions pays
    1 this step (0 otherwise); 16 steps an episode. Chance earns about 5.3, a learner 16."""

    def __init__(self):
        self.observation_space = spaces.Box(0, 1, (3,), np.float32)
        self.action_space = spaces.Discrete(3)

    def _obs(self):
        return np.eye(3, dtype=np.float32)[self.target]

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.target = 0, int(self.np_random.integers(3))
        return self._obs(), {}

    def step(self, action):
        reward = float(action == self.target)
        self.t, self.target = self.t + 1, int(self.np_random.integers(3))
        return self._obs(), reward, False, self.t >= 16, {}


@pytest.mark.slow
def test_an_unseen_gymnasium_env_object_learns_and_loads_again(tmp_path):
    result = purerl.train(
        "ppo", env=Signal(), num_envs=4, rollout_len=32, total_timesteps=6144, lr=3e-3,
        run_dir=str(tmp_path / "run"), progress=False,
    )  # fmt: skip
    final = result.summary.final_mean_return
    assert final > 12, final  # chance: about 5.3
    with pytest.raises(InvalidEnvError, match="given to purerl as an object"):
        purerl.load(tmp_path / "run")
    agent = purerl.load(tmp_path / "run", env=Signal())
    obs = np.eye(3, dtype=np.float32)
    assert [int(agent(o)) for o in obs] == [0, 1, 2]


@pytest.mark.slow
def test_the_command_line_trains_evaluates_records_and_resumes(tmp_path, capsys):
    run = str(tmp_path / "run")
    command = ["train", "ppo", "--env", "gymnasium/MountainCarContinuous-v0",
               "--total-timesteps", "8192", "--run-dir", run, "--no-progress",
               "--checkpoint-every", "8"]  # fmt: skip
    assert cli_main(command) == 0
    agent = purerl.load(run)
    action = agent(np.zeros(2, np.float32))
    assert np.shape(action) == (1,)
    assert cli_main(["eval", run, "--episodes", "2", "--max-steps", "50"]) == 0
    capsys.readouterr()
    assert cli_main(["train", "--resume", run, "--resume-from", "8"]) == 0
    said = capsys.readouterr()
    assert (said.out + said.err).count("they start fresh episodes") == 1


@pytest.mark.slow
def test_videos_are_drawn_by_the_environments_renderer(tmp_path):
    run = tmp_path / "run"
    purerl.train("ppo", env=Countdown, num_envs=2, rollout_len=8, total_timesteps=16,
                 run_dir=str(run), progress=False)  # fmt: skip
    from purerl.run.evaluate import load_agents, record_episode

    loaded = load_agents(run, "latest", env=lambda: Countdown(render_mode="rgb_array"))
    recording = record_episode(loaded, 0, 0, True, 20)
    assert recording.episode_return is not None
    assert [int(f[:, 0, 0].sum() // 255) for f in recording.frames[:3]] == [0, 1, 2]


@pytest.mark.slow
def test_make_train_runs_a_gymnasium_env_under_jit():
    from purerl.algos.ppo import PPOConfig

    cfg = PPOConfig(env="gymnasium/CartPole-v1", num_envs=2, rollout_len=8, num_minibatches=1,
                    num_epochs=1, total_timesteps=32)  # fmt: skip
    _, metrics = jax.jit(purerl.make_train(cfg))(jax.random.key(0))
    assert metrics["loss/policy"].shape[0] == 2 and np.isfinite(metrics["loss/policy"]).all()
