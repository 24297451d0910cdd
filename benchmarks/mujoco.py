"""MuJoCo PPO throughput: purerl beside raw EnvPool and a minimal reference PPO, in one process.

    python -m benchmarks.mujoco                         # HalfCheetah-v4, the preset's 1 env
    python -m benchmarks.mujoco --num-envs 1 8 --seeds 1 2   # a table block per configuration

At the PPO preset's configuration (CleanRL's ``ppo_continuous_action.py``: 2,048 steps per
update, 10 epochs x 32 minibatches, observation and reward normalisation), for each number of
environments and of seeds, rows timed as docs/measuring.md asks (compile on its own, a
warm-up call, then the median of ``--repeats`` calls, all rows alternating call by call):

- ``envpool host``: EnvPool stepped from Python with random actions (``pool.step``).
- ``envpool xla``: EnvPool's XLA step inside a jitted ``lax.scan`` with random actions drawn in
  JAX, float64 actions under a local 64-bit scope as purerl steps it: the ceiling.
- ``purerl rollout``: purerl's acting loop alone (policy, normalisers, EnvPool step per step).
- ``purerl update``: whole PPO updates (rollout, critic pass, GAE, epochs x minibatches of
  SGD), the compiled chunk ``purerl train`` runs, built through the algorithm registry.
- ``reference rollout`` / ``reference update``: the same for the minimal single-closure PPO of
  ``benchmarks/reference_continuous.py`` (its own pool), the bar to clear.

Several seeds share one pool of ``seeds x envs`` environments (the raw rows step a pool that
size too). Steps count environment steps of all seeds. ``vs xla`` is the median over calls of
(``envpool xla`` time / row time) for the same steps; the purerl-over-reference line is the
median of per-call ratios (reference time / purerl time), rollout and update alike. The time
split attributes an update to stepping the simulator (``envpool xla`` time), acting (rollout
minus that) and learning (update minus rollout: GAE and SGD, and for purerl the critic's pass
over the rollout, which the reference makes while acting). The split is of medians, so on a
noisy machine a share can come out slightly negative.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from benchmarks.reference_continuous import XlaPool, make_ppo_continuous_train, make_xla_pool
from benchmarks.timing import peak_rss_mib, timed
from purerl import algos
from purerl.algos.onpolicy import acting
from purerl.algos.ppo import sample, state_value
from purerl.core.memory import FeedForward
from purerl.core.nets import make_actor_critic
from purerl.core.program import compile_chunk, init_agents
from purerl.core.rollout import collect
from purerl.runtime import configure_jax


@dataclasses.dataclass(frozen=True)
class MujocoBenchArgs:
    env: str = "HalfCheetah-v4"
    """A MuJoCo id (its PPO preset is the configuration)."""
    num_envs: tuple[int, ...] = (1,)
    """Environments per seed to measure, one table block each (the preset's is 1)."""
    seeds: tuple[int, ...] = (1,)
    """Numbers of seeds to measure (vmapped, sharing one pool), one table block each."""
    updates: int = 2
    """PPO updates per timed call (rollout_len steps of every environment each)."""
    repeats: int = 3
    """Timed calls per row after the warm-up call."""
    rollout_len: int | None = None
    """Steps per environment per update (default: the preset's 2,048)."""
    num_epochs: int | None = None
    """Passes over each rollout (default: the preset's 10)."""
    num_minibatches: int | None = None
    """Minibatches per pass (default: the preset's 32)."""


def bench_config(args: MujocoBenchArgs, num_envs: int, num_seeds: int):
    """The PPO preset for ``args.env`` with the benchmark's overrides; one timed call's worth
    of updates as the budget (the learning rate anneals over it, as in a run of that length)."""
    cfg = algos.get("ppo").base_config(args.env)
    overrides = {"num_envs": num_envs, "num_seeds": num_seeds}
    for name in ("rollout_len", "num_epochs", "num_minibatches"):
        if getattr(args, name) is not None:
            overrides[name] = getattr(args, name)
    cfg = dataclasses.replace(cfg, **overrides)
    return dataclasses.replace(cfg, total_timesteps=args.updates * cfg.batch_size)


def raw_rows(pool: XlaPool, steps: int) -> tuple[dict, dict]:
    """``envpool host`` and ``envpool xla``: runners ``call -> seconds`` and compile seconds."""
    rng = np.random.default_rng(0)
    shape = (pool.num_envs, len(pool.action_low))

    def host(call: int) -> float:
        start = time.perf_counter()
        for _ in range(steps):
            pool.pool.step(rng.uniform(pool.action_low, pool.action_high, shape))
        return time.perf_counter() - start

    def scan(handle, key):
        def body(handle, key):
            action = jax.random.uniform(key, shape, minval=pool.action_low, maxval=pool.action_high)
            handle, _, reward, _ = pool.step(handle, action)
            return handle, reward.sum()

        return jax.lax.scan(body, handle, jax.random.split(key, steps))

    pool.pool.reset()
    handle = jnp.asarray(pool.handle)
    start = time.perf_counter()
    compiled = jax.jit(scan).lower(handle, jax.random.key(0)).compile()
    compile_s = time.perf_counter() - start

    def xla(call: int) -> float:
        return timed(compiled, handle, jax.random.key(call))

    return {"envpool host": host, "envpool xla": xla}, {"envpool xla": compile_s}


def purerl_rows(cfg, steps: int) -> tuple[dict, dict]:
    """``purerl rollout`` and ``purerl update`` through the registry and the training loop's
    compiled chunk, on fresh agents (a reset pool) every call."""
    env, algo = algos.get("ppo").make(cfg)
    seeds = range(cfg.num_seeds)
    network = make_actor_critic(
        env.spec, cfg.hidden_sizes, cfg.activation, cfg.precision, cfg.layer_norm
    )
    net = FeedForward(network, state_value)

    def rollout(state, key):
        # PPO's behaviour policy as its update runs it. The whole rollout is returned, so XLA
        # keeps all of the acting work.
        policy = acting(net, state.params, sample)
        return collect(env, env.default_params, policy, state.env_state, state.obs, key, steps, ())

    if cfg.num_seeds > 1:
        rollout = jax.vmap(rollout)

    def state_and_keys(call: int):
        state = init_agents(algo, [1000 * (call + 1) + i for i in seeds]).state
        if cfg.num_seeds == 1:
            state = jax.tree.map(lambda x: x[0], state)
        return state, seed_keys(cfg.num_seeds, call)

    start = time.perf_counter()
    compiled_rollout = jax.jit(rollout).lower(*state_and_keys(0)).compile()
    rollout_s = time.perf_counter() - start
    start = time.perf_counter()
    chunk = compile_chunk(algo, init_agents(algo, seeds), cfg.num_updates)
    update_s = time.perf_counter() - start

    def run_rollout(call: int) -> float:
        return timed(compiled_rollout, *jax.block_until_ready(state_and_keys(call)))

    def run_update(call: int) -> float:
        fresh = jax.block_until_ready(init_agents(algo, [1000 * (call + 1) + i for i in seeds]))
        return timed(chunk, fresh)

    runners = {"purerl rollout": run_rollout, "purerl update": run_update}
    return runners, {"purerl rollout": rollout_s, "purerl update": update_s}


def reference_rows(cfg) -> tuple[dict, dict]:
    """``reference rollout`` and ``reference update``: whole programs of ``cfg.num_updates``
    updates; each also resets its pool and initialises its networks (milliseconds)."""
    runners, compiles = {}, {}
    for name, learn in (("reference rollout", False), ("reference update", True)):
        train = make_ppo_continuous_train(cfg, cfg.num_seeds, learn=learn)
        start = time.perf_counter()
        compiled = jax.jit(train).lower(seed_keys(cfg.num_seeds, 0)).compile()
        compiles[name] = time.perf_counter() - start
        runners[name] = keyed_runner(compiled, cfg.num_seeds)
    return runners, compiles


def seed_keys(num_seeds: int, call: int) -> jax.Array:
    """Fresh keys for a call: ``[S]``, or one key for one seed (run unmapped)."""
    keys = jax.random.split(jax.random.key(call), num_seeds)
    return keys if num_seeds > 1 else keys[0]


def keyed_runner(compiled, num_seeds: int):
    def run(call: int) -> float:
        return timed(compiled, seed_keys(num_seeds, call))

    return run


def measure_block(args: MujocoBenchArgs, num_envs: int, num_seeds: int):
    """Times every row of one configuration; per-call seconds and compile seconds by row."""
    cfg = bench_config(args, num_envs, num_seeds)
    steps = args.updates * cfg.rollout_len
    runners, compiles = raw_rows(make_xla_pool(cfg.env, num_seeds * num_envs, cfg.seed), steps)
    for rows in (purerl_rows(cfg, steps), reference_rows(cfg)):
        runners.update(rows[0])
        compiles.update(rows[1])
    times: dict[str, list[float]] = {name: [] for name in runners}
    for call in range(args.repeats + 1):
        for name, run in runners.items():
            seconds = run(call + 1)
            if call:
                times[name].append(seconds)
    return cfg, times, compiles


def ratio(times: dict[str, list[float]], over: str, under: str) -> float:
    """Median over calls of ``times[over] / times[under]``: the speed of ``under`` relative to
    ``over`` (both ran the same number of steps in each call)."""
    return statistics.median(a / b for a, b in zip(times[over], times[under], strict=True))


def report_block(cfg, times, compiles, steps_per_call: int) -> None:
    median = {name: statistics.median(values) for name, values in times.items()}
    for name, seconds in median.items():
        compile_text = f"{compiles[name]:.1f}" if name in compiles else "-"
        sps = steps_per_call / seconds
        print(
            f"| {cfg.num_envs} | {cfg.num_seeds} | {name} | {compile_text} | {sps:,.0f} | "
            f"{ratio(times, 'envpool xla', name):.3f} |"
        )


def split_line(times, who: str) -> str:
    update, rollout = (statistics.median(times[f"{who} {row}"]) for row in ("update", "rollout"))
    env_share = statistics.median(times["envpool xla"]) / update
    act_share = rollout / update - env_share
    return f"simulator {env_share:.0%}, acting {act_share:.0%}, learning {1 - rollout / update:.0%}"


def main(args: MujocoBenchArgs) -> None:
    first = bench_config(args, args.num_envs[0], args.seeds[0])
    print(
        f"# PPO {args.env}: {first.rollout_len} steps per env per update, {first.num_epochs} "
        f"epochs x {first.num_minibatches} minibatches, {cfg_net(first)}, normalize_obs "
        f"{first.normalize_obs}, normalize_reward {first.normalize_reward}\n"
        f"# {platform.machine()}, {os.cpu_count()} cores, {jax.device_count()} "
        f"{jax.default_backend()} device(s), jax {jax.__version__}; {args.updates} updates per "
        f"call, median of {args.repeats} calls after a warm-up; load average "
        f"{os.getloadavg()[0]:.1f} at start\n"
    )
    print("| envs | seeds | row | compile s | steps/s | vs xla |\n|---:|---:|---|---:|---:|---:|")
    notes = []
    for num_envs in args.num_envs:
        for num_seeds in args.seeds:
            cfg, times, compiles = measure_block(args, num_envs, num_seeds)
            report_block(cfg, times, compiles, args.updates * cfg.batch_size * num_seeds)
            update = ratio(times, "reference update", "purerl update")
            rollout = ratio(times, "reference rollout", "purerl rollout")
            notes.append(
                f"{num_envs} env(s) x {num_seeds} seed(s): purerl over reference: update "
                f"{update:.2f}x, rollout {rollout:.2f}x; update time split, purerl: "
                f"{split_line(times, 'purerl')}; reference: {split_line(times, 'reference')}"
            )
    print("", *notes, sep="\n")
    load, peak = os.getloadavg()[0], peak_rss_mib()
    print(f"load average {load:.1f} at end; peak resident memory {peak:,.0f} MiB")


def cfg_net(cfg) -> str:
    return f"{'x'.join(map(str, cfg.hidden_sizes))} {cfg.activation} actor and critic"


if __name__ == "__main__":
    configure_jax()
    main(tyro.cli(MujocoBenchArgs, description=__doc__))
