"""``python -m benchmarks.throughput --network gru`` at a toy budget, and the recurrent PPO
reference's loss against purerl's on the same parameters and sequences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks import reference_rnn_ppo
from benchmarks.tests.runs import run_module
from purerl import envs
from purerl.algos.ppo import PPOBatch, PPOConfig, PPOHparams, ppo_loss, state_value
from purerl.core.memory import Recurrent
from purerl.core.nets import make_actor_critic
from purerl.core.ops.normalize import init_running_stats, update_running_stats
from purerl.core.ops.sgd import split_sequences


@pytest.mark.slow  # three training programs to compile: about 15 s on a quiet core
def test_tiny_gru_bench_prints_every_row():
    # The env's preset (a GRU, 8 minibatches, rewards scaled) at a toy size: 8 sequences of 2.
    proc = run_module(
        "benchmarks.throughput",
        *("--env", "CartPole-NoVelocity-v1", "--network", "gru", "--rnn-size", "8"),
        *("--hidden-sizes", "8", "--num-envs", "2", "--rollout-len", "8", "--bptt-len", "2"),
        *("--total-timesteps", "16", "--seeds", "1", "--repeats", "1"),
        *("--peers", "reference", "mlp"),
    )
    assert proc.returncode == 0, proc.stderr
    assert "network=gru" in proc.stdout
    rows = [line.split(" | ") for line in proc.stdout.splitlines() if line.startswith("| ")][1:]
    names = ["purerl", "reference", "purerl mlp"]
    assert [row[:2] for row in rows] == [[f"| {name}", "1"] for name in names]
    for row in rows:
        assert float(row[4].replace(",", "")) > 0  # steps/s


def to_reference(params, num_layers: int):
    """purerl's recurrent actor-critic parameters in the reference's layout (same arrays)."""
    ours = params["params"]
    layers = {f"Dense_{i}": ours["torso"]["embed"][f"Dense_{i}"] for i in range(num_layers)}
    cell = {"ScanResetGRUCell_0": {"GRUCell_0": ours["torso"]["rnn"]["cell"]}}
    return {
        "params": {
            **layers,
            "ScannedGRU_0": cell,
            f"Dense_{num_layers}": ours["policy"]["Dense_0"],
            f"Dense_{num_layers + 1}": ours["value_head"]["Dense_0"],
        }
    }


def test_reference_rnn_ppo_loss_equals_purerls():
    """Rollout data ``[T, B]`` cut into sequences of ``L`` steps by each side's own code; the
    loss on the same three sequences (episode starts inside them reset the cell) is equal."""
    steps, num_envs, length, size = 8, 3, 4, 8
    cfg = PPOConfig(env="CartPole-NoVelocity-v1", network="gru", num_envs=num_envs,
                    rollout_len=steps, bptt_len=length, num_minibatches=2, hidden_sizes=(16,),
                    rnn_size=size)  # fmt: skip
    spec = envs.from_config(cfg).spec
    network = make_actor_critic(spec, cfg.hidden_sizes, cfg.activation, network="gru",
                                rnn_size=size)  # fmt: skip
    rng = np.random.default_rng(0)

    def normal(*shape):
        return jnp.asarray(rng.normal(size=shape), jnp.float32)

    start = rng.random((steps, num_envs)) < 0.25
    start[0] = True
    data = PPOBatch(
        obs=normal(steps, num_envs, 2),
        action=jnp.asarray(rng.integers(0, 2, (steps, num_envs)), jnp.int32),
        log_prob=jnp.asarray(np.log(rng.uniform(0.2, 0.8, (steps, num_envs))), jnp.float32),
        value=normal(steps, num_envs),
        advantage=normal(steps, num_envs),
        target=normal(steps, num_envs),
        valid=jnp.ones((steps, num_envs), bool),
    )
    hidden = 0.5 * normal(steps + 1, num_envs, size)  # the cell's state before each step, after
    start = jnp.asarray(start)
    chosen = jnp.asarray([4, 1, 5])  # of T / L * B = 6 sequences

    @jax.jit  # one compile instead of one per eager operation
    def both():
        params = network.init(jax.random.key(0), hidden[0], data.obs[:1], start[:1])
        seqs = split_sequences(data, hidden[:-1], start, length)
        seqs = jax.tree.map(lambda x: x[chosen], seqs)
        outputs, flat = Recurrent(network, state_value, "gru", size).evaluate(params, seqs)
        ours, _ = ppo_loss(outputs, flat, PPOHparams.from_config(cfg), normalize_adv=True,
                           clip_value=True)  # fmt: skip

        def cut(x):
            return reference_rnn_ppo.to_sequences(x, length)[:, chosen]

        starts = reference_rnn_ppo.sequence_starts(hidden[0], hidden[1:], length)
        mb = reference_rnn_ppo.Minibatch(
            *map(cut, (data.obs, start, data.action, data.log_prob, data.value)),
            *map(cut, (data.advantage, data.target)),
            starts[chosen],
        )
        ref_network = reference_rnn_ppo.RecurrentAgent(cfg.hidden_sizes, size, 2, cfg.activation)
        theirs = reference_rnn_ppo.ppo_loss(to_reference(params, 1), ref_network, mb,
                                            cfg.clip_eps, cfg.vf_coef, cfg.ent_coef)  # fmt: skip
        return ours, theirs

    ours, theirs = both()
    np.testing.assert_allclose(theirs, ours, rtol=1e-5, atol=1e-6)


def test_reference_reward_scale_equals_purerls():
    """``normalize_reward``: the reference's scaled rewards and running statistics are those of
    purerl's ``ScaleReward`` step (its arithmetic, run here from purerl's running statistics)."""
    rng = np.random.default_rng(1)
    rewards = jnp.asarray(rng.normal(size=(6, 4)), jnp.float32)
    dones = jnp.asarray(rng.random((6, 4)) < 0.3)
    gamma = 0.99

    @jax.jit
    def both():
        stats, returns = init_running_stats(()), jnp.zeros(4)
        ref = reference_rnn_ppo.ReturnScale(
            jnp.zeros(4), jnp.zeros(()), jnp.ones(()), jnp.array(1e-4)
        )
        ours, theirs = [], []
        for reward, done in zip(rewards, dones, strict=True):
            returns = returns * gamma + reward
            stats = update_running_stats(stats, returns)
            ours.append(jnp.clip(reward / jnp.sqrt(stats.var + 1e-8), -10.0, 10.0))
            returns = jnp.where(done, 0.0, returns)
            scaled, ref = reference_rnn_ppo.scale_rewards(ref, reward, done, gamma)
            theirs.append(scaled)
        return jnp.stack(ours), jnp.stack(theirs), stats, ref

    ours, theirs, stats, ref = both()
    np.testing.assert_allclose(theirs, ours, rtol=1e-6)
    np.testing.assert_allclose([ref.mean, ref.var, ref.count], [stats.mean, stats.var, stats.count],
                               rtol=1e-6)  # fmt: skip
