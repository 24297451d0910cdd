"""MuJoCo tasks through EnvPool: float64 simulators inside a 32-bit program."""

import dataclasses
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import algos, envs
from tests.helpers import roll

envpool = pytest.importorskip(
    "envpool", reason="needs the mujoco extra: pip install 'purerl[mujoco]'"
)
pytestmark = pytest.mark.envpool


def random_actions(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def test_mujoco_ids_are_registered_with_continuous_actions():
    env = envs.make("HalfCheetah-v4", 2)
    assert env.spec.obs_shape == (17,) and env.spec.obs_dtype == "float32"
    assert env.spec.action_space == envs.Box((-1.0,) * 6, (1.0,) * 6, (6,))
    assert envs.lookup("Hopper-v4").family == "MuJoCo (EnvPool)"
    listed = envs.list_envs()
    for task in ("Ant", "HalfCheetah", "Hopper", "Humanoid", "Walker2d", "Reacher"):
        assert f"{task}-v4" in listed and f"envpool/{task}-v4" in listed


def test_the_xla_step_matches_envpool_stepped_from_python_and_leaves_x64_off():
    actions = random_actions((5, 3, 6))
    env = envs.make("HalfCheetah-v4", 3, seed=7, step_mode="xla", clip_actions=False)
    obs, steps = roll(env, jnp.asarray(actions))
    pool = envpool.make("HalfCheetah-v4", env_type="gymnasium", num_envs=3, env_seed=[21, 22, 23])
    host_obs, _ = pool.reset()
    np.testing.assert_array_equal(obs, host_obs.astype(np.float32))
    for t in range(5):
        host_obs, reward, *_ = pool.step(actions[t].astype(np.float64))
        np.testing.assert_array_equal(steps.obs[t], host_obs.astype(np.float32))
        np.testing.assert_array_equal(steps.reward[t], reward.astype(np.float32))
    assert steps.obs.dtype == jnp.float32 and steps.reward.dtype == jnp.float32
    assert not jax.config.jax_enable_x64 and jnp.zeros(1).dtype == jnp.float32


@pytest.mark.slow
def test_callback_and_xla_steps_agree_over_a_truncated_episode_and_two_seeds():
    # max_episode_steps=40: HalfCheetah never terminates, so every env is truncated at step 40
    # and reset (an invalid step) at step 41.
    actions = random_actions((2, 45, 2, 6), seed=1)
    runs = {}
    for mode in ("xla", "callback"):
        env = envs.make("HalfCheetah-v4", 2, num_seeds=2, step_mode=mode, max_episode_steps=40)
        runs[mode] = roll(env, jnp.asarray(actions), num_seeds=2)
    for a, b in zip(jax.tree.leaves(runs["xla"]), jax.tree.leaves(runs["callback"]), strict=True):
        np.testing.assert_array_equal(a, b)
    steps = runs["xla"][1]
    assert np.asarray(steps.truncated)[:, 39].all() and not np.asarray(steps.terminated).any()
    assert not np.asarray(steps.valid)[:, 40].any() and np.asarray(steps.valid)[:, 41:].all()
    np.testing.assert_allclose(
        steps.episode.returns[:, 39], np.asarray(steps.reward)[:, :40].sum(1), rtol=1e-5
    )


def test_options_are_checked_against_the_task():
    with pytest.raises(ValueError, match="takes no option healthy_z_max; it takes: max_episode"):
        envs.make("Hopper-v4", 1, healthy_z_max=2.0)
    with pytest.raises(ValueError, match="option max_episode_steps must be a whole number"):
        envs.make("Hopper-v4", 1, max_episode_steps=1.5)


def test_missing_envpool_names_the_mujoco_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "envpool", None)
    with pytest.raises(ImportError, match=r"pip install 'purerl\[mujoco\]'"):
        envs.make("HalfCheetah-v4", 2)


