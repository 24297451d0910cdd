"""Vmapped sweeps: configuration k with seed s equals a single run of it; grouping; divergence."""

import dataclasses
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import algos
from purerl.algos.ppo import PPOHparams
from purerl.core.loop import train
from purerl.core.report import ChunkReport
from purerl.search.sweep import (
    NONFINITE_LOSS,
    AgentTracker,
    BatchResult,
    ConfigResult,
    batch_configs,
    flag_nonfinite_losses,
    group_configs,
    run_batch,
    split_groups,
    stack_hparams,
    sweep,
)

# The algorithms' smoke configurations, so the single runs compared with a sweep's agents load
# the programs other tests compile from the compilation cache.
TINY_PPO = dataclasses.replace(algos.get("ppo").smoke, seed=7)
TINY_DQN = dataclasses.replace(algos.get("dqn").smoke, seed=3)
LEARNING_RATES = (1e-3, 3e-3, 1e-2)


def single_run(cfg):
    return train(algos.for_config(cfg).make(cfg).algo, cfg)


def assert_agent_matches_single_run(batch, agent, single):
    swept = jax.tree.leaves(jax.tree.map(lambda x: x[agent], batch.train.agents.state.params))
    alone = jax.tree.leaves(jax.tree.map(lambda x: x[0], single.agents.state.params))
    for a, b in zip(swept, alone, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert batch.train.final_returns[agent] == pytest.approx(
        single.final_returns[0], rel=1e-5, nan_ok=True
    )


@pytest.mark.slow
def test_ppo_sweep_of_three_learning_rates_equals_single_runs():
    configs = [dataclasses.replace(TINY_PPO, lr=lr, num_seeds=2) for lr in LEARNING_RATES]
    batch = run_batch(algos.get("ppo"), configs)
    # Every configuration's first seed, and the second seed of one (agent (k, s) is 2k + s).
    for k, s in [(0, 0), (1, 0), (2, 0), (0, 1)]:
        alone = dataclasses.replace(configs[k], seed=TINY_PPO.seed + s, num_seeds=1)
        assert_agent_matches_single_run(batch, 2 * k + s, single_run(alone))
    for k in range(3):
        np.testing.assert_array_equal(
            batch.configs[k].returns, batch.train.final_returns[2 * k : 2 * k + 2]
        )
    # The learning rates really differ in effect (hparams are not ignored).
    params = jax.tree.leaves(batch.train.agents.state.params)[0]
    assert not np.allclose(params[0], params[2])


@pytest.mark.slow
def test_dqn_sweep_of_three_learning_rates_equals_single_runs():
    configs = [dataclasses.replace(TINY_DQN, lr=lr) for lr in LEARNING_RATES]
    batch = run_batch(algos.get("dqn"), configs)
    for k, cfg in enumerate(configs):
        assert_agent_matches_single_run(batch, k, single_run(cfg))
    params = jax.tree.leaves(batch.train.agents.state.params)[0]
    assert not np.allclose(params[0], params[1])


def test_configs_are_grouped_by_the_fields_that_change_programs():
    traced = algos.get("ppo").traced
    configs = [
        TINY_PPO,
        dataclasses.replace(TINY_PPO, num_envs=8),
        dataclasses.replace(TINY_PPO, lr=1e-2, gamma=0.9),
        dataclasses.replace(TINY_PPO, anneal_lr=False),
        dataclasses.replace(TINY_PPO, num_envs=8, ent_coef=0.0),
    ]
    assert group_configs(configs, traced) == [[0, 2], [1, 4], [3]]
    assert split_groups([[0, 2, 5], [1]], 2) == [[0, 2], [5], [1]]
    assert split_groups([[0, 2, 5], [1]], None) == [[0, 2, 5], [1]]


def test_hparams_are_stacked_config_major():
    configs = [dataclasses.replace(TINY_PPO, lr=lr, num_seeds=2) for lr in (0.1, 0.2)]
    hparams = stack_hparams(PPOHparams, configs)
    np.testing.assert_array_equal(hparams.lr, np.float32([0.1, 0.1, 0.2, 0.2]))
    assert hparams.gamma.shape == (4,) and hparams.gamma.dtype == jnp.float32


def test_sweep_returns_results_in_input_order_across_groups(monkeypatch):
    calls = []

    def fake_run_batch(spec, configs, updates_per_chunk, sinks=(), placement=None):
        calls.append([c.num_envs for c in configs])
        returns = [np.array([c.num_envs + c.lr]) for c in configs]
        results = [
            ConfigResult(c, r, np.zeros(1, bool), 1.0)
            for c, r in zip(configs, returns, strict=True)
        ]
        return BatchResult(results, None)

    monkeypatch.setattr("purerl.search.sweep.run_batch", fake_run_batch)
    pairs = [(4, 0.1), (8, 0.2), (4, 0.3)]
    configs = [dataclasses.replace(TINY_PPO, num_envs=n, lr=lr) for n, lr in pairs]
    results = sweep("ppo", configs)
    assert calls == [[4, 4], [8]]
    assert [float(r.returns[0]) for r in results] == pytest.approx([4.1, 8.2, 4.3])


def test_sweep_hooks_get_each_batch_and_its_sinks_reach_the_batch(monkeypatch):
    class Sink:
        closed = False

        def write(self, report):
            pass

        def close(self, summary):
            self.closed = True

    given, events = [], []

    def fake_run_batch(spec, configs, updates_per_chunk, sinks=(), placement=None):
        given.append(list(sinks))
        results = [ConfigResult(c, np.zeros(1), np.zeros(1, bool), 1.0) for c in configs]
        return BatchResult(results, None)

    def before_batch(number, indices, placement):
        events.append(("before", number, indices, placement))
        return [Sink()]

    def on_batch(number, indices, batch):
        events.append(("after", number, indices, len(batch.configs)))

    monkeypatch.setattr("purerl.search.sweep.run_batch", fake_run_batch)
    configs = [dataclasses.replace(TINY_PPO, num_envs=n) for n in (4, 8, 4, 4)]
    sweep("ppo", configs, max_configs_per_batch=2, on_batch=on_batch, before_batch=before_batch)
    assert batch_configs(configs, algos.get("ppo").traced, 2) == [[0, 2], [3], [1]]
    assert events == [
        ("before", 0, [0, 2], None),
        ("after", 0, [0, 2], 2),
        ("before", 1, [3], None),
        ("after", 1, [3], 1),
        ("before", 2, [1], None),
        ("after", 2, [1], 1),
    ]
    assert all(len(sinks) == 1 and sinks[0].closed for sinks in given)


class FakeAlgo(NamedTuple):
    """Stands in for ``Algo``: the flag wrapper only replaces ``update``."""

    init: Callable
    update: Callable


def test_nonfinite_losses_are_flagged_per_agent_instead_of_stopping_the_run():
    def update(state, key):
        loss = jnp.where(state > 0, jnp.nan, 1.0)
        return state, {"loss/total": loss, "optim/gradient_steps": jnp.int32(1)}

    algo = flag_nonfinite_losses(FakeAlgo(lambda key: jnp.float32(0), update))
    _, metrics = algo.update(jnp.float32(1.0), jax.random.key(0))
    assert "loss/total" not in metrics and bool(metrics[NONFINITE_LOSS])
    _, metrics = algo.update(jnp.float32(0.0), jax.random.key(0))
    assert not bool(metrics[NONFINITE_LOSS])

    seen = []
    tracker = AgentTracker(2, seen.append)
    metrics = {
        "episode/return": np.array([[1.0, np.nan], [3.0, 5.0]]),
        "episode/count": np.array([[1.0, 0.0], [1.0, 1.0]]),
        NONFINITE_LOSS: np.array([[False, False], [False, True]]),
    }
    tracker.write(ChunkReport(0, metrics, 2.0, 1.0))
    assert seen[0].updates_done == 2
    np.testing.assert_allclose(seen[0].recent_returns, [1.0, 4.0])
    np.testing.assert_array_equal(seen[0].diverged, [False, True])
