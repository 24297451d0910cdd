"""``python -m benchmarks.throughput`` for SAC at a toy budget, and the SAC reference's losses
against purerl's on the same parameters and minibatch."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks import peers, reference_sac, results, throughput
from benchmarks.tests.runs import run_module
from purerl import envs
from purerl.algos import continuous, offpolicy, sac
from purerl.algos.sac import SACConfig
from purerl.core.nets import make_continuous_nets
from purerl.core.ops.returns import clipped_double_q_targets


@pytest.mark.slow  # three training programs to compile: about 15 s on a quiet core
def test_tiny_sac_bench_prints_every_row_and_records_those_beside_a_peer(tmp_path):
    chosen = ["reference", "rejax"] if peers.rejax_available() else ["reference"]
    proc = run_module(
        "benchmarks.throughput",
        *("--algo", "sac", "--env", "Pendulum-v1", "--num-envs", "2", "--rollout-len", "4"),
        *("--learning-starts", "4", "--total-timesteps", "16", "--seeds", "1"),
        *("--repeats", "1", "--peers", *chosen),
        *("--write-records", "--benchmarks", tmp_path / "BENCHMARKS.md"),
    )
    assert proc.returncode == 0, proc.stderr
    rows = [line.split(" | ") for line in proc.stdout.splitlines() if line.startswith("| ")][1:]
    assert [row[:2] for row in rows] == [[f"| {name}", "1"] for name in ["purerl", *chosen]]
    for row in rows:
        assert float(row[4].replace(",", "")) > 0  # steps/s
    recorded = sorted(p.name for p in (tmp_path / "benchmarks/results/speed").iterdir())
    assert recorded == sorted(f"sac-Pendulum-v1-1seed-1dev-{peer}.json" for peer in chosen)
    page = (tmp_path / "BENCHMARKS.md").read_text()
    assert "## Speed beside peers" in page and "| reference (benchmarks/reference_sac.py) |" in page
    commands = [line for line in page.splitlines() if "python -m benchmarks.throughput" in line]
    assert any("--total-timesteps 16" in line for line in commands), commands
    assert not any("--write-records" in line for line in commands), commands


def test_a_row_beside_a_peer_becomes_a_record_that_keeps_its_place(tmp_path):
    args = throughput.BenchArgs(
        algo="ppo", seeds=(8,), total_timesteps=4096, num_devices=2,
        benchmarks=tmp_path / "BENCHMARKS.md",
    )  # fmt: skip
    cfg = throughput.bench_config(args)
    argv = ["--seeds", "8", "--num-devices", "2", "--write-records", "--benchmarks", "B.md"]
    split = throughput.speed_record(args, cfg, "reference/2", (8, 2, 300.0, 150.0, 2.004), argv)
    assert split.name == "ppo-CartPole-v1-8seeds-2dev-reference-2dev"
    assert split.peer == "reference (benchmarks/reference.py), split over 2 devices the same way"
    assert split.workload == "preset, 4,096 steps per seed"  # 8 updates of 4 envs x 128 steps
    assert split.command == "python -m benchmarks.throughput --seeds 8 --num-devices 2"
    assert (split.purerl_steps_per_s, split.peer_steps_per_s, split.ratio) == (300, 150, 2.004)
    published = throughput.speed_record(args, cfg, "reference", (8, 2, 300.0, 100.0, 3.0), argv)
    throughput.publish(args, [split, published])
    throughput.publish(args, [dataclasses.replace(split, ratio=1.5)])  # measured again
    speed = results.read_all(results.SpeedRecord, tmp_path / "benchmarks" / "results")
    assert [(r.name, r.order, r.ratio) for r in speed] == [
        ("ppo-CartPole-v1-8seeds-2dev-reference-2dev", 0, 1.5),
        ("ppo-CartPole-v1-8seeds-2dev-reference", 1, 3.0),
    ]
    text = args.benchmarks.read_text()
    assert text.index("**1.50x**") < text.index("**3.00x**")


def to_reference(actor_params, critic_params):
    """purerl's SAC parameters in the reference's layout (same arrays, other names)."""
    actor, critic = actor_params["params"], critic_params["params"]["VmapCritic_0"]
    torso, mlp = actor["torso"], critic["MLP_0"]
    return (
        {"params": {**torso, "Dense_2": actor["Dense_0"], "Dense_3": actor["Dense_1"]}},
        {"params": {**mlp, f"Dense_{len(mlp)}": critic["Dense_0"]}},
    )


def test_reference_sac_losses_equal_purerls():
    cfg = SACConfig(
        env="Pendulum-v1", num_envs=2, rollout_len=4, buffer_size=64, batch_size=8,
        learning_starts=4, hidden_sizes=(8, 8), total_timesteps=16,
    )  # fmt: skip
    env = envs.from_config(cfg)
    actor, critics = make_continuous_nets(env.spec, cfg.hidden_sizes, cfg.activation)
    nets = reference_sac.make_nets(cfg, env.spec.action_space)
    rng = np.random.default_rng(0)
    n = 8
    batch = offpolicy.ReplayItem(
        obs=jnp.asarray(rng.normal(size=(n, 3)), jnp.float32),
        action=jnp.asarray(rng.uniform(-2, 2, size=(n, 1)), jnp.float32),
        reward=jnp.asarray(rng.normal(size=n), jnp.float32),
        terminated=jnp.asarray([False, True] * (n // 2)),
        valid=jnp.ones(n, bool),
        next_obs=jnp.asarray(rng.normal(size=(n, 3)), jnp.float32),
    )
    ref_batch = reference_sac.Transition(
        batch.obs, batch.action, batch.reward, batch.terminated, batch.next_obs
    )
    alpha, gamma = jnp.float32(0.7), 0.99

    @jax.jit  # one compile instead of one per eager operation
    def both(key):
        actor_key, critic_key = jax.random.split(jax.random.key(0))
        params = sac.SACParams(
            actor.init(actor_key, batch.obs),
            critics.init(critic_key, batch.obs, batch.action),
            jnp.float32(0.0),
        )
        # Targets a little apart from the critics, so the target-network path is exercised.
        target = jax.tree.map(lambda p: p * 1.1, params.critic)
        ref_actor, ref_critic = to_reference(params.actor, params.critic)
        _, ref_target = to_reference(params.actor, target)
        ref_params = reference_sac.Params(ref_actor, ref_critic, jnp.log(alpha))

        next_action, next_log_prob = actor.apply(params.actor, batch.next_obs).sample_and_log_prob(
            key
        )
        next_q = critics.apply(target, batch.next_obs, next_action)
        targets = clipped_double_q_targets(
            batch.reward, batch.terminated, next_q, gamma, next_log_prob, alpha
        )
        critic_loss, _ = continuous.critic_loss(params.critic, batch, targets, critics)
        loss, log_prob = sac.actor_loss(
            params.actor, params.critic, batch, alpha, key, actor, critics
        )
        hparams = sac.SACHparams.from_config(cfg)._replace(alpha=alpha)
        alpha_loss = sac.temperature_loss(jnp.float32(0.0), log_prob, -1.0, hparams, batch.valid)
        ours = (targets, critic_loss, loss, log_prob, alpha_loss)

        ref_targets = reference_sac.soft_targets(ref_params, ref_target, nets, ref_batch, alpha,
                                                 gamma, key)  # fmt: skip
        ref_loss, ref_log_prob = reference_sac.actor_loss(ref_actor, ref_critic, nets, batch.obs,
                                                          alpha, key)  # fmt: skip
        theirs = (
            ref_targets,
            reference_sac.critic_loss(ref_critic, nets, ref_batch, targets),
            ref_loss,
            ref_log_prob,
            reference_sac.alpha_loss(jnp.log(alpha), log_prob, -1.0),
        )
        return ours, theirs

    ours, theirs = both(jax.random.key(3))
    for name, a, b in zip(["targets", "critic", "actor", "log_prob", "alpha"], ours, theirs,
                          strict=True):  # fmt: skip
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5, err_msg=name)


def test_the_xminigrid_peer_gives_both_sides_its_ppo_settings(tmp_path):
    args = throughput.BenchArgs(
        env="xminigrid/MiniGrid-Empty-6x6", peers=("xminigrid",), num_envs=64, rollout_len=16,
        network="gru", rnn_size=32, seeds=(1,), xminigrid_baseline=tmp_path,
    )  # fmt: skip
    cfg = throughput.bench_config(args)
    for field, value in peers.XMINIGRID_PPO.items():
        assert getattr(cfg, field) == value, field
    assert (cfg.num_envs, cfg.rollout_len, cfg.rnn_size, cfg.hidden_sizes) == (64, 16, 32, (32,))
    with pytest.raises(ValueError, match="xminigrid/<Name>"):
        peers.xminigrid_ppo_config(dataclasses.replace(cfg, env="CartPole-v1"))
    with pytest.raises(FileNotFoundError, match="training/ folder"):
        peers.xminigrid_ppo_runner(cfg, tmp_path)
    with pytest.raises(SystemExit, match="--xminigrid-baseline"):
        throughput.main(dataclasses.replace(args, xminigrid_baseline=None))
