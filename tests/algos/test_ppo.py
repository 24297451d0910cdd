"""PPO beyond the shared invariants (tests/algos/test_invariants.py): continuous actions,
metrics, learning-rate annealing and the probe environments."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import algos, envs
from purerl.algos.ppo import PPOConfig, make_ppo
from purerl.core.loop import train
from purerl.core.program import compile_chunk, init_agents
from purerl.envs.probes import PROBES
from purerl.presets.ppo import PRESETS
from tests.helpers import train_probes

# The registry's smoke configuration (CartPole-v1): the same tiny run the shared invariants use.
TINY = algos.get("ppo").smoke


def run(cfg: PPOConfig, updates_per_chunk=None):
    return train(algos.get("ppo").make(cfg).algo, cfg, updates_per_chunk=updates_per_chunk)


@pytest.mark.slow
def test_continuous_actions_and_obs_normalisation_run():
    # The Pendulum preset (observation normalisation on) cut to two small updates: the run
    # tests/run/test_api.py trains through purerl.train, so they share its compiled programs.
    cfg = dataclasses.replace(
        PRESETS["Pendulum-v1"], num_envs=4, rollout_len=16, num_minibatches=2, total_timesteps=128
    )
    assert cfg.normalize_obs
    result = run(cfg)
    log_std = result.agents.state.params["params"]["policy"]["log_std"]
    assert log_std.shape == (1, 1)
    assert np.isfinite(np.asarray(log_std)).all()


def test_metrics_cover_losses_episodes_and_optimizer():
    env = envs.make(TINY.env, TINY.num_envs)
    algo = make_ppo(TINY, env)
    state = algo.init(jax.random.key(0))
    _, metrics = jax.jit(algo.update)(state, jax.random.key(1))
    expected = {
        "loss/policy",
        "loss/value",
        "loss/entropy",
        "loss/approx_kl",
        "loss/clip_frac",
        "loss/total",
        "optim/grad_norm",
        "optim/lr",
        "episode/return",
        "episode/length",
        "episode/count",
    }
    assert expected <= set(metrics)
    assert all(jnp.ndim(v) == 0 for v in metrics.values())


@pytest.mark.slow
def test_lr_annealing_reaches_zero_only_when_enabled():
    env = envs.make(TINY.env, TINY.num_envs)
    for anneal, expect_decay in [(True, True), (False, False)]:
        algo = make_ppo(dataclasses.replace(TINY, anneal_lr=anneal), env)
        # The loop's own 6-update program: with annealing it is the smoke run's, cached.
        agents = init_agents(algo, [0])
        _, metrics = compile_chunk(algo, agents, 6)(agents)
        lr = np.asarray(metrics["optim/lr"])[0]
        assert (lr[-1] < lr[0]) == expect_decay
        assert lr[0] == np.float32(TINY.lr)


PROBE_CFG = PPOConfig(
    num_envs=8,
    rollout_len=16,
    num_minibatches=4,
    num_epochs=4,
    lr=3e-3,
    anneal_lr=False,
    ent_coef=0.0,
    gamma=0.5,
    hidden_sizes=(32,),
    total_timesteps=8 * 16 * 80,
)


@pytest.fixture(scope="module")
def probe_agents():
    """PPO trained on all five probes in one program."""
    from purerl.core.nets import make_actor_critic

    env, params = train_probes(make_ppo, PROBE_CFG, list(PROBES))
    return make_actor_critic(env.spec, PROBE_CFG.hidden_sizes, PROBE_CFG.activation), params


@pytest.mark.learning
@pytest.mark.parametrize(
    "env_id, obs, expected_value",
    [
        ("ProbeConstant-v0", [0.0], [1.0]),
        ("ProbeObsReward-v0", [-1.0, 1.0], [-1.0, 1.0]),
        ("ProbeTwoStep-v0", [0.0, 1.0], [0.5, 1.0]),  # gamma 0.5
    ],
)
@pytest.mark.slow
def test_probe_values(probe_agents, env_id, obs, expected_value):
    net, params = probe_agents
    values = net.apply(params[env_id], jnp.array(obs)[:, None], method="critic")
    np.testing.assert_allclose(values, expected_value, atol=0.1)


@pytest.mark.learning
@pytest.mark.parametrize(
    "env_id, obs, best_action",
    [("ProbeActionReward-v0", [0.0], [1]), ("ProbeObsAction-v0", [-1.0, 1.0], [0, 1])],
)
def test_probe_policies(probe_agents, env_id, obs, best_action):
    net, params = probe_agents
    dist, values = net.apply(params[env_id], jnp.array(obs)[:, None])
    probs = jax.nn.softmax(dist.logits)
    chosen = np.asarray(probs)[np.arange(len(obs)), best_action]
    assert (chosen > 0.9).all(), probs
    np.testing.assert_allclose(values, 1.0, atol=0.2)


def test_layer_norm_option_puts_layer_norm_in_both_torsos():
    def torso_modules(cfg):
        params = make_ppo(cfg, envs.make(cfg.env, cfg.num_envs)).init(jax.random.key(0)).params
        return {name: set(params["params"][name]) for name in ("actor_torso", "critic_torso")}

    assert all(
        any(m.startswith("LayerNorm") for m in modules)
        for modules in torso_modules(dataclasses.replace(TINY, layer_norm=True)).values()
    )
    assert not any("LayerNorm" in m for ms in torso_modules(TINY).values() for m in ms)
