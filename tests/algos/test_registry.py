"""A new algorithm costs one module and one registry entry: a REINFORCE toy defined here trains
through the shared loop, the command line, checkpoints and resume, sweeps and the Python API,
with no edit anywhere else."""

from __future__ import annotations

import dataclasses
import shutil
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import purerl
from purerl import algos
from purerl.algos import Algo, AlgoSpec
from purerl.config import CommonConfig, require_positive
from purerl.core.loop import train
from purerl.core.rollout import PolicyStep, collect
from purerl.core.stats import summarize
from purerl.search.sweep import sweep
from tests.helpers import leaves_equal, metric_rows, one_error_line, run_cli


@dataclasses.dataclass(frozen=True)
class ToyConfig(CommonConfig):
    """REINFORCE with a state-independent softmax policy: one logit per action."""

    num_envs: int = 4
    rollout_len: int = 8
    """Steps per environment between updates."""
    lr: float = 0.1
    """Step size of the logits."""
    total_timesteps: int = 4 * 8 * 6

    @property
    def env_steps_per_update(self) -> int:
        return self.num_envs * self.rollout_len

    def check(self) -> None:
        require_positive(self, "rollout_len", "lr")


class ToyHparams(NamedTuple):
    lr: jax.Array

    @classmethod
    def from_config(cls, cfg: ToyConfig) -> ToyHparams:
        return cls(jnp.float32(cfg.lr))


class ToyState(NamedTuple):
    params: jax.Array
    env_state: Any
    obs: jax.Array
    step: jax.Array
    hparams: ToyHparams


def make_toy(cfg: ToyConfig, env, env_params=None, axis_name=None) -> Algo:
    params_env = env.default_params if env_params is None else env_params
    num_actions = env.spec.action_space.num_actions

    def init(key):
        env_state, obs = env.reset(key, params_env)
        logits = jnp.zeros(num_actions)
        return ToyState(logits, env_state, obs, jnp.int32(0), ToyHparams.from_config(cfg))

    def sample(logits, obs, key):
        return PolicyStep(jax.random.categorical(key, logits, shape=obs.shape[:1]))

    def update(state, key):
        rollout = collect(
            env, params_env, lambda obs, k: sample(state.params, obs, k), state.env_state,
            state.obs, key, cfg.rollout_len,
        )  # fmt: skip
        traj = rollout.transitions

        def loss(logits):
            log_probs = jax.nn.log_softmax(logits)[traj.action]
            advantage = traj.reward - traj.reward.mean()
            return -(log_probs * advantage).mean()

        value, grad = jax.value_and_grad(loss)(state.params)
        params = state.params - state.hparams.lr * grad
        metrics = {"loss/total": value, "optim/lr": state.hparams.lr, **summarize(traj.episode)}
        return state._replace(
            params=params, env_state=rollout.env_state, obs=rollout.obs, step=state.step + 1
        ), metrics

    def act(state, obs, key, greedy):
        if greedy:
            return jnp.full(obs.shape[:1], jnp.argmax(state.params), jnp.int32)
        return sample(state.params, obs, key).action

    return Algo(init, update, act)


PRESETS = {"CartPole-v1": ToyConfig()}

SPEC = AlgoSpec(
    name="toy",
    summary="REINFORCE toy defined in a test",
    config_cls=ToyConfig,
    hparams_cls=ToyHparams,
    build=make_toy,
    presets_module=__name__,
    smoke=ToyConfig(),
)


@pytest.fixture
def toy():
    algos.register(SPEC)
    yield SPEC
    algos.unregister(SPEC.name)


@pytest.mark.slow
def test_the_toy_trains_through_the_shared_loop(toy):
    cfg = dataclasses.replace(toy.smoke, num_seeds=2)
    result = train(toy.make(cfg).algo, cfg)
    assert result.history["loss/total"].shape == (2, 6)
    assert np.isfinite(result.history["loss/total"]).all()
    assert np.isfinite(result.final_returns).all()


@pytest.mark.slow
def test_the_command_line_knows_and_trains_the_toy(toy, tmp_path):
    assert "toy" in run_cli("--help").stdout and "toy" in run_cli("train", "--help").stdout
    help_text = run_cli("train", "toy", "--help").stdout
    assert "REINFORCE toy defined in a test" in help_text and "--rollout-len" in help_text
    one_error_line(run_cli("train", "toy", "--lr", "0"), "--lr must be positive")
    run_dir = tmp_path / "run"
    result = run_cli(
        "train", "toy", "--run-dir", run_dir, "--no-progress", "--checkpoint-every", "1",
        "--keep-checkpoints", "10", "--updates-per-chunk", "1",
    )  # fmt: skip
    assert result.code == 0, result.stderr
    assert [r["update"] for r in metric_rows(run_dir)] == [1, 2, 3, 4, 5, 6]

    # Checkpoint and resume: cut the run back to update 3 and continue it.
    cut = tmp_path / "cut"
    shutil.copytree(run_dir, cut)
    for step in (4, 5, 6):
        shutil.rmtree(cut / "checkpoints" / str(step))
    resumed = run_cli("train", "--resume", cut)
    assert resumed.code == 0, resumed.stderr
    assert "resuming at update 3" in resumed.stdout
    assert metric_rows(cut) == metric_rows(run_dir)

    # Evaluation and the trained policy through the registry.
    evaluated = run_cli("eval", run_dir, "--episodes", "2")
    assert evaluated.code == 0 and "toy on CartPole-v1" in evaluated.stdout, evaluated.stderr
    assert purerl.load(run_dir)(np.zeros(4, np.float32)) in (0, 1)


@pytest.mark.slow
def test_the_toy_sweeps_as_one_program_and_matches_single_runs(toy):
    configs = [dataclasses.replace(toy.smoke, lr=lr) for lr in (0.05, 0.5)]
    results = sweep("toy", configs)
    for cfg, swept in zip(configs, results, strict=True):
        alone = train(toy.make(cfg).algo, cfg)
        np.testing.assert_allclose(swept.returns, alone.final_returns, rtol=1e-5)


def test_the_search_command_and_the_python_api_take_the_toy(toy, tmp_path):
    result = run_cli(
        "search", "--algo", "toy", "--param", "lr=grid:0.05,0.5", "--search-dir",
        tmp_path / "search", "--no-progress",
    )  # fmt: skip
    assert result.code == 0, result.stderr
    assert (tmp_path / "search" / "best_config.json").exists()
    first = purerl.train("toy", env="CartPole-v1", lr=0.2)
    again = purerl.train("toy", env="CartPole-v1", lr=0.2)
    assert leaves_equal(first.agents, again.agents)
    assert first.history["optim/lr"].shape == (1, 6)
