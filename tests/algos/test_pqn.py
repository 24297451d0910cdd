"""PQN beyond the shared invariants: its Q(lambda) targets on probe environments and its network
(its CartPole learning run is a case of tests/algos/test_learning.py)."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import purerl
from purerl import envs
from purerl.algos.pqn import PQNConfig, make_pqn
from purerl.core.nets import make_q_network
from purerl.envs.probes import PROBES
from tests.helpers import train_probes

PROBE_CFG = PQNConfig(
    num_envs=16,
    rollout_len=8,
    num_minibatches=4,
    num_epochs=4,
    lr=3e-3,
    anneal_lr=False,
    gamma=0.5,
    eps_end=0.5,
    exploration_fraction=0.3,
    hidden_sizes=(32,),
    total_timesteps=16 * 8 * 80,
)


@functools.cache
def probe_q(q_lambda: float) -> dict:
    """PQN trained on all five probes in one program: ``{env_id: obs -> Q-values}``."""
    cfg = dataclasses.replace(PROBE_CFG, q_lambda=q_lambda)
    env, params = train_probes(make_pqn, cfg, list(PROBES))
    net = make_q_network(env.spec, cfg.hidden_sizes, cfg.activation, layer_norm=cfg.layer_norm)
    return {
        e: lambda obs, p=p: np.asarray(net.apply(p, jnp.array(obs, jnp.float32)[:, None]))
        for e, p in params.items()
    }


@pytest.mark.learning
@pytest.mark.parametrize(
    "env_id, q_lambda, obs, expected_q",
    [
        # Discounting through the lambda-returns: Q(0) = gamma * 1, Q(1) = 1 (gamma 0.5), for
        # either action (the choice does not matter on this probe).
        ("ProbeTwoStep-v0", 0.65, [0.0, 1.0], [[0.5, 0.5], [1.0, 1.0]]),
        # Monte Carlo targets (lambda 1) reach the same values on a two-step episode.
        ("ProbeTwoStep-v0", 1.0, [0.0, 1.0], [[0.5, 0.5], [1.0, 1.0]]),
        # Action-dependent targets: the taken action's value is regressed, the other's too.
        ("ProbeActionReward-v0", 0.65, [0.0], [[-1.0, 1.0]]),
    ],
)
@pytest.mark.slow
def test_probe_q_values(env_id, q_lambda, obs, expected_q):
    np.testing.assert_allclose(probe_q(q_lambda)[env_id](obs), expected_q, atol=0.15)


def test_the_q_network_normalises_its_layers_and_rejects_continuous_actions():
    from purerl.config import ConfigError

    cfg = purerl.algos.get("pqn").smoke
    algo = make_pqn(cfg, envs.from_config(cfg))
    params = algo.init(jax.random.key(0)).params["params"]
    assert any(name.startswith("LayerNorm") for name in params["torso"])
    plain = make_pqn(dataclasses.replace(cfg, layer_norm=False), envs.from_config(cfg))
    assert not any(
        "LayerNorm" in n for n in plain.init(jax.random.key(0)).params["params"]["torso"]
    )
    with pytest.raises(ConfigError, match="PQN needs discrete actions"):
        make_pqn(dataclasses.replace(cfg, env="Pendulum-v1"), envs.make("Pendulum-v1", 4))
