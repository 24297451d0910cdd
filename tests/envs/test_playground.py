"""The MuJoCo Playground adapter: ids without Playground, the install error, shapes, truncation,
options and PPO on ``playground/CartpoleBalance``.

Tests that step Playground environments skip cleanly without the playground extra. Compiling
MJX physics on a CPU takes seconds (CartpoleBalance: ~15 s for a rollout scan with resets), so
those are ``slow``; the episode bookkeeping itself is the Brax adapter's, tested there.
"""

import os
import subprocess
import sys
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import purerl
from purerl import envs
from purerl.envs import playground as playground_adapter
from purerl.envs.brax import box_spec
from purerl.extras import MissingExtraError
from tests.envs.test_brax import make_roll
from tests.helpers import ROOT


@pytest.fixture
def registry():
    module = pytest.importorskip(
        "mujoco_playground", reason="needs the playground extra: pip install 'purerl[playground]'"
    )
    return module.registry


# Without Playground: ids, registry, the install error.


@pytest.mark.slow
def test_ids_are_registered_without_importing_playground():
    code = (
        "import sys; from purerl import envs; from purerl.envs.playground import PLAYGROUND_ENVS;"
        "ids = [i for i in envs.list_envs() if i.startswith('playground/')];"
        "assert ids == sorted('playground/' + n for n in PLAYGROUND_ENVS), ids;"
        "assert {envs.lookup(i).family for i in ids} == {'MuJoCo Playground'};"
        "assert 'mujoco_playground' not in sys.modules and 'mujoco' not in sys.modules;"
        "print('ok')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert proc.stdout.strip() == "ok", proc.stderr


def test_missing_playground_is_one_line_naming_the_extra(monkeypatch):
    # None in sys.modules makes the import fail as if Playground were not installed.
    monkeypatch.setitem(sys.modules, "mujoco_playground", None)
    with pytest.raises(MissingExtraError) as caught:
        envs.make("playground/CartpoleBalance", 2)
    message = str(caught.value)
    assert "pip install 'purerl[playground]'" in message
    assert "playground/CartpoleBalance" in message and "\n" not in message


def test_cli_reports_missing_playground_in_one_line(monkeypatch, capsys):
    from purerl.cli import main

    monkeypatch.setitem(sys.modules, "mujoco_playground", None)
    code = main(["train", "ppo", "--env", "playground/WalkerWalk", "--dry-run"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0, err
    assert err.startswith("error:") and "pip install 'purerl[playground]'" in err


def test_cartpole_balance_has_a_ppo_preset():
    from purerl.presets.ppo import PRESETS

    cfg = PRESETS["playground/CartpoleBalance"]
    assert cfg.env == "playground/CartpoleBalance" and cfg.normalize_obs


# With Playground.


@pytest.mark.playground
def test_registered_names_are_the_installed_control_suite(registry):
    from mujoco_playground import dm_control_suite

    assert sorted(dm_control_suite.ALL_ENVS) == sorted(playground_adapter.PLAYGROUND_ENVS)


@pytest.mark.playground
def test_options_are_checked_before_anything_is_built(registry):
    with pytest.raises(ValueError, match="has no option impl; its options are: episode_length"):
        envs.make("playground/CartpoleBalance", 2, impl="warp")
    with pytest.raises(ValueError, match="has no option vision; its options are: episode_len"):
        envs.make("playground/CartpoleBalance", 2, vision=True)
    with pytest.raises(ValueError, match="option ctrl_dt takes a number"):
        envs.make("playground/CartpoleBalance", 2, ctrl_dt="fast")
    with pytest.raises(ValueError, match="option sim_dt must be positive"):
        envs.make("playground/CartpoleBalance", 2, sim_dt=0.0)
    with pytest.raises(ValueError, match="episode_length must be at least 1"):
        envs.make("playground/CartpoleBalance", 2, episode_length=0)


class ObsOnly(NamedTuple):
    obs: Any


class DictObservations:
    """A physics environment of Playground's interface whose observations are a dict (as its
    locomotion tasks' ``state`` and ``privileged_state``)."""

    action_size = 2

    def reset(self, key):
        return ObsOnly({"state": jnp.zeros(3), "privileged_state": jnp.zeros(4)})


def test_dict_observations_are_refused_in_one_line():
    with pytest.raises(ValueError) as caught:
        box_spec(DictObservations(), "playground/Dict")
    message = str(caught.value)
    assert "observations are a dict (privileged_state, state)" in message
    assert "playground/Dict" in message and "\n" not in message


@pytest.mark.playground
@pytest.mark.slow
def test_steps_have_shapes_and_dtypes_and_truncate_at_episode_length(registry):
    env = envs.make("playground/CartpoleBalance", 3, episode_length=4, sim_dt=0.01)
    assert env.spec.obs_shape == (5,) and env.spec.obs_dtype == "float32" and env.pure
    assert env.spec.action_space == envs.Box((-1.0,), (1.0,), (1,))
    obs, steps = jax.device_get(make_roll(env)(jax.random.key(0), jnp.ones((9, 3, 1))))
    assert obs.shape == (3, 5) and obs.dtype == np.float32
    assert steps.obs.shape == steps.final_obs.shape == (9, 3, 5)
    assert steps.obs.dtype == steps.final_obs.dtype == np.float32
    for name in ("reward", "terminated", "truncated", "valid"):
        assert getattr(steps, name).shape == (9, 3), name
    assert steps.reward.dtype == np.float32 and steps.terminated.dtype == np.bool_
    # Steps 1-4 are the first episode, 5-8 the second, 9 starts a third; nothing terminates.
    truncated = np.zeros((9, 3), bool)
    truncated[[3, 7]] = True
    np.testing.assert_array_equal(steps.truncated, truncated)
    assert not steps.terminated.any()
    np.testing.assert_array_equal(steps.episode.lengths[[3, 7]], np.full((2, 3), 4))
    # A truncated step carries the fresh episode's first observation in obs and the last one
    # of the old episode (what PPO bootstraps from) in final_obs; the fresh starts are random.
    assert not np.allclose(steps.obs[3], steps.final_obs[3])
    np.testing.assert_array_equal(steps.obs[:3], steps.final_obs[:3])
    starts = np.asarray(steps.obs[[3, 7]]).reshape(6, 5)
    assert len(np.unique(starts.round(6), axis=0)) == 6
    assert np.all((steps.reward >= 0) & (steps.reward <= 1))  # the Control suite's rewards


@pytest.mark.playground
@pytest.mark.slow
@pytest.mark.long
def test_ppo_trains_on_playground(registry):
    out = purerl.train(
        "ppo",
        env="playground/CartpoleBalance",
        num_seeds=2,
        num_envs=4,
        rollout_len=16,
        num_minibatches=2,
        num_epochs=1,
        total_timesteps=2 * 4 * 16,
        env_options=("episode_length=10",),
    )
    returns = out.history["episode/return"]
    assert returns.shape == (2, 2)
    assert np.isfinite(out.history["loss/policy"]).all()
    assert np.isfinite(returns).all() and (returns > 0).all()  # 10-step episodes end in time
    params = jax.tree.leaves(out.agents.state.params)
    assert any(not np.array_equal(p[0], p[1]) for p in params)  # the seeds learn apart


RENDER_CHECK = """
import jax, numpy as np
from purerl import envs
from purerl.envs.brax import RenderError
from purerl.envs.render import render_frame
env = envs.make("playground/CartpoleBalance", 1)
# Op by op, an MJX reset takes ~20 s on a CPU and a step seconds; compiled, a few in all.
state, obs = jax.jit(env.reset)(jax.random.key(0), None)
try:
    first = render_frame(env, state, None, obs[0])
except RenderError as err:
    print("no renderer:", err)
    raise SystemExit(0)
step = jax.jit(env.step)
for _ in range(10):
    state, _ = step(jax.random.key(1), state, np.ones((1, 1), np.float32), None)
second = render_frame(env, state, None, obs[0])
assert first.shape == (240, 320, 3) and first.dtype == np.uint8, first.shape
assert first.std() > 1 and not np.array_equal(first, second)
print("rendered")
"""


@pytest.mark.playground
@pytest.mark.slow
def test_frames_come_from_mujoco_not_the_observation(registry):
    proc = subprocess.run(
        [sys.executable, "-c", RENDER_CHECK],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, "MUJOCO_GL": "egl"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    if proc.stdout.startswith("no renderer:"):
        line = proc.stdout.strip()
        assert "MUJOCO_GL" in line and "\n" not in line
        pytest.skip(f"MuJoCo cannot render on this machine: {line}")
    assert proc.stdout.strip() == "rendered"
