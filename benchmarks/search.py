"""Sweep benchmark: K configurations as one vmapped program against K single runs.

    python -m benchmarks.search --num-configs 16 --total-timesteps 500000 --repeats 3

PPO on the CartPole-v1 preset; configuration k has learning rate k of ``--num-configs`` values
log-spaced over [1e-4, 1e-2], one seed each. Following docs/measuring.md: both programs
are compiled ahead of time (timed on their own), then after a warm-up call of each, every one
of ``--repeats`` pairs runs the K configurations one after another as single runs and then the
sweep, on fresh seeds; the table quotes medians and the median over pairs of sweep time /
sequential time. The sequential baseline compiles once: the learning rate is traced, so K
single runs in one process share one program (K separate processes would compile K times).
"""

from __future__ import annotations

import dataclasses
import platform
import statistics
import sys
import time

import jax
import numpy as np
import tyro

from benchmarks.timing import peak_rss_mib
from purerl import envs
from purerl.algos.ppo import PPOHparams, make_ppo
from purerl.core.program import compile_chunk, init_agents
from purerl.presets.ppo import PRESETS as PPO_PRESETS
from purerl.runtime import configure_jax
from purerl.search.sweep import flag_nonfinite_losses, stack_hparams


@dataclasses.dataclass(frozen=True)
class BenchArgs:
    num_configs: int = 16
    """Configurations in the sweep (learning rates log-spaced over [1e-4, 1e-2])."""
    total_timesteps: int = 500_000
    """Environment steps per configuration per call."""
    repeats: int = 3
    """Timed calls of each program after the warm-up call."""
    env: str = "CartPole-v1"
    """Environment whose PPO preset is the base configuration."""


class Program:
    """One AOT-compiled whole-budget program with one agent per configuration of ``configs``;
    later calls may pass other configurations of the same number (other hyperparameters)."""

    def __init__(self, algo, configs):
        self.algo = algo
        self.num_agents = len(configs)
        start = time.perf_counter()
        self.compiled = compile_chunk(algo, self.fresh(0, configs), configs[0].num_updates)
        self.compile_s = time.perf_counter() - start

    def fresh(self, call: int, configs):
        seeds = np.arange(self.num_agents, dtype=np.int32) + 1000 * call
        # Fresh agents every call (the compiled chunk donates its input buffers) from the one
        # compiled init, which takes each agent's hyperparameters as data.
        hparams = stack_hparams(PPOHparams, configs)
        return jax.block_until_ready(init_agents(self.algo, seeds, hparams=hparams))

    def run(self, call: int, configs) -> float:
        """Seconds for one call on fresh seeds with ``configs``' hyperparameters."""
        agents = self.fresh(call + 1, configs)
        start = time.perf_counter()
        jax.block_until_ready(self.compiled(agents))
        return time.perf_counter() - start


def main(args: BenchArgs) -> None:
    base = dataclasses.replace(
        PPO_PRESETS[args.env], total_timesteps=args.total_timesteps, num_seeds=1
    )
    rates = np.geomspace(1e-4, 1e-2, args.num_configs)
    configs = [dataclasses.replace(base, lr=float(lr)) for lr in rates]
    env = envs.from_config(base)
    single = Program(make_ppo(base, env), configs[:1])
    sweep = Program(flag_nonfinite_losses(make_ppo(base, env)), configs)
    single.run(0, configs[:1])  # warm-up calls
    sweep.run(0, configs)
    singles, sequential, swept = [], [], []
    # Each pair: the K configurations one after another, then the sweep, so both halves of a
    # pair span similar stretches of the shared machine's load.
    for call in range(1, args.repeats + 1):
        times = [single.run(call, [cfg]) for cfg in configs]
        singles += times
        sequential.append(sum(times))
        swept.append(sweep.run(call, configs))
    ratios = [s / q for q, s in zip(sequential, swept, strict=True)]
    print_table(
        args, base, (singles, sequential, swept), (single.compile_s, sweep.compile_s), ratios
    )


def print_table(args, base, times, compile_s, ratios) -> None:
    k, steps = args.num_configs, base.num_updates * base.env_steps_per_update
    t1, tq, tk = (statistics.median(t) for t in times)
    print(
        f"PPO {base.env} preset: {base.num_envs} envs x {base.rollout_len} steps, "
        f"{base.num_epochs} epochs x {base.num_minibatches} minibatches, "
        f"{steps:,} steps per configuration, median of {args.repeats} pairs"
    )
    print(f"jax {jax.__version__} ({jax.default_backend()}), {platform.processor() or 'cpu'}")
    print("| run | configs | compile s | wall s | steps/s (all configs) | cost vs K x single |")
    print("|---|---:|---:|---:|---:|---:|")
    print(f"| one configuration | 1 | {compile_s[0]:.1f} | {t1:.2f} | {steps / t1:,.0f} | - |")
    print(
        f"| {k} x one configuration, sequential (one compile) | {k} | {compile_s[0]:.1f} | "
        f"{tq:.2f} | {k * steps / tq:,.0f} | 1.00 |"
    )
    print(
        f"| sweep, one program | {k} | {compile_s[1]:.1f} | {tk:.2f} | {k * steps / tk:,.0f} | "
        f"{statistics.median(ratios):.2f} (pairs {min(ratios):.2f}-{max(ratios):.2f}) |"
    )
    with_compile = (compile_s[1] + tk) / (k * compile_s[0] + tq)
    print(f"sweep vs {k} separate processes (each compiling): {with_compile:.2f} of the cost")
    peak = peak_rss_mib()
    print(f"peak resident memory: {peak:.0f} MiB")


if __name__ == "__main__":
    configure_jax()
    main(tyro.cli(BenchArgs, args=sys.argv[1:], description=__doc__))
