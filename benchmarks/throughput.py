"""Throughput benchmark: compile time and steady-state steps/s, printed as a table.

    python -m benchmarks.throughput --env CartPole-v1 --num-envs 4 --seeds 1 8 --peer
    python -m benchmarks.throughput --algo dqn --env CartPole-v1 --seeds 1 8 --peer

Each configuration trains its whole budget as one compiled program (every seed vmapped).
Following ../shared/MEASURING.md: compile is timed on its own (AOT), then the first call
(warm-up) and ``--repeats`` further calls run on fresh seeds; the table quotes their median.
With ``--peer`` the public rejax PPO or DQN runs the same hyperparameters in the same process,
alternating call by call with purerl, and the table adds the median of the per-pair ratios.
Steps count environment steps of all seeds together.
"""

from __future__ import annotations

import dataclasses
import platform
import statistics
import time

import jax
import tyro

from benchmarks import peers
from benchmarks.timing import Runner, measure, peak_rss_mib
from purerl import algos, envs
from purerl.loop import compile_chunk, init_agents
from purerl.runtime import configure_jax


@dataclasses.dataclass(frozen=True)
class BenchArgs:
    algo: str = "ppo"
    """A registered algorithm (purerl train --help lists them)."""
    env: str = "CartPole-v1"
    """Environment id; the algorithm's preset for it (or the generic defaults) is the base."""
    num_envs: int | None = None
    """Parallel environments per agent (default: the preset's)."""
    rollout_len: int | None = None
    """Steps per environment per update (default: the preset's)."""
    seeds: tuple[int, ...] = (1, 8)
    """Numbers of vmapped seeds to measure, one row each."""
    total_timesteps: int = 500_000
    """Environment steps per agent per timed call."""
    repeats: int = 3
    """Timed calls after the warm-up call."""
    peer: bool = False
    """Also run rejax's PPO (pip install rejax) alternately in the same process."""


PEERS = {"ppo": peers.make_rejax_ppo, "dqn": peers.make_rejax_dqn}

"""``run(call_index) -> seconds`` for one full call on fresh seeds."""


def purerl_runner(algo_name: str, cfg, num_seeds: int) -> tuple[Runner, float]:
    algo = algos.get(algo_name).build(cfg, envs.from_config(cfg))
    agents = init_agents(algo, range(num_seeds))
    start = time.perf_counter()
    compiled = compile_chunk(algo, agents, cfg.num_updates)
    compile_s = time.perf_counter() - start

    def run(call: int) -> float:
        fresh = jax.block_until_ready(
            init_agents(algo, [1000 * (call + 1) + i for i in range(num_seeds)])
        )
        start = time.perf_counter()
        jax.block_until_ready(compiled(fresh))
        return time.perf_counter() - start

    return run, compile_s


def rejax_runner(algo_name: str, cfg, num_seeds: int) -> tuple[Runner, float]:
    # Like purerl, a single seed runs without vmap (a batch of one is slower on CPU).
    train = PEERS[algo_name](cfg)
    if num_seeds > 1:
        train = jax.vmap(train)
    keys = jax.random.split(jax.random.key(0), num_seeds)
    if num_seeds == 1:
        keys = keys[0]
    start = time.perf_counter()
    compiled = jax.jit(train).lower(keys).compile()
    compile_s = time.perf_counter() - start

    def run(call: int) -> float:
        fresh = jax.random.split(jax.random.key(call + 1), num_seeds)
        fresh = fresh if num_seeds > 1 else fresh[0]
        start = time.perf_counter()
        jax.block_until_ready(compiled(fresh))
        return time.perf_counter() - start

    return run, compile_s


def bench_config(args: BenchArgs):
    """The preset for ``args.env`` with the benchmark's overrides."""
    base = algos.get(args.algo).base_config(args.env)
    overrides = {"env": args.env, "total_timesteps": args.total_timesteps, "num_seeds": 1}
    if args.num_envs is not None:
        overrides["num_envs"] = args.num_envs
    if args.rollout_len is not None:
        overrides["rollout_len"] = args.rollout_len
    if args.algo == "dqn" and args.peer:
        overrides["hidden_sizes"] = peers.REJAX_DQN_HIDDEN
    return dataclasses.replace(base, **overrides)


def describe(algo_name: str, cfg) -> str:
    """The configuration in one line: the fields that differ from the algorithm's defaults."""
    defaults = type(cfg)()
    changed = [
        f"{f.name}={getattr(cfg, f.name)}"
        for f in dataclasses.fields(cfg)
        if getattr(cfg, f.name) != getattr(defaults, f.name) and f.name != "total_timesteps"
    ]
    return f"{algo_name.upper()} {cfg.env}: {', '.join(changed) or 'defaults'}"


def main(args: BenchArgs) -> None:
    cfg = bench_config(args)
    if args.peer and args.algo not in PEERS:
        raise SystemExit(f"error: no rejax peer for {args.algo}; peers: {', '.join(PEERS)}")
    if args.peer and not peers.rejax_available():
        raise SystemExit("error: --peer needs rejax (pip install rejax)")
    print(
        f"# {describe(args.algo, cfg)}, {cfg.num_updates} updates per call\n"
        f"# {platform.processor() or platform.machine()}, {jax.device_count()} "
        f"{jax.default_backend()} device(s), jax {jax.__version__}; "
        f"median of {args.repeats} calls after a warm-up\n"
    )
    header = (
        "| impl | seeds | compile s | steps/s | steps/s per seed | vs purerl 1 seed | vs peer |"
    )
    print(header)
    print("|---|---:|---:|---:|---:|---:|---:|")
    steps = cfg.num_updates * cfg.env_steps_per_update
    single_sps = None
    for num_seeds in args.seeds:
        runners, compiles = {}, {}
        runners["purerl"], compiles["purerl"] = purerl_runner(args.algo, cfg, num_seeds)
        if args.peer:
            runners["rejax"], compiles["rejax"] = rejax_runner(args.algo, cfg, num_seeds)
        times = measure(runners, args.repeats)
        ours = steps * num_seeds / statistics.median(times["purerl"])
        single_sps = single_sps or (ours if num_seeds == 1 else None)
        for name in runners:
            sps = steps * num_seeds / statistics.median(times[name])
            vs_single = f"{sps / single_sps:.2f}x" if single_sps and name == "purerl" else "-"
            vs_peer = "-"
            if args.peer and name == "purerl":
                ratios = [b / a for a, b in zip(times["purerl"], times["rejax"], strict=True)]
                vs_peer = f"{statistics.median(ratios):.2f}x"
            print(
                f"| {name} | {num_seeds} | {compiles[name]:.1f} | {sps:,.0f} | "
                f"{sps / num_seeds:,.0f} | {vs_single} | {vs_peer} |",
                flush=True,
            )
    print(f"\npeak resident memory: {peak_rss_mib():,.0f} MiB")


if __name__ == "__main__":
    configure_jax()
    main(tyro.cli(BenchArgs, description=__doc__))
