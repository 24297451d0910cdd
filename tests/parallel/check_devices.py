"""Run in a subprocess with 4 simulated CPU devices; prints one JSON line of findings.

JAX_NUM_CPU_DEVICES=4 python -m tests.parallel.check_devices RUN_DIR
"""

import dataclasses
import functools
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import PartitionSpec as P

from purerl import algos, envs
from purerl.algos.onpolicy import network_loss
from purerl.algos.ppo import SPEC as PPO
from purerl.algos.ppo import PPOBatch, PPOHparams, make_ppo, ppo_loss, state_value
from purerl.core.loop import train
from purerl.core.memory import FeedForward
from purerl.core.nets import make_actor_critic
from purerl.core.ops.sgd import minibatch_epochs
from purerl.core.parallel import DEVICE_AXIS, make_placement, select_devices
from purerl.runtime import configure_jax
from purerl.search.sweep import batch_placement, run_batch
from tests.helpers import TINY_ARGS, run_cli

# PPO's smoke config over 8 seeds in one chunk.
TINY = dataclasses.replace(PPO.smoke, num_seeds=8)


def max_difference(a, b) -> float:
    pairs = zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    return max(float(np.abs(np.asarray(x) - np.asarray(y)).max()) for x, y in pairs)


def seeds_mode_matches_single_device() -> dict:
    env = envs.make(TINY.env, TINY.num_envs)
    single = train(make_ppo(TINY, env), TINY, updates_per_chunk=TINY.num_updates)
    placement = make_placement(select_devices("cpu", 4), "seeds", TINY.num_seeds, TINY.num_envs)
    sharded = train(
        make_ppo(TINY, env), TINY, updates_per_chunk=TINY.num_updates, placement=placement
    )
    return {
        "seeds_param_diff": max_difference(single.agents.state.params, sharded.agents.state.params),
        "seeds_returns": [single.final_returns.tolist(), sharded.final_returns.tolist()],
    }


def sweep_splits_agents_over_devices() -> dict:
    """A DQN sweep's batch (two learning rates x 2 seeds), one agent per device, beside the same
    batch on one device. DQN's seeds share their update count and buffer position
    (``Algo.lockstep``) and branch on them with ``lax.cond``, which must type-check under
    ``shard_map`` as under ``vmap``."""
    dqn = algos.get("dqn")
    configs = [dataclasses.replace(dqn.smoke, num_seeds=2, lr=lr) for lr in (1e-3, 1e-2)]
    one = run_batch(dqn, configs).train.agents.state.params
    split = run_batch(dqn, configs, placement=batch_placement(4, 4, configs[0]))
    params = split.train.agents.state.params
    return {
        "sweep_param_diff": max_difference(one, params),
        "sweep_rates_differ": max_difference(
            *[jax.tree.map(lambda x, k=k: x[2 * k], params) for k in (0, 1)]
        ),
    }


def random_batch(spec, n: int) -> PPOBatch:
    keys = jax.random.split(jax.random.key(7), 6)
    return PPOBatch(
        obs=jax.random.normal(keys[0], (n, *spec.obs_shape)),
        action=jax.random.randint(keys[1], (n,), 0, 2),
        log_prob=jnp.log(jnp.full((n,), 0.5)) + 0.1 * jax.random.normal(keys[2], (n,)),
        value=jax.random.normal(keys[3], (n,)),
        advantage=jax.random.normal(keys[4], (n,)) * 2 + 1,
        target=jax.random.normal(keys[5], (n,)),
        valid=jnp.ones((n,), bool),
    )


