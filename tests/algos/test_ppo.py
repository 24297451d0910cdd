"""PPO: determinism, seed/chunk invariance, probes and learning."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import envs
from purerl.algos.ppo import PPOConfig, make_ppo
from purerl.train import RunOptions, init_agents, make_run_chunk, over_seeds, train

TINY = PPOConfig(
    env="CartPole-v1",
    num_envs=4,
    rollout_len=16,
    num_minibatches=2,
    num_epochs=2,
    hidden_sizes=(16,),
    total_timesteps=4 * 16 * 6,
)


def run(cfg: PPOConfig, updates_per_chunk=None):
    env = envs.make(cfg.env, cfg.num_envs, normalize_obs=cfg.normalize_obs)
    algo = make_ppo(cfg, env)
    return train(algo, cfg, RunOptions(updates_per_chunk=updates_per_chunk, progress=False))


def as_numpy(tree):
    """Leaves as NumPy arrays, with typed PRNG keys turned into their raw key data."""

    def convert(x):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        return np.asarray(x)

    return jax.tree.map(convert, tree)


def leaves_equal(a, b):
    pairs = zip(jax.tree.leaves(as_numpy(a)), jax.tree.leaves(as_numpy(b)), strict=True)
    return all(np.array_equal(x, y, equal_nan=True) for x, y in pairs)


@pytest.fixture(scope="module")
def tiny_run():
    return run(TINY)


def test_same_seed_gives_bitwise_identical_params_and_metrics(tiny_run):
    again = run(TINY)
    assert leaves_equal(tiny_run.agents.state.params, again.agents.state.params)
    assert tiny_run.summary["per_seed_final_return"] == again.summary["per_seed_final_return"]


def test_different_seeds_give_different_params(tiny_run):
    other = run(dataclasses.replace(TINY, seed=1))
    assert not leaves_equal(tiny_run.agents.state.params, other.agents.state.params)


def test_one_chunk_equals_several_chunks():
    whole = run(TINY, updates_per_chunk=6)
    pieces = run(TINY, updates_per_chunk=2)
    uneven = run(TINY, updates_per_chunk=4)  # 4 + 2
    assert leaves_equal(whole.agents, pieces.agents)
    assert leaves_equal(whole.agents.state.params, uneven.agents.state.params)


def test_vmapped_seed_i_equals_a_single_run_with_seed_i():
    many = run(dataclasses.replace(TINY, num_seeds=3, seed=5))
    for i in range(3):
        single = run(dataclasses.replace(TINY, seed=5 + i))
        params_i = jax.tree.map(lambda x, i=i: x[i : i + 1], many.agents.state.params)
        for a, b in zip(
            jax.tree.leaves(params_i), jax.tree.leaves(single.agents.state.params), strict=True
        ):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        assert many.final_returns[i] == pytest.approx(
            single.final_returns[0], rel=1e-5, nan_ok=True
        )


def test_update_traces_once_across_repeated_chunk_calls():
    env = envs.make(TINY.env, TINY.num_envs)
    algo = make_ppo(TINY, env)
    traces = 0

    def counting_update(state, key):
        nonlocal traces
        traces += 1
        return algo.update(state, key)

    chunk = jax.jit(over_seeds(make_run_chunk(algo._replace(update=counting_update), 2)))
    agents = init_agents(algo, [0])
    for _ in range(3):
        agents, _ = chunk(agents)
    assert traces == 1


def test_runs_clean_under_key_reuse_checking():
    with jax.debug_key_reuse(True):
        result = run(dataclasses.replace(TINY, total_timesteps=4 * 16 * 2))
    assert result.summary["num_updates"] == 2


def test_continuous_actions_and_obs_normalisation_run():
    cfg = dataclasses.replace(
        TINY, env="Pendulum-v1", normalize_obs=True, total_timesteps=4 * 16 * 2
    )
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


def test_lr_annealing_reaches_zero_only_when_enabled(tiny_run):
    env = envs.make(TINY.env, TINY.num_envs)
    for anneal, expect_decay in [(True, True), (False, False)]:
        algo = make_ppo(dataclasses.replace(TINY, anneal_lr=anneal), env)
        chunk = jax.jit(over_seeds(make_run_chunk(algo, 6)))
        _, metrics = chunk(init_agents(algo, [0]))
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


def trained_probe(env_id):
    cfg = dataclasses.replace(PROBE_CFG, env=env_id)
    env = envs.make(env_id, cfg.num_envs)
    algo = make_ppo(cfg, env)
    result = train(algo, cfg, RunOptions(progress=False))
    params = jax.tree.map(lambda x: x[0], result.agents.state.params)
    from purerl.nets import make_actor_critic

    net = make_actor_critic(env.spec, cfg.hidden_sizes, cfg.activation)
    return net, params


@pytest.mark.learning
@pytest.mark.parametrize(
    "env_id, obs, expected_value",
    [
        ("ProbeConstant-v0", [0.0], [1.0]),
        ("ProbeObsReward-v0", [-1.0, 1.0], [-1.0, 1.0]),
        ("ProbeTwoStep-v0", [0.0, 1.0], [0.5, 1.0]),  # gamma 0.5
    ],
)
def test_probe_values(env_id, obs, expected_value):
    net, params = trained_probe(env_id)
    values = net.apply(params, jnp.array(obs)[:, None], method="critic")
    np.testing.assert_allclose(values, expected_value, atol=0.1)


@pytest.mark.learning
@pytest.mark.parametrize(
    "env_id, obs, best_action",
    [("ProbeActionReward-v0", [0.0], [1]), ("ProbeObsAction-v0", [-1.0, 1.0], [0, 1])],
)
def test_probe_policies(env_id, obs, best_action):
    net, params = trained_probe(env_id)
    dist, values = net.apply(params, jnp.array(obs)[:, None])
    probs = jax.nn.softmax(dist.logits)
    chosen = np.asarray(probs)[np.arange(len(obs)), best_action]
    assert (chosen > 0.9).all(), probs
    np.testing.assert_allclose(values, 1.0, atol=0.2)
