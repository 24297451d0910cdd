"""PPO on a Brax environment: purerl beside Brax's own trainer, in one process, alternating.

    python -m benchmarks.brax_ppo                                   # the CPU preset's shape
    python -m benchmarks.brax_ppo --num-envs 2048 --updates 20      # an accelerator-sized run

Both train PPO on the same Brax environment (``--env``, Brax's ``generalized`` backend, 1000-step
episodes) at the same configuration: ``num_envs`` environments, ``rollout_len``-step unrolls
(Brax: ``unroll_length = rollout_len`` and ``batch_size = num_envs / num_minibatches``, so one
update collects one unroll of every environment in both), ``num_minibatches`` minibatches,
``num_epochs`` passes (Brax: ``num_updates_per_batch``), MLPs of ``hidden_sizes`` for policy and
value, observation normalisation, the same learning rate, discount, GAE lambda, clip and entropy
cost. ``brax.training.agents.ppo.train`` runs its budget as ``num_evals - 1`` compiled epochs (a
``lax.scan`` of training steps each) and reports each epoch's steps/s; it is asked for
``--repeats + 1`` epochs of ``--updates`` updates with evaluation off, and after each epoch (in
Brax's ``progress_fn``) purerl runs one compiled chunk of ``--updates`` updates on fresh seeds,
so the two alternate A B A B on the shared machine (docs/measuring.md). purerl's AOT compile
and Brax's ``--warmup`` epochs (less as many steady epochs; it includes building Brax's training
state) give the compile times; the table quotes medians of the calls after the warm-up ones and
the median of the per-pair ratios.

Brax 0.14.2's trainer calls ``jax.device_put_replicated``, which JAX 0.10 removed (google/brax
issue 671); ``restore_device_put_replicated`` puts back the in-line definition JAX's pmap
migration guide gives (stack one copy per device, shard the stack over them), for this process
only. Both restore each environment's first state when an episode ends (purerl's default
``autoreset="first"``). The known difference that remains: Brax's policy is a tanh-squashed
Gaussian with a state-dependent scale, purerl's a clipped Gaussian with a learned
state-independent scale.
"""

from __future__ import annotations

import dataclasses
import functools
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from benchmarks.timing import peak_rss_mib
from purerl import algos
from purerl.algos.ppo import PPOConfig
from purerl.core.program import compile_chunk, init_agents
from purerl.runtime import configure_jax


@dataclasses.dataclass(frozen=True)
class BenchArgs:
    env: str = "inverted_double_pendulum"
    """Brax environment name (purerl id brax/<name>)."""
    num_envs: int = 128
    rollout_len: int = 32
    """Steps per environment per update (Brax's unroll_length)."""
    num_minibatches: int = 8
    num_epochs: int = 4
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Hidden widths of the policy and of the value MLP."""
    updates: int = 20
    """Updates per timed call (one Brax epoch, one purerl chunk)."""
    repeats: int = 3
    """Timed calls of each after the warm-up ones."""
    warmup: int = 2
    """Untimed calls first: Brax's second epoch compiles again (its first gets the training
    state as placed on the device by ``device_put_replicated``, later ones as ``pmap`` left it)."""


def ppo_config(args: BenchArgs) -> PPOConfig:
    """purerl's side: the CPU preset's learning settings in the benchmark's shape."""
    return PPOConfig(
        env=f"brax/{args.env}",
        num_envs=args.num_envs,
        rollout_len=args.rollout_len,
        num_minibatches=args.num_minibatches,
        num_epochs=args.num_epochs,
        hidden_sizes=args.hidden_sizes,
        activation="tanh",
        lr=1e-3,
        anneal_lr=False,  # Brax's default schedule is constant
        gamma=0.99,
        gae_lambda=0.95,
        clip_eps=0.2,
        ent_coef=0.0,
        normalize_obs=True,
        total_timesteps=args.updates * args.num_envs * args.rollout_len,
    )


def purerl_chunk(cfg: PPOConfig, num_updates: int):
    """``(run(call) -> seconds, compile seconds)`` for one chunk of ``num_updates`` updates."""
    algo = algos.get("ppo").make(cfg).algo
    start = time.perf_counter()
    compiled = compile_chunk(algo, init_agents(algo, [0]), num_updates)
    compile_s = time.perf_counter() - start

    def run(call: int) -> float:
        fresh = jax.block_until_ready(init_agents(algo, [1000 + call]))
        start = time.perf_counter()
        jax.block_until_ready(compiled(fresh))
        return time.perf_counter() - start

    return run, compile_s