def data_mode_gradient_equals_full_batch() -> dict:
    # One epoch of one minibatch: 4 devices each take a quarter of the same 64 samples and
    # average gradients; one device takes all 64. Same data, so the same parameters.
    cfg = dataclasses.replace(TINY, num_minibatches=1, num_epochs=1)
    env = envs.make(cfg.env, 1)
    network = make_actor_critic(env.spec, cfg.hidden_sizes, cfg.activation)
    batch = random_batch(env.spec, 64)
    params = network.init(jax.random.key(0), batch.obs[:1])
    hparams = PPOHparams.from_config(cfg)
    # Plain SGD: its step is proportional to the gradient, so a parameter difference measures
    # a gradient difference (Adam's first step is about lr * sign(g), which magnifies float
    # noise in near-zero gradient entries into whole steps).
    tx = optax.sgd(0.1)

    def step(params, batch, axis_name):
        loss = network_loss(
            FeedForward(network, state_value),
            functools.partial(ppo_loss, normalize_adv=True, clip_value=True, axis_name=axis_name),
            hparams,
        )
        return minibatch_epochs(
            jax.random.key(1), params, tx.init(params), batch, loss, tx, 1, 1, axis_name
        )[0]

    full = jax.jit(lambda b: step(params, b, None))(batch)
    # As in training, each device holds its own replica of the parameters (stacked [D, ...]):
    # the algorithm then averages gradients itself with pmean.
    replicated = jax.tree.map(lambda x: jnp.broadcast_to(x, (4, *x.shape)), params)

    def on_device(params, batch):
        out = step(jax.tree.map(lambda x: x[0], params), batch, DEVICE_AXIS)
        return jax.tree.map(lambda x: x[None], out)

    mesh = make_placement(select_devices("cpu", 4), "data", 1, 4).mesh
    sharded = jax.jit(
        jax.shard_map(on_device, mesh=mesh, in_specs=P(DEVICE_AXIS), out_specs=P(DEVICE_AXIS))
    )(replicated, batch)
    replicas = [jax.tree.map(lambda x, d=d: x[d], sharded) for d in range(4)]
    return {
        "data_grad_diff": max_difference(full, replicas[0]),
        "data_replicas_equal": all(max_difference(replicas[0], r) == 0.0 for r in replicas),
        "data_moved": max_difference(full, params),
    }


def data_mode_trains() -> dict:
    # The data-parallel run of the command line below (2 seeds, 4 devices, one env each), so
    # that run loads this program from the compilation cache.
    cfg = dataclasses.replace(TINY, num_seeds=2)
    placement = make_placement(select_devices("cpu", 4), "data", 2, 4)
    algo = PPO.make(cfg, num_envs=1, axis_name=DEVICE_AXIS).algo
    result = train(algo, cfg, placement=placement)
    leaf = jax.tree.leaves(result.agents.state.params)[0]
    return {"data_param_shape": list(leaf.shape), "data_updates": result.timing.updates_done}


REFUSALS = {
    "seeds": ["--num-devices", "4", "--num-seeds", "3"],
    "envs": ["--parallel", "data", "--num-envs", "6"],
    "gpu": ["--device", "gpu"],
}


def command_line(run_dir: str) -> dict:
    """The command line on 4 devices: refusals and a data-parallel run. (The doctor's checks
    over several devices run in benchmarks/tests/test_device.py, on one CPU device a core.)"""
    found = {}
    for name, args in REFUSALS.items():
        result = run_cli("train", "ppo", *TINY_ARGS, *args, "--run-dir", f"{run_dir}/{name}")
        found[f"refused_{name}"] = [result.code, result.stderr]
    result = run_cli(
        "train", "ppo", *TINY_ARGS, "--parallel", "data", "--num-devices", "4", "--num-seeds",
        "2", "--run-dir", f"{run_dir}/data",
    )  # fmt: skip
    found["data_run"] = [result.code, result.stdout, result.stderr]
    return found


if __name__ == "__main__":
    configure_jax()
    assert jax.device_count() == 4, jax.devices()
    findings = {
        **seeds_mode_matches_single_device(),
        **sweep_splits_agents_over_devices(),
        **data_mode_gradient_equals_full_batch(),
        **data_mode_trains(),
        **command_line(sys.argv[1]),
    }
    print(json.dumps(findings))
