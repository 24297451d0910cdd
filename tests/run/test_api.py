"""The Python API: ``purerl.train`` equals the command line bit for bit, ``make_train`` is a
pure function of the key, ``purerl.load`` gives a policy on raw observations."""

import dataclasses
import json

import jax
import numpy as np
import pytest

import purerl
from purerl.core.ops.normalize import normalize
from purerl.envs.wrappers import NormalizeObsState
from purerl.run.evaluate import load_agents
from purerl.run.plots import write_trial_graphs
from purerl.run.rundir import GRAPH_FILES, graph_paths
from tests.helpers import leaves_equal, metric_rows

TINY = dict(
    num_envs=4, rollout_len=16, num_minibatches=2, num_epochs=2, hidden_sizes=(16,),
    total_timesteps=384, num_seeds=2,
)  # fmt: skip
"""The configuration of the session's ``tiny_run`` (tests/helpers.TINY_ARGS, 2 seeds)."""


@pytest.mark.slow
def test_train_gives_the_command_lines_parameters_and_history_bit_for_bit(tiny_run):
    result = purerl.train("ppo", env="CartPole-v1", **TINY)
    from_cli = load_agents(tiny_run)  # its final checkpoint
    assert leaves_equal(result.agents.state.params, from_cli.agents.state.params)
    rows = metric_rows(tiny_run)
    np.testing.assert_array_equal(
        result.history["loss/total"], np.array([r["per_seed"]["loss/total"] for r in rows]).T
    )
    summary = json.loads((tiny_run / "summary.json").read_text())
    assert result.summary.per_seed_final_return == summary["per_seed_final_return"]
    assert result.run_dir is None and result.summary.num_seeds == 2


@pytest.mark.slow
def test_make_train_is_a_pure_function_of_the_key_equal_to_a_run(tiny_run):
    cfg = dataclasses.replace(purerl.algos.get("ppo").base_config("CartPole-v1"), **TINY)
    train = jax.jit(jax.vmap(purerl.make_train(cfg)))
    keys = jax.vmap(jax.random.key)(np.arange(2))  # seeds 0 and 1, as the run's agents
    states, metrics = train(keys)
    from_cli = load_agents(tiny_run)
    # The same computation, to float rounding: XLA fuses the differently shaped program
    # (one scan of every update, vmapped over keys) a little differently.
    for a, b in zip(
        jax.tree.leaves(states.params), jax.tree.leaves(from_cli.agents.state.params), strict=True
    ):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert metrics["loss/total"].shape == (2, cfg.num_updates)
    again, _ = train(keys)
    assert leaves_equal(states, again)


@pytest.mark.slow
def test_the_python_route_keeps_the_presets_observation_normalisation():
    # Pendulum's preset normalises observations; the old route built the env without it.
    result = purerl.train("ppo", env="Pendulum-v1", num_envs=4, rollout_len=16,
                          num_minibatches=2, total_timesteps=128)  # fmt: skip
    assert result.config.normalize_obs
    assert isinstance(result.agents.state.env_state, NormalizeObsState)


def test_env_with_a_named_preset_trains_that_preset_on_env():
    # As `purerl train ppo --preset Snake-v0 --env Snake-6x6-v0`: the preset's settings, the
    # given environment (the preset's own environment was once trained instead, silently).
    snake = purerl.algos.get("ppo").presets["Snake-v0"]
    _, cfg, _ = purerl.api.resolve("ppo", "Snake-6x6-v0", "Snake-v0", {"num_seeds": 2})
    assert cfg == dataclasses.replace(snake, env="Snake-6x6-v0", num_seeds=2)
    _, cfg, _ = purerl.api.resolve("ppo", None, "Snake-v0", {})
    assert cfg == snake


def test_unknown_arguments_name_both_kinds_of_field():
    with pytest.raises(purerl.config.ConfigError, match="takes no argument learning_rate"):
        purerl.train("ppo", learning_rate=1e-3)


def test_train_into_a_run_dir_prints_nothing_and_load_gives_a_policy(tmp_path, capfd, curves):
    run = purerl.train("ppo", env="Pendulum-v1", num_envs=4, rollout_len=16,
                       num_minibatches=2, total_timesteps=128, run_dir=tmp_path / "r")  # fmt: skip
    assert capfd.readouterr().out == ""  # no command-line lines, no tips
    # The learning curves drawn from the history in memory are those the files give.
    drawn = [path.read_bytes() for path in graph_paths(run.run_dir)]
    assert [p.name for p in write_trial_graphs(run.run_dir)] == list(GRAPH_FILES)
    assert [path.read_bytes() for path in graph_paths(run.run_dir)] == drawn
    policy = purerl.load(tmp_path / "r")
    raw = np.array([[1.0, 0.0, 3.0], [-0.5, 0.8, -2.0]], np.float32)
    state = jax.tree.map(lambda x: x[0], run.agents.state)
    expected = run.algo.act(state, normalize(state.env_state.obs_stats, raw), None, True)
    batch = policy(raw)
    assert isinstance(batch, np.ndarray) and batch.shape == (2, 1)
    np.testing.assert_allclose(batch, np.asarray(expected), rtol=1e-6)
    single = policy(raw[0])
    np.testing.assert_allclose(single, batch[0], rtol=1e-6)
    assert isinstance(policy(jax.numpy.asarray(raw)), jax.Array)
    with pytest.raises(ValueError, match="observations must end in shape"):
        policy(np.zeros(5, np.float32))


@pytest.mark.slow
@pytest.mark.long
def test_the_readme_example_trains_cartpole_and_its_policy_balances(cartpole_run):
    assert cartpole_run.run_dir.is_dir()
    policy = purerl.load(cartpole_run.run_dir)
    env = purerl.envs.make("CartPole-v1", 1)
    state, obs = env.reset(jax.random.key(3), env.default_params)
    steps = 0
    for step in range(300):
        action = policy(np.asarray(obs))
        state, out = env.step(
            jax.random.key(step), state, jax.numpy.asarray(action), env.default_params
        )
        obs, steps = out.obs, steps + 1
        if bool(out.terminated[0]):
            break
    assert steps == 300  # balanced for the whole test without falling