@pytest.fixture(scope="module")
def cheetah_run(tmp_path_factory):
    """Two updates of a small PPO on HalfCheetah-v4, written to a run directory."""
    import purerl

    run_dir = tmp_path_factory.mktemp("cheetah") / "run"
    small = dict(num_envs=2, rollout_len=32, num_epochs=1, num_minibatches=2)
    purerl.train("ppo", env="HalfCheetah-v4", total_timesteps=128, run_dir=run_dir, **small)
    return run_dir


@pytest.mark.slow
def test_a_mujoco_run_loads_and_evaluates(cheetah_run):
    import purerl
    from purerl.run.evaluate import evaluate, load_agents

    policy = purerl.load(cheetah_run)
    action = policy(np.zeros(17, np.float32))
    assert action.shape == (6,) and action.dtype == np.float32
    run = load_agents(cheetah_run)
    episodes = evaluate(run, num_episodes=2, seed=0, greedy=True, max_steps=1000)
    assert np.asarray(episodes.finished).all() and (np.asarray(episodes.lengths) == 1000).all()


def test_missing_mujoco_package_makes_a_video_error_name_the_extra(monkeypatch):
    from purerl.envs import mujoco as adapter

    adapter.mujoco_gl_context.cache_clear()
    monkeypatch.setitem(sys.modules, "mujoco", None)
    with pytest.raises(RuntimeError, match=r"pip install 'purerl\[mujoco\]'"):
        adapter.mujoco_gl_context(32)
    adapter.mujoco_gl_context.cache_clear()


@pytest.mark.slow
def test_a_video_shows_mujoco_frames(cheetah_run):
    pytest.importorskip("mujoco", reason="MuJoCo videos need pip install 'purerl[mujoco]'")
    from purerl.envs import mujoco as adapter
    from purerl.run.evaluate import load_agents, record_episode

    try:
        adapter.mujoco_gl_context(adapter.MUJOCO_VIDEO_SIZE)
    except RuntimeError as err:
        pytest.skip(str(err))
    recording = record_episode(load_agents(cheetah_run), 0, seed=0, greedy=True, max_steps=5)
    frames = np.stack(recording.frames)
    size = adapter.MUJOCO_VIDEO_SIZE
    assert frames.shape == (5, size, size, 3) and frames.dtype == np.uint8
    # A rendered scene (sky gradient, floor, body), not a blank or a bar chart of the observation.
    assert len(np.unique(frames[0].reshape(-1, 3), axis=0)) > 100
    assert not np.array_equal(frames[0], frames[-1])  # the body moved


def test_purerl_envs_lists_the_tasks_by_family_once_each(capsys):
    from purerl.cli.envs import main

    assert main(["mujoco"], "purerl envs") == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][1:]
    # The family matches MuJoCo Playground's ids too (their own test covers them).
    ids = [row.split(" | ")[0].removeprefix("| ") for row in rows if "| MuJoCo (EnvPool) |" in row]
    assert ids == sorted(envs.mujoco.MUJOCO_IDS)
    assert "| Hopper-v4 | MuJoCo (EnvPool) | 11 float32 | Box(3, [-1, 1]) |" in rows


CONTINUOUS_ALGOS = [
    name for name in algos.names() if not envs.make(algos.get(name).smoke.env).spec.discrete
]


@pytest.mark.slow
@pytest.mark.parametrize("name", CONTINUOUS_ALGOS)
def test_a_short_run_of_every_continuous_algorithm_trains_on_half_cheetah(name):
    import purerl

    smoke = algos.get(name).smoke
    fields = {k: v for k, v in dataclasses.asdict(smoke).items() if k != "env"}
    fields["total_timesteps"] = 3 * smoke.env_steps_per_update
    result = purerl.train(name, env="HalfCheetah-v4", **fields)
    assert result.summary.num_updates == 3 and result.summary.total_env_steps > 0
    losses = [key for key in result.history if key.startswith("loss/")]
    assert losses and all(np.isfinite(result.history[key][:, -1]).all() for key in losses)
