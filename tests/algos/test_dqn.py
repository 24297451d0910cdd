"""DQN beyond the shared invariants (tests/algos/test_invariants.py): learning-start and
target-update timing, the epsilon schedule, refusals, metrics and the probe environments."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend.core import jaxprs_in_params

from purerl import algos, envs
from purerl.algos.dqn import DQNConfig, make_dqn
from purerl.core.nets import make_q_network
from purerl.core.program import compile_chunk, init_agents, make_run_chunk, over_seeds
from purerl.envs.probes import PROBES
from tests.helpers import leaves_equal, train_probes

# The registry's smoke configuration (CartPole-v1): the same tiny run the shared invariants use.
TINY = algos.get("dqn").smoke


@pytest.fixture(scope="module")
def tiny_algo():
    algo = make_dqn(TINY, envs.make(TINY.env, TINY.num_envs))
    return algo, jax.jit(algo.update)


@pytest.mark.slow
def test_no_gradient_step_before_learning_starts(tiny_algo):
    # 32 env steps per update and learning_starts 32: update 1 only collects; update 2 learns
    # from its first iteration on (steps after it: 36 > 32).
    algo, update = tiny_algo
    state = algo.init(jax.random.key(0))
    first, metrics = update(state, jax.random.key(1))
    assert leaves_equal(first.params, state.params)
    assert leaves_equal(first.opt_state, state.opt_state)
    assert int(metrics["optim/gradient_steps"]) == 0 and np.isnan(metrics["loss/total"])
    assert int(first.buffer.size) == 8
    second, metrics = update(first, jax.random.key(2))
    assert not leaves_equal(second.params, first.params)
    assert int(metrics["optim/gradient_steps"]) == 8 and np.isfinite(metrics["loss/total"])


def test_target_network_is_copied_every_period_and_frozen_in_between(tiny_algo):
    # target_update_period 64: the copy happens at the last iteration of update 2 (64 steps),
    # after that update's last gradient step; update 3 moves the online net but not the target.
    algo, update = tiny_algo
    state = algo.init(jax.random.key(0))
    state, _ = update(state, jax.random.key(1))
    state, _ = update(state, jax.random.key(2))
    assert leaves_equal(state.target_params, state.params)
    copied = state.target_params
    state, _ = update(state, jax.random.key(3))
    assert leaves_equal(state.target_params, copied)
    assert not leaves_equal(state.params, copied)


@pytest.mark.slow
def test_polyak_target_update_moves_part_way(tiny_algo):
    # Period 4 = every iteration; tau 0.25: target' = 0.25 * online' + 0.75 * target.
    cfg = dataclasses.replace(TINY, tau=0.25, target_update_period=4, rollout_len=1)
    cfg = dataclasses.replace(cfg, learning_starts=0, total_timesteps=4 * 1 * 6)
    algo = make_dqn(cfg, envs.make(cfg.env, cfg.num_envs))
    state = algo.init(jax.random.key(0))
    state, _ = jax.jit(algo.update)(state, jax.random.key(1))  # target: 0.25 new + 0.75 init
    before = state.target_params
    state, _ = jax.jit(algo.update)(state, jax.random.key(2))
    expected = jax.tree.map(lambda p, t: 0.25 * p + 0.75 * t, state.params, before)
    for a, b in zip(jax.tree.leaves(state.target_params), jax.tree.leaves(expected), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.slow
def test_epsilon_follows_the_linear_schedule():
    # Decay over 0.5 * 192 = 96 steps from 1 to 0.05, read at the start of each update's last
    # iteration: steps 28, 60, 92, 124, ...
    cfg = TINY
    algo = make_dqn(cfg, envs.make(cfg.env, cfg.num_envs))
    # The loop's own 6-update program of the smoke configuration (the compilation cache has it).
    agents = init_agents(algo, [0])
    _, metrics = compile_chunk(algo, agents, 6)(agents)
    steps = np.arange(1, 7) * 32 - 4
    expected = 1.0 + np.clip(steps / 96, 0, 1) * (0.05 - 1.0)
    np.testing.assert_allclose(metrics["optim/epsilon"][0], expected, rtol=1e-6)


def test_metrics_cover_losses_exploration_and_episodes(tiny_algo):
    algo, update = tiny_algo
    _, metrics = update(algo.init(jax.random.key(0)), jax.random.key(1))
    expected = {
        "loss/td",
        "loss/total",
        "q/taken",
        "optim/grad_norm",
        "optim/lr",
        "optim/epsilon",
        "optim/gradient_steps",
        "episode/return",
        "episode/length",
        "episode/count",
    }
    assert expected <= set(metrics)
    assert all(jnp.ndim(v) == 0 for v in metrics.values())


def test_rejects_continuous_actions():
    from purerl.config import ConfigError

    with pytest.raises(ConfigError, match="DQN needs discrete actions"):
        make_dqn(dataclasses.replace(TINY, env="Pendulum-v1"), envs.make("Pendulum-v1", 4))


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"batch_size": 128}, "--batch-size 128 exceeds --buffer-size 64"),
        ({"learning_starts": 192}, "--learning-starts 192 is not below the run's 192 steps"),
        ({"buffer_size": 66}, "--buffer-size 66 is not a multiple of --num-envs 4"),
        ({"train_frequency": 3}, "--train-frequency 3 does not divide --rollout-len 8"),
        ({"tau": 0.0}, "--tau must lie in (0, 1]"),
        ({"loss": "l1"}, "--loss must be one of"),
    ],
)
def test_impossible_configs_name_the_flag(overrides, message):
    from purerl.config import ConfigError

    with pytest.raises(ConfigError) as err:
        dataclasses.replace(TINY, **overrides)
    assert message in str(err.value)


PROBE_CFG = DQNConfig(
    num_envs=8,
    rollout_len=4,
    buffer_size=512,
    batch_size=64,
    learning_starts=256,
    target_update_period=64,
    lr=3e-3,
    gamma=0.5,
    exploration_fraction=0.3,
    eps_end=0.5,
    hidden_sizes=(32,),
    total_timesteps=8 * 4 * 300,
)


@pytest.fixture(scope="module")
def probe_q():
    """DQN trained on all five probes in one program: ``{env_id: obs -> Q-values}``."""
    env, params = train_probes(make_dqn, PROBE_CFG, list(PROBES))
    net = make_q_network(env.spec, PROBE_CFG.hidden_sizes, PROBE_CFG.activation)
    return {
        e: lambda obs, p=p: np.asarray(net.apply(p, jnp.array(obs, jnp.float32)[:, None]))
        for e, p in params.items()
    }


@pytest.mark.learning
@pytest.mark.parametrize(
    "env_id, obs, expected_q",
    [
        # Two actions everywhere; where the choice does not matter both share the value.
        ("ProbeConstant-v0", [0.0], [[1.0, 1.0]]),
        ("ProbeObsReward-v0", [-1.0, 1.0], [[-1.0, -1.0], [1.0, 1.0]]),
        ("ProbeTwoStep-v0", [0.0, 1.0], [[0.5, 0.5], [1.0, 1.0]]),  # gamma 0.5
        ("ProbeActionReward-v0", [0.0], [[-1.0, 1.0]]),
        ("ProbeObsAction-v0", [-1.0, 1.0], [[1.0, -1.0], [-1.0, 1.0]]),
    ],
)
@pytest.mark.slow
def test_probe_q_values(probe_q, env_id, obs, expected_q):
    np.testing.assert_allclose(probe_q[env_id](obs), expected_q, atol=0.15)


def test_layer_norm_option_puts_layer_norm_in_the_torso():
    def torso_modules(cfg):
        params = make_dqn(cfg, envs.make(cfg.env, cfg.num_envs)).init(jax.random.key(0)).params
        return set(params["params"]["torso"])

    assert any(
        m.startswith("LayerNorm") for m in torso_modules(dataclasses.replace(TINY, layer_norm=True))
    )
    assert not any("LayerNorm" in m for m in torso_modules(TINY))


def primitives(jaxpr) -> set[str]:
    """Names of the primitives in a jaxpr and every jaxpr nested in it."""
    found = set()
    for eqn in jaxpr.eqns:
        found.add(eqn.primitive.name)
        for sub in jaxprs_in_params(eqn.params):
            found |= primitives(sub)
    return found


def test_vmapped_seeds_keep_the_learning_starts_branch(tiny_algo):
    # The update count (and the buffer position, Algo.lockstep) is one copy for all seeds, so
    # the learning-starts cond stays a branch under vmap; on per-seed copies (a plain vmap) it
    # becomes a select that computes the gradient step on every iteration.
    algo, _ = tiny_algo
    assert algo.lockstep == ("buffer.position", "buffer.size")
    agents = init_agents(algo, range(3))
    shared = over_seeds(make_run_chunk(algo, 1), algo.lockstep)
    assert "cond" in primitives(jax.make_jaxpr(shared)(agents).jaxpr)
    per_seed = jax.vmap(make_run_chunk(algo, 1))
    assert "cond" not in primitives(jax.make_jaxpr(per_seed)(agents).jaxpr)
