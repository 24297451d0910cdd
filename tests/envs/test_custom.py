"""Your own environments (``purerl/envs/custom.py``): the guide's example through Python and the
command line, runs that find their environment again, and one line for each bad environment."""

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments import spaces

import purerl
from purerl import envs
from purerl.config import ConfigError
from purerl.core.env import action_space_from
from purerl.envs import custom
from purerl.envs.probes import make_probe
from purerl.envs.wrappers import AutoReset
from purerl.run.rundir import default_run_dir
from tests.helpers import ROOT, run_cli


def guide_blocks() -> list[str]:
    """The code blocks of the guide's "Your own environment" section: module, Python, shell."""
    text = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    section = text.split("## Your own environment\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```\w+\n(.*?)```", section, re.DOTALL)


@pytest.fixture
def mymodule(tmp_path, monkeypatch):
    """The guide's ``mymodule.py`` in a directory of its own on ``sys.path``, imported afresh."""
    folder = tmp_path / "code"
    folder.mkdir()
    (folder / "mymodule.py").write_text(guide_blocks()[0], encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    sys.modules.pop("mymodule", None)
    yield folder
    sys.modules.pop("mymodule", None)


def walk():
    import mymodule

    return mymodule.Walk()


def test_the_guides_environment_steps_with_final_observations(mymodule):
    env = envs.make(walk(), 3)
    assert env.spec.id == "object:mymodule.Walk" and env.spec.obs_shape == (1,)
    params = env.default_params
    state, obs = env.reset(jax.random.key(0), params)
    step_fn, ends = jax.jit(env.step), 0
    for t in range(20):  # always right: from -5..5 an episode ends within 20 steps
        state, step = step_fn(jax.random.key(t), state, jnp.ones(3, jnp.int32), params)
        ended = np.asarray(step.terminated | step.truncated)
        np.testing.assert_array_equal(step.final_obs[~ended], step.obs[~ended])
        assert (np.asarray(step.final_obs[step.terminated]) == 0).all()
        ends += ended.sum()
    assert ends >= 3


class FiveTuple:
    """gymnax 0.x's step, ``(obs, state, reward, done, info)``, without a final observation:
    the episode ends after each step."""

    default_params = None

    def reset(self, key, params):
        return jnp.zeros(2), jnp.int32(0)

    def step(self, key, state, action, params):
        return jnp.ones(2), state + 1, 1.0, True, {}

    def observation_space(self, params):
        return spaces.Box(-1.0, 1.0, (2,), jnp.float32)

    def action_space(self, params):
        return spaces.Discrete(3)


class NoFinalObservation(FiveTuple):
    def step(self, key, state, action, params):
        return jnp.ones(2), state + 1, 1.0, False, True, {}


@pytest.mark.parametrize("cls", [FiveTuple, NoFinalObservation])
def test_without_final_observation_every_end_is_terminal(cls):
    env = envs.make(cls(), 2)
    state, _ = env.reset(jax.random.key(0), None)
    _, step = env.step(jax.random.key(1), state, jnp.zeros(2, jnp.int32), None)
    assert np.asarray(step.terminated).all() and not np.asarray(step.truncated).any()
    np.testing.assert_array_equal(step.final_obs, step.obs)
    assert np.asarray(step.episode.done).all()


def test_a_purerl_environment_object_and_an_env_params_pair_are_taken(mymodule):
    native = envs.make(AutoReset(make_probe("ProbeConstant-v0")), 2)
    params = native.default_params
    state, _ = native.reset(jax.random.key(0), params)
    _, step = native.step(jax.random.key(1), state, jnp.zeros(2, jnp.int32), params)
    assert np.asarray(step.episode.done).all()  # the probe's episodes last one step
    pair = envs.make((walk(), 1), 2)  # episodes cut after 1 step
    assert pair.default_params == 1
    state, _ = pair.reset(jax.random.key(0), pair.default_params)
    _, step = pair.step(jax.random.key(1), state, jnp.zeros(2, jnp.int32), pair.default_params)
    assert np.asarray(step.episode.done).all()


# Bad environments: each one line, raised before anything compiles.


class BadStepArity(FiveTuple):
    def step(self, key, state, action, params):
        return jnp.ones(2), state, 1.0, True


class BadResetArity(FiveTuple):
    def reset(self, key, params):
        return jnp.zeros(2)


class DictObservations(FiveTuple):
    def reset(self, key, params):
        return {"x": jnp.zeros(2)}, jnp.int32(0)


class WrongObservationShape(FiveTuple):
    def reset(self, key, params):
        return jnp.zeros(3), jnp.int32(0)


class DictActions(FiveTuple):
    def action_space(self, params):
        return spaces.Dict({"a": spaces.Discrete(2), "b": spaces.Discrete(2)})


class PythonIf(FiveTuple):
    def step(self, key, state, action, params):
        if action > 0:
            state = state + 1
        return jnp.ones(2), state, 1.0, False, True, {}


class BatchedReward(FiveTuple):
    def step(self, key, state, action, params):
        return jnp.ones(2), state, jnp.ones(4), True, {}


class RaisingSpace(FiveTuple):
    def observation_space(self, params):
        raise KeyError("size")


class NoActionSpace:
    default_params = None

    def reset(self, key, params): ...

    def step(self, key, state, action, params): ...

    def observation_space(self, params): ...


class Continuous(FiveTuple):
    def action_space(self, params):
        return spaces.Box(-1.0, 1.0, (2,), jnp.float32)


BAD_OBJECTS = {
    BadStepArity: "BadStepArity.step returns 4 values; it must return (obs, state, reward, "
    "terminated, truncated, info) or (obs, state, reward, done, info)",
    BadResetArity: "BadResetArity.reset returns one array; it must return (obs, state)",
    DictObservations: "gives observations as a dict, not one array",
    WrongObservationShape: "observations of shape (3,), but observation_space(params).shape is "
    "(2,)",
    DictActions: "action space Dict is not one purerl can drive",
    PythonIf: "PythonIf.step fails when traced: TracerBoolConversionError",
    BatchedReward: "returns a reward of shape (4,); one environment's is a scalar",
    NoActionSpace: "NoActionSpace has no action_space",
    RaisingSpace: "RaisingSpace.observation_space raised KeyError: 'size'",
}


@pytest.mark.parametrize("cls", BAD_OBJECTS, ids=lambda cls: cls.__name__)
def test_a_bad_environment_object_is_one_line_naming_the_problem(cls):
    with pytest.raises(ConfigError) as err:
        purerl.train("ppo", env=cls())
    message = str(err.value)
    assert BAD_OBJECTS[cls] in message and "\n" not in message, message
    assert message.startswith(f"object:{__name__}.{cls.__name__}")


@pytest.mark.parametrize(
    "space",
    [
        spaces.Tuple([spaces.Discrete(2), spaces.Discrete(2)]),
        SimpleNamespace(n=4, shape=(4,)),  # Gymnasium's MultiBinary
        SimpleNamespace(nvec=(2, 3), shape=(2,)),  # Gymnasium's MultiDiscrete
    ],
)
def test_action_spaces_other_than_one_discrete_or_box_are_refused(space):
    with pytest.raises(ConfigError, match="is not one purerl can drive"):
        action_space_from(space)


def test_env_takes_no_other_kind_of_object():
    with pytest.raises(ConfigError, match="environment object with reset and step; got int"):
        purerl.train("ppo", env=3)
    with pytest.raises(ConfigError, match=re.escape("(pass what it returns: env=make_bad_step())")):
        purerl.train("ppo", env=make_bad_step)


@pytest.mark.parametrize("algo", ["dqn", "pqn"])
def test_value_based_algorithms_refuse_a_continuous_environment(algo):
    message = f"{algo.upper()} needs discrete actions; object:{__name__}.Continuous has continuous"
    with pytest.raises(ConfigError, match=re.escape(message)):
        purerl.train(algo, env=Continuous())


def make_bad_step():
    return BadStepArity()


def make_raising():
    raise RuntimeError("no licence for the simulator")


NOT_CALLABLE = 42
HERE = __name__  # tests.envs.test_custom


@pytest.mark.parametrize(
    "env, message",
    [
        ("no_such_module_xyz:make", "no module named 'no_such_module_xyz'; put its directory on"),
        (f"{HERE}:missing", f"module {HERE} has no attribute missing"),
        (f"{HERE}:NOT_CALLABLE", "NOT_CALLABLE is not callable (int); name a function"),
        (f"{HERE}:", "is neither a registered id nor module:factory, e.g. mypackage.envs:make_env"),
        ("a:b:c", "is neither a registered id nor module:factory"),
        (
            f"{HERE}:make_raising",
            "make_raising() raised RuntimeError: no licence for the simulator",
        ),
        (f"{HERE}:make_bad_step", "BadStepArity.step returns 4 values"),
        ("object:mymodule.Walk", "was given to purerl as an object, which purerl cannot rebuild"),
    ],
)
def test_a_bad_factory_on_the_command_line_is_one_error_line(env, message):
    result = run_cli("train", "ppo", "--env", env, "--no-progress")
    assert result.code == 2, result.stderr
    assert len(result.error_lines) == 1 and result.error_lines[0].startswith("error: ")
    assert message in result.stderr, result.stderr


def test_dqn_refuses_a_continuous_factory_on_the_command_line():
    result = run_cli("train", "dqn", "--env", f"{HERE}:Continuous", "--no-progress")
    assert result.code == 2 and len(result.error_lines) == 1
    assert f"DQN needs discrete actions; {HERE}:Continuous has continuous" in result.stderr


def test_a_factory_run_has_no_preset_and_its_run_dir_names_it():
    _, cfg, _ = purerl.api.resolve("ppo", f"{HERE}:make_bad_step", None, {})
    assert cfg == purerl.algos.get("ppo").config_cls(env=f"{HERE}:make_bad_step")
    path = default_run_dir("ppo", "object:m.f.<locals>.Walk")
    assert path.name.startswith("ppo-object_m.f._locals_.Walk-")


def test_a_factory_passes_a_dry_run_and_options_need_dataclass_parameters():
    result = run_cli("train", "ppo", "--env", f"{HERE}:FiveTuple", "--dry-run")
    assert result.code == 0 and f"ppo on {HERE}:FiveTuple" in result.stdout, result.stderr
    assert HERE in custom.USER_MODULES  # the command then exits the usual way (cli.may_exit_now)
    result = run_cli("train", "ppo", "--env", f"{HERE}:FiveTuple", "--env-options", "size=3")
    assert result.code == 2 and len(result.error_lines) == 1
    assert "--env-options size=3: " in result.stderr and "takes no options" in result.stderr


TINY = dict(
    num_envs=4, rollout_len=16, num_minibatches=2, num_epochs=2, hidden_sizes=(16,),
    total_timesteps=384,
)  # fmt: skip
"""6 updates of 64 steps."""


@pytest.mark.slow
def test_a_factory_run_from_python_resumes_on_the_command_line_exactly(mymodule, tmp_path):
    run_dir = tmp_path / "run"
    result = purerl.train(
        "ppo", env="mymodule:make_env", run_dir=run_dir, checkpoint_every=1,
        keep_checkpoints=10, updates_per_chunk=1, **TINY,
    )  # fmt: skip
    assert result.config.env == "mymodule:make_env"
    rows = (run_dir / "metrics.jsonl").read_text().splitlines()
    for step in (5, 6):  # as if stopped after update 4
        shutil.rmtree(run_dir / "checkpoints" / str(step))
    resumed = run_cli("train", "--resume", run_dir, "--env", "mymodule:make_env")
    assert resumed.code == 0 and "resuming at update 4" in resumed.stdout, resumed.stderr

    def without_time(lines):
        return [{k: v for k, v in json.loads(r).items() if k != "wall_time_s"} for r in lines]

    again = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert without_time(again) == without_time(rows)


@pytest.mark.slow
def test_make_train_trains_on_the_object(mymodule):
    cfg = dataclasses.replace(purerl.algos.get("ppo").config_cls(), **TINY)
    state, metrics = jax.jit(purerl.make_train(cfg, env=walk()))(jax.random.key(0))
    assert state.obs.shape == (4, 1) and metrics["loss/total"].shape == (cfg.num_updates,)


# The guide's example, as written.


@pytest.mark.slow
def test_the_guides_python_example_trains_and_loads_with_the_object(
    mymodule, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # the example writes runs/walk
    namespace: dict = {}
    exec(guide_blocks()[1], namespace)  # noqa: S102 - the guide's own code
    policy = namespace["policy"]
    assert policy(np.float32([3.0])) == 0 and policy(np.float32([-3.0])) == 1
    config = json.loads((tmp_path / "runs" / "walk" / "config.json").read_text())
    assert config["config"]["env"] == "object:mymodule.Walk"
    with pytest.raises(ConfigError, match="pass it again"):
        purerl.load(tmp_path / "runs" / "walk")
    with pytest.raises(ConfigError, match="trained on object:mymodule.Walk, not on object:"):
        purerl.load(tmp_path / "runs" / "walk", env=FiveTuple())
    eval_line = run_cli("eval", tmp_path / "runs" / "walk")
    assert eval_line.code == 2 and "purerl.load(run_dir, env=obj)" in eval_line.stderr


@pytest.mark.slow
def test_the_guides_command_line_example_trains_evaluates_resumes_and_loads(mymodule, tmp_path):
    command = guide_blocks()[2].split()
    assert command[:2] == ["purerl", "train"]
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(mymodule), str(ROOT)])}
    result = subprocess.run(
        [sys.executable, "-m", "purerl", *command[1:], "--no-progress"],
        cwd=work, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (run_dir,) = (work / "runs").iterdir()
    assert run_dir.name.startswith("ppo-mymodule_make_env-")
    config = json.loads((run_dir / "config.json").read_text())
    assert config["config"]["env"] == "mymodule:make_env"
    evaluated = run_cli("eval", run_dir, "--episodes", "4", "--env", "mymodule:make_env")
    assert evaluated.code == 0 and "mean return" in evaluated.stdout, evaluated.stderr
    resumed = run_cli("train", "--resume", run_dir, "--env", "mymodule:make_env")
    assert resumed.code == 0 and "already complete" in resumed.stdout, resumed.stderr
    policy = purerl.load(run_dir, env="mymodule:make_env")
    assert policy(np.float32([3.0])) == 0 and policy(np.float32([-3.0])) == 1
    with pytest.raises(ConfigError, match="which purerl builds itself; env= is for runs"):
        purerl.load(run_dir, env=walk())
