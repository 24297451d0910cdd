"""Throughput benchmark: compile time and steady-state steps/s, printed as a table.

    python experiments/bench.py --env CartPole-v1 --num-envs 4 --seeds 1 8 --peer
    python experiments/bench.py --algo dqn --env CartPole-v1 --seeds 1 8 --peer

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
import sys
import time

import jax
import tyro

from purerl.runtime import configure_jax

# Before importing the rest: importing the environments (gymnax) creates JAX's CPU client, and
# async dispatch is fixed when the client is created.
configure_jax()

from purerl import envs  # noqa: E402
from purerl.algos.dqn import make_dqn  # noqa: E402
from purerl.algos.ppo import make_ppo  # noqa: E402
from purerl.presets import PRESETS  # noqa: E402
from purerl.train import compile_chunk, init_agents  # noqa: E402

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
import peers  # noqa: E402
from timing import Runner, measure, peak_rss_mib  # noqa: E402


@dataclasses.dataclass(frozen=True)
class BenchArgs:
    algo: str = "ppo"
    """Algorithm: ppo or dqn."""
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


BUILDERS = {"ppo": make_ppo, "dqn": make_dqn}
PEERS = {"ppo": peers.make_rejax_ppo, "dqn": peers.make_rejax_dqn}

"""``run(call_index) -> seconds`` for one full call on fresh seeds."""


def purerl_runner(algo_name: str, cfg, num_seeds: int) -> tuple[Runner, float]:
    env = envs.make(cfg.env, cfg.num_envs, normalize_obs=cfg.normalize_obs)
    algo = BUILDERS[algo_name](cfg, env)
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
    if args.algo not in BUILDERS:
        raise SystemExit(f"error: --algo must be one of {sorted(BUILDERS)}, got {args.algo!r}")
    presets = PRESETS[args.algo]
    base = presets.get(args.env) or type(next(iter(presets.values())))(env=args.env)
    overrides = {"env": args.env, "total_timesteps": args.total_timesteps, "num_seeds": 1}
    if args.num_envs is not None:
        overrides["num_envs"] = args.num_envs
    if args.rollout_len is not None:
        overrides["rollout_len"] = args.rollout_len
    if args.algo == "dqn" and args.peer:
        overrides["hidden_sizes"] = peers.REJAX_DQN_HIDDEN
    return dataclasses.replace(base, **overrides)


def describe(algo_name: str, cfg) -> str:
    if algo_name == "ppo":
        return (
            f"PPO {cfg.env}: {cfg.num_envs} envs x {cfg.rollout_len} steps, "
            f"{cfg.num_epochs} epochs x {cfg.num_minibatches} minibatches"
        )
    return (
        f"DQN {cfg.env}: {cfg.num_envs} envs, one gradient step (batch {cfg.batch_size}) per "
        f"{cfg.env_steps_per_iteration} env steps, buffer {cfg.buffer_size}, "
        f"hidden {cfg.hidden_sizes}"
    )


def main(args: BenchArgs) -> None:
    cfg = bench_config(args)
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
    main(tyro.cli(BenchArgs, description=__doc__))