def restore_device_put_replicated() -> None:
    """Defines ``jax.device_put_replicated`` again where JAX no longer has it (Brax calls it)."""
    try:
        jax.device_put_replicated  # noqa: B018
        return
    except AttributeError:
        pass

    def device_put_replicated(x, devices):
        mesh = jax.sharding.Mesh(np.array(devices), ("replica",))
        sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("replica"))
        return jax.tree.map(lambda a: jax.device_put(jnp.stack([a] * len(devices)), sharding), x)

    jax.device_put_replicated = device_put_replicated


def brax_train(args: BenchArgs, cfg: PPOConfig, progress_fn) -> None:
    """Brax's PPO at ``cfg``'s configuration, ``warmup + repeats`` epochs of ``updates``
    updates each."""
    from brax import envs as brax_envs
    from brax.training.agents.ppo import networks as ppo_networks
    from brax.training.agents.ppo import train as ppo
    from flax import linen

    if args.num_envs % args.num_minibatches:
        raise SystemExit("error: --num-minibatches must divide --num-envs")
    network = functools.partial(
        ppo_networks.make_ppo_networks,
        policy_hidden_layer_sizes=args.hidden_sizes,
        value_hidden_layer_sizes=args.hidden_sizes,
        activation=linen.tanh,
    )
    epochs = args.warmup + args.repeats
    restore_device_put_replicated()
    ppo.train(
        brax_envs.get_environment(args.env, backend="generalized"),
        num_timesteps=epochs * cfg.total_timesteps,
        num_evals=epochs + 1,  # one epoch per evaluation point after the first
        run_evals=False,
        num_envs=args.num_envs,
        episode_length=1000,
        unroll_length=args.rollout_len,
        batch_size=args.num_envs // args.num_minibatches,
        num_minibatches=args.num_minibatches,
        num_updates_per_batch=args.num_epochs,
        learning_rate=cfg.lr,
        discounting=cfg.gamma,
        gae_lambda=cfg.gae_lambda,
        clipping_epsilon=cfg.clip_eps,
        entropy_cost=cfg.ent_coef,
        normalize_observations=True,
        network_factory=network,
        progress_fn=progress_fn,
        seed=0,
    )


def main(args: BenchArgs) -> None:
    cfg = ppo_config(args)
    steps = cfg.total_timesteps
    run_purerl, purerl_compile = purerl_chunk(cfg, args.updates)
    purerl_times: list[float] = []
    brax_sps: list[float] = []
    brax_warm_s: list[float] = []
    start = time.perf_counter()

    def progress_fn(step: int, metrics: dict) -> None:
        brax_sps.append(float(metrics["training/sps"]))
        if len(brax_sps) == args.warmup:  # Brax's time so far, without purerl's calls
            brax_warm_s.append(time.perf_counter() - start - sum(purerl_times))
        purerl_times.append(run_purerl(len(purerl_times)))

    brax_train(args, cfg, progress_fn)
    purerl_sps = [steps / t for t in purerl_times[args.warmup :]]
    brax_steady = brax_sps[args.warmup :]
    # Brax's compile: its warm-up epochs (and building its state) beyond steady epochs.
    brax_compile = brax_warm_s[0] - args.warmup * steps / statistics.median(brax_steady)
    ratio = statistics.median(p / b for p, b in zip(purerl_sps, brax_steady, strict=True))
    print(
        f"# PPO brax/{args.env} (generalized), {args.num_envs} envs x {args.rollout_len} steps, "
        f"{args.num_minibatches} minibatches x {args.num_epochs} epochs, MLP {args.hidden_sizes}; "
        f"{args.updates} updates ({steps:,} steps) per call\n"
        f"# {platform.processor() or platform.machine()}, {jax.device_count()} "
        f"{jax.default_backend()} device(s), jax {jax.__version__}; median of {args.repeats} "
        f"calls after {args.warmup} warm-up calls, alternating\n"
    )
    print("| impl | compile s | steps/s | purerl / Brax |\n|---|---:|---:|---:|")
    print(
        f"| purerl | {purerl_compile:.1f} | {statistics.median(purerl_sps):,.0f} | {ratio:.2f}x |"
    )
    print(f"| brax.training ppo | {brax_compile:.1f} | {statistics.median(brax_steady):,.0f} | - |")
    every = ", ".join(f"{sps:,.0f}" for sps in brax_sps)
    print(f"\nBrax's steps/s per epoch, warm-up included: {every}")
    print(f"peak resident memory: {peak_rss_mib():,.0f} MiB")


if __name__ == "__main__":
    configure_jax()
    main(tyro.cli(BenchArgs, description=__doc__))
