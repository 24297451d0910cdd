"""The quick start's costs besides training: checkpoints, compiling, and the persistent cache.

    python -m benchmarks.quickstart --pairs 3

Three tables, for ``purerl train ppo`` on its default configuration (CartPole-v1, 5e5 steps):

- checkpoint cadence: runs with no checkpoints, the default cadence (every 10 minutes, and at
  the end) and a checkpoint after every chunk (the cadence before wall-clock checkpoints),
  alternating in one process (A B C A B C ...; docs/measuring.md); steps/s over the time
  spent training *and* saving, so the cost of the saves shows, and each variant's ratio to the
  run without checkpoints (median of the per-round ratios);
- compile time: what a run's ``compile_time_s`` holds, piece by piece (building the agents,
  tracing and lowering the chunk, compiling it), beside the ahead-of-time compile of the whole
  budget as one program that ``benchmarks.throughput`` times;
- the persistent compilation cache: the same command run twice in fresh processes with an
  empty cache directory; the second run's compile time is what users see from then on.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import tyro

from purerl import algos
from purerl.core import program, schedule
from purerl.options import options_for
from purerl.run import rundir, session
from purerl.run.setup import TrainRequest
from purerl.runtime import configure_jax


@dataclasses.dataclass(frozen=True)
class QuickstartArgs:
    pairs: int = 3
    """Rounds of the alternating checkpoint comparison."""
    env: str = "CartPole-v1"
    """Environment (its PPO preset)."""


VARIANTS = {
    "no checkpoints": {"checkpoints": False},
    "default: every 10 min and at the end": {},
    "after every chunk (previous default)": {"checkpoint_every": None},
}


def run_variant(name: str, env_id: str, root: Path, index: int) -> dict:
    spec = algos.get("ppo")
    cfg = spec.base_config(env_id)
    overrides = dict(VARIANTS[name])
    if "checkpoint_every" in overrides:
        per_chunk = schedule.plan_chunks(cfg.num_updates, None)[0]
        overrides["checkpoint_every"] = per_chunk
    options = options_for(spec)(
        run_dir=str(root / f"{index}-{len(os.listdir(root))}"), progress=False, **overrides
    )
    outcome = session.run(TrainRequest(spec, cfg, options))
    summary = outcome.summary
    steps = summary.total_env_steps
    return {
        "train_s": summary.train_time_s,
        "save_s": summary.checkpoint_time_s,
        "with_saves": steps / (summary.train_time_s + summary.checkpoint_time_s),
    }


def checkpoint_table(args: QuickstartArgs) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results: dict[str, list[dict]] = {name: [] for name in VARIANTS}
        for index in range(args.pairs + 1):
            for name in VARIANTS:
                result = run_variant(name, args.env, Path(tmp), index)
                if index > 0:  # the first round compiles (and fills the caches)
                    results[name].append(result)
    base = results["no checkpoints"]
    print("| checkpoints | train s | save s | steps/s incl. saves | vs no checkpoints |")
    print("|---|---:|---:|---:|---:|")
    for name, rows in results.items():
        ratio = statistics.median(
            r["with_saves"] / b["with_saves"] for r, b in zip(rows, base, strict=True)
        )
        print(
            f"| {name} | {statistics.median(r['train_s'] for r in rows):.2f} | "
            f"{statistics.median(r['save_s'] for r in rows):.3f} | "
            f"{statistics.median(r['with_saves'] for r in rows):,.0f} | {ratio:.3f}x |",
            flush=True,
        )


def compile_breakdown(env_id: str) -> None:
    """Times what ``loop.train`` does before its first chunk, against the AOT compile of the
    whole budget as one chunk."""
    spec = algos.get("ppo")
    cfg = spec.base_config(env_id)
    algo = spec.make(cfg).algo
    start = time.perf_counter()
    agents = jax.block_until_ready(program.init_agents(algo, [0]))
    init_s = time.perf_counter() - start
    length = schedule.plan_chunks(cfg.num_updates, None)[0]
    chunk = program.over_seeds(program.make_run_chunk(algo, length), algo.lockstep)
    start = time.perf_counter()
    lowered = jax.jit(chunk, donate_argnums=0).lower(agents)
    lower_s = time.perf_counter() - start
    start = time.perf_counter()
    lowered.compile()
    compile_s = time.perf_counter() - start
    whole = program.over_seeds(program.make_run_chunk(algo, cfg.num_updates), algo.lockstep)
    start = time.perf_counter()
    jax.jit(whole, donate_argnums=0).lower(agents).compile()
    aot_s = time.perf_counter() - start
    print("| piece | seconds |\n|---|---:|")
    print(f"| build the agents (init program: compile and run) | {init_s:.2f} |")
    print(f"| trace and lower a chunk of {length} updates | {lower_s:.2f} |")
    print(f"| compile it | {compile_s:.2f} |")
    print(f"| total before the first chunk | {init_s + lower_s + compile_s:.2f} |")
    print(f"| AOT lower + compile of all {cfg.num_updates} updates as one chunk | {aot_s:.2f} |")


def cache_table(env_id: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
        env |= {"PURERL_CACHE_DIR": str(Path(tmp) / "cache"), "JAX_PLATFORMS": "cpu"}
        print("| run (fresh process) | compile s | wall s | steps/s |\n|---|---:|---:|---:|")
        for name in ("first, empty cache", "second, same configuration"):
            run_dir = Path(tmp) / name.split(",")[0]
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "purerl", "train", "ppo", "--env", env_id, "--run-dir",
                 str(run_dir), "--no-progress"],
                check=True, capture_output=True, env=env,
            )  # fmt: skip
            process_s = time.perf_counter() - start
            summary = rundir.read_summary(run_dir)
            print(
                f"| {name} | {summary.compile_time_s:.2f} | {process_s:.1f} "
                f"(process) | {summary.steps_per_second:,.0f} |",
                flush=True,
            )


def main(args: QuickstartArgs) -> None:
    print(
        f"# purerl train ppo --env {args.env}: {jax.device_count()} {jax.default_backend()} "
        f"device(s), {os.cpu_count()} CPU cores, jax {jax.__version__}\n"
    )
    print("## What the run's compile time holds (no persistent cache)\n")
    compile_breakdown(args.env)
    print("\n## Checkpoint cadence\n")
    with tempfile.TemporaryDirectory() as cache:
        # Compiles are excluded from these figures; the cache only makes the rounds quicker.
        jax.config.update("jax_compilation_cache_dir", cache)
        checkpoint_table(args)
    print("\n## Persistent compilation cache\n")
    cache_table(args.env)


if __name__ == "__main__":
    configure_jax()
    main(tyro.cli(QuickstartArgs, description=__doc__))
