"""The Brax adapter: ids without Brax, the install error, episode bookkeeping, PPO on Brax, the
Brax presets of PPO, SAC and TD3.

Tests that step Brax environments skip cleanly without the brax extra; the bookkeeping ones use
Brax's own trivial ``fast`` environment (a point pushed along a line), whose dynamics the NumPy
reference below spells out, and the physics ones ``inverted_pendulum`` (the smallest model) and
``inverted_double_pendulum`` (PPO).
"""

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import purerl
from purerl import envs
from purerl.envs import brax as brax_adapter
from purerl.extras import MissingExtraError
from tests.helpers import ROOT

DT = 0.02
"""Time step of Brax's ``fast`` environment."""


@pytest.fixture
def brax_envs():
    return pytest.importorskip(
        "brax.envs", reason="needs the brax extra: pip install 'purerl[brax]'"
    )


def fast_reference(actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Observations ``[T, 2]`` (position, velocity) and rewards ``[T]`` of ``fast`` from rest.

    Each step adds DT to the velocity where the action is positive, then moves the position by
    velocity x DT; the reward is the new position.
    """
    pos = vel = 0.0
    obs, rewards = [], []
    for action in actions:
        vel += DT * float(action > 0)
        pos += vel * DT
        obs.append((pos, vel))
        rewards.append(pos)
    return np.asarray(obs, np.float32), np.asarray(rewards, np.float32)


def make_roll(env):
    """``roll(key, actions)``: resets ``env`` and steps it through ``actions`` ``[T, B, A]`` in
    one jitted scan, compiled once for all keys."""

    @jax.jit
    def roll(key, actions):
        reset_key, loop_key = jax.random.split(key)
        state, obs = env.reset(reset_key, None)

        def body(state, xs):
            key, action = xs
            return env.step(key, state, action, None)

        keys = jax.random.split(loop_key, actions.shape[0])
        return obs, jax.lax.scan(body, state, (keys, actions))[1]

    return roll


def roll(env, actions, seed=0):
    return make_roll(env)(jax.random.key(seed), actions)


# Without Brax: ids, registry, the install error.


@pytest.mark.slow
def test_every_brax_env_has_an_id_registered_without_importing_brax():
    code = (
        "import sys; from purerl import envs; from purerl.envs.brax import BRAX_ENVS;"
        "ids = [i for i in envs.list_envs() if i.startswith('brax/')];"
        "assert ids == sorted('brax/' + n for n in BRAX_ENVS), ids;"
        "assert {envs.lookup(i).family for i in ids} == {'Brax'};"
        "assert 'brax' not in sys.modules and 'mujoco' not in sys.modules; print('ok')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert proc.stdout.strip() == "ok", proc.stderr


def test_missing_brax_is_one_line_naming_the_extra(monkeypatch):
    # None in sys.modules makes the import fail as if Brax were not installed.
    monkeypatch.setitem(sys.modules, "brax", None)
    monkeypatch.setitem(sys.modules, "brax.envs", None)
    with pytest.raises(MissingExtraError) as caught:
        envs.make("brax/ant", 2)
    message = str(caught.value)
    assert "pip install 'purerl[brax]'" in message and "brax/ant" in message
    assert "\n" not in message


def test_cli_reports_missing_brax_in_one_line(monkeypatch, capsys):
    from purerl.cli import main

    monkeypatch.setitem(sys.modules, "brax", None)
    monkeypatch.setitem(sys.modules, "brax.envs", None)
    code = main(["train", "ppo", "--env", "brax/hopper", "--dry-run"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0, err
    assert err.startswith("error:") and "pip install 'purerl[brax]'" in err


def test_brax_ids_have_ppo_presets():
    from purerl.presets.ppo import PRESETS

    for name in ("inverted_double_pendulum", "ant", "humanoid"):
        cfg = PRESETS[f"brax/{name}"]
        assert cfg.env == f"brax/{name}" and cfg.normalize_obs


@pytest.mark.parametrize("name", ["sac", "td3"])
def test_off_policy_algorithms_have_a_brax_preset_listed_in_help(name):
    # A training run on Brax compiles for about 45 s on two cores (the physics), so the preset is
    # checked as configuration here; BENCHMARKS.md has its runs.
    from purerl import algos
    from purerl.cli.train import description

    spec = algos.get(name)
    cfg = spec.presets["brax/inverted_double_pendulum"]
    # normalize_obs would store observations under the statistics of their time in the replay.
    assert cfg.env == "brax/inverted_double_pendulum" and not cfg.normalize_obs
    # The last 100 episodes (1,000 steps each once learned) fit after the random steps.
    assert cfg.num_updates * cfg.env_steps_per_update - cfg.learning_starts > 100 * 1000
    assert "brax/inverted_double_pendulum" in description(spec, f"purerl train {name}")


# With Brax.


@pytest.mark.brax
def test_registered_names_are_the_installed_brax_envs(brax_envs):
    assert sorted(brax_envs._envs) == sorted(brax_adapter.BRAX_ENVS)


@pytest.mark.brax
def test_spec_and_step_shapes_and_dtypes(brax_envs):
    env = envs.make("brax/fast", 3)
    assert env.spec.obs_shape == (2,) and env.spec.obs_dtype == "float32" and env.pure
    assert env.spec.action_space == envs.Box((-1.0,), (1.0,), (1,))
    obs, steps = roll(env, jnp.ones((4, 3, 1)))
    assert obs.shape == (3, 2) and obs.dtype == jnp.float32
    assert steps.obs.shape == steps.final_obs.shape == (4, 3, 2)
    assert steps.obs.dtype == steps.final_obs.dtype == jnp.float32
    for name in ("reward", "terminated", "truncated", "valid"):
        assert getattr(steps, name).shape == (4, 3), name
    assert steps.reward.dtype == jnp.float32 and steps.terminated.dtype == jnp.bool_
    assert steps.truncated.dtype == jnp.bool_ and bool(steps.valid.all())


@pytest.mark.brax
def test_episode_length_truncates_and_resets_in_the_same_step(brax_envs):
    env = envs.make("brax/fast", 2, episode_length=3)
    actions = np.ones((7, 2, 1), np.float32)
    actions[:, 1] = -1.0  # the second env never moves
    _, steps = roll(env, jnp.asarray(actions))
    ref_obs, ref_reward = fast_reference(actions[:3, 0, 0])
    # Steps 1-3 are the first episode, 4-6 the second, 7 starts a third.
    truncated = np.zeros((7, 2), bool)
    truncated[[2, 5]] = True
    np.testing.assert_array_equal(steps.truncated, truncated)
    assert not steps.terminated.any()
    np.testing.assert_allclose(steps.final_obs[:3, 0], ref_obs, rtol=1e-6)
    np.testing.assert_allclose(steps.final_obs[3:6, 0], ref_obs, rtol=1e-6)
    np.testing.assert_allclose(steps.reward[:3, 0], ref_reward, rtol=1e-6)
    # After a truncation, obs is the fresh episode's first observation (rest), final_obs the
    # last one of the old episode, which PPO bootstraps from.
    np.testing.assert_array_equal(steps.obs[[2, 5], 0], np.zeros((2, 2)))
    np.testing.assert_array_equal(steps.obs[:2, 0], steps.final_obs[:2, 0])
    np.testing.assert_array_equal(steps.episode.done, truncated)
    np.testing.assert_allclose(steps.episode.returns[2, 0], ref_reward.sum(), rtol=1e-6)
    assert steps.episode.lengths[2, 0] == 3 and steps.episode.returns[2, 1] == 0.0


def make_falling_env(brax_envs, threshold: float):
    """``fast`` whose episode terminates (Brax ``done``) once the position reaches
    ``threshold``, wrapped by the adapter as a user's own Brax environment would be."""
    from brax.envs.fast import Fast

    class Falling(Fast):
        def step(self, state, action):
            state = super().step(state, action)
            return state.replace(done=jnp.where(state.obs[0] >= threshold, 1.0, 0.0))

    return Falling()


@pytest.mark.brax
def test_termination_is_not_truncation_and_wins_at_the_limit(brax_envs):
    ref_obs, _ = fast_reference(np.ones(8))
    # The position reaches the threshold on the third step (0.0024 >= 0.0023), not before.
    threshold = float(ref_obs[2, 0]) - 1e-4
    for length, terminal_steps in ((10, [2, 5]), (3, [2, 5])):
        single = brax_adapter.wrap_brax(
            make_falling_env(brax_envs, threshold), "falling", episode_length=length
        )
        env = envs.RecordEpisodeStats(envs.Vectorize(single, 1))
        _, steps = roll(env, jnp.ones((6, 1, 1)))
        expected = np.zeros(6, bool)
        expected[terminal_steps] = True
        np.testing.assert_array_equal(steps.terminated[:, 0], expected)
        assert not steps.truncated.any()  # at length 3 both happen; termination wins
        np.testing.assert_allclose(steps.final_obs[2, 0], ref_obs[2], rtol=1e-6)
        np.testing.assert_array_equal(steps.obs[2, 0], np.zeros(2))
        assert steps.episode.lengths[2, 0] == 3


@pytest.mark.brax
@pytest.mark.slow
def test_options_are_checked_before_anything_is_built(brax_envs):
    with pytest.raises(ValueError, match="backend must be one of"):
        envs.make("brax/ant", 2, backend="bullet")
    with pytest.raises(ValueError, match="episode_length must be at least 1"):
        envs.make("brax/ant", 2, episode_length=0)
    with pytest.raises(
        ValueError, match="has no option gravity; its options are: autoreset, backend"
    ):
        envs.make("brax/ant", 2, gravity=1.0)
    with pytest.raises(ValueError, match="ctrl_cost_weight takes a number"):
        envs.make("brax/ant", 2, ctrl_cost_weight="high")
    with pytest.raises(ValueError, match="brax/swimmer: Unsupported backend: mjx"):
        envs.make("brax/swimmer", 2, backend="mjx")
    if "a_min" not in __import__("inspect").signature(jnp.clip).parameters:
        with pytest.raises(ValueError, match="brax/swimmer cannot step with this Brax and JAX"):
            envs.make("brax/swimmer", 2)
    env = envs.make("brax/ant", 2, ctrl_cost_weight=0.1, backend="positional", episode_length=5)
    assert env.spec.obs_shape == (27,) and env.spec.action_space.shape == (8,)


@pytest.mark.brax
@pytest.mark.slow
def test_physics_resets_are_random_and_steps_deterministic(brax_envs):
    """inverted_pendulum under random actions: falls terminate, each fresh reset draws a new
    start, the same key replays bit for bit and another key does not."""
    env = envs.make("brax/inverted_pendulum", 4, episode_length=30, autoreset="fresh")
    actions = jax.random.uniform(jax.random.key(1), (60, 4, 1), minval=-1.0, maxval=1.0)
    run = make_roll(env)
    obs, steps = run(jax.random.key(3), actions)
    again = run(jax.random.key(3), actions)
    obs_other, _ = run(jax.random.key(4), actions)
    for a, b in zip(jax.tree.leaves((obs, steps)), jax.tree.leaves(again), strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(obs, obs_other)
    terminated, truncated = np.asarray(steps.terminated), np.asarray(steps.truncated)
    assert terminated.any() and not (terminated & truncated).any()
    done = terminated | truncated
    # A new episode starts near the rest pose, away from where the old one ended.
    assert not np.allclose(steps.obs[done], steps.final_obs[done])
    np.testing.assert_array_equal(steps.obs[~done], steps.final_obs[~done])
    starts = np.asarray(steps.obs[done])
    assert len(np.unique(starts.round(6), axis=0)) == len(starts)  # every reset is fresh
    # Truncations come at the 30-step limit, falls before it.
    lengths = np.asarray(steps.episode.lengths)[done]
    assert (lengths <= 30).all() and (lengths[truncated[done]] == 30).all()


@pytest.mark.brax
@pytest.mark.slow
def test_by_default_every_episode_of_an_env_starts_from_its_first_state(brax_envs):
    """Brax's AutoResetWrapper: an environment's later episodes start where its first did;
    the environments' first states differ."""
    env = envs.make("brax/inverted_pendulum", 4, episode_length=30)
    actions = jax.random.uniform(jax.random.key(1), (60, 4, 1), minval=-1.0, maxval=1.0)
    first_obs, steps = make_roll(env)(jax.random.key(3), actions)
    done = np.asarray(steps.terminated | steps.truncated)
    assert done.sum() > 4 and len(np.unique(np.asarray(first_obs).round(6), axis=0)) == 4
    for step, index in zip(*np.nonzero(done), strict=True):
        np.testing.assert_array_equal(steps.obs[step, index], first_obs[index])
    with pytest.raises(ValueError, match="autoreset must be one of first, fresh"):
        envs.make("brax/inverted_pendulum", 4, autoreset="random")


@pytest.mark.brax
@pytest.mark.slow
def test_ppo_trains_on_brax_with_vmapped_seeds(brax_envs):
    out = purerl.train(
        "ppo",
        env="brax/inverted_double_pendulum",
        num_seeds=2,
        num_envs=8,
        rollout_len=16,
        num_minibatches=2,
        num_epochs=1,
        total_timesteps=3 * 8 * 16,
        normalize_obs=True,
    )
    returns = out.history["episode/return"]
    assert returns.shape == (2, 3)
    assert np.isfinite(out.history["loss/policy"]).all()
    assert np.isfinite(returns[:, -1]).all()  # random policies fall well within 48 steps
    params = jax.tree.leaves(out.agents.state.params)
    assert any(not np.array_equal(p[0], p[1]) for p in params)  # the seeds learn apart


RENDER_CHECK = """
import jax, numpy as np
from purerl import envs
from purerl.envs.brax import RenderError
from purerl.envs.render import render_frame
env = envs.make("brax/inverted_pendulum", 1)
state, obs = env.reset(jax.random.key(0), None)
try:
    first = render_frame(env, state, None, obs[0])
except RenderError as err:
    print("no renderer:", err)
    raise SystemExit(0)
state, _ = env.step(jax.random.key(1), state, np.ones((1, 1), np.float32), None)
second = render_frame(env, state, None, obs[0])
assert first.shape == (240, 320, 3) and first.dtype == np.uint8, first.shape
assert first.std() > 1 and not np.array_equal(first, second)
print("rendered")
"""


@pytest.mark.brax
@pytest.mark.slow
def test_frames_come_from_mujoco_not_the_observation(brax_envs):
    proc = subprocess.run(
        [sys.executable, "-c", RENDER_CHECK],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**__import__("os").environ, "MUJOCO_GL": "egl"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    if proc.stdout.startswith("no renderer:"):
        line = proc.stdout.strip()
        assert "MUJOCO_GL" in line and "\n" not in line
        pytest.skip(f"MuJoCo cannot render on this machine: {line}")
    assert proc.stdout.strip() == "rendered"
