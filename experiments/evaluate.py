"""Evaluate a trained run: ``python experiments/evaluate.py runs/<dir> --episodes 10``.

Loads a checkpoint of the run (``--checkpoint latest``, ``best`` or an update count), plays
``--episodes`` fresh episodes per trained seed with the greedy policy (``--no-greedy`` samples
actions as in training: PPO from its policy, DQN epsilon-greedy at its final epsilon), and
prints mean / std / min / max return per seed. ``--video out.gif`` also records one episode of
``--seed-index`` (default the first seed). Exit code 2 for a missing run, no or an unreadable
checkpoint, or bad arguments.
"""

import dataclasses
import sys
from pathlib import Path
from typing import Annotated

import numpy as np
import tyro

from purerl.runtime import configure_jax, quiet_libraries

# Before importing the rest: importing the environments (gymnax) creates JAX's CPU client, and
# async dispatch is fixed when the client is created.
configure_jax()

from purerl import checkpoint  # noqa: E402
from purerl.config import ConfigError  # noqa: E402
from purerl.evaluate import evaluate, load_run, record_episode  # noqa: E402
from purerl.video import write_gif  # noqa: E402


@dataclasses.dataclass(frozen=True)
class EvalArgs:
    run_dir: Annotated[str, tyro.conf.Positional]
    """Run directory (runs/<algo>-<env>-<timestamp>)."""
    checkpoint: str = "latest"
    """Which checkpoint: latest, best (highest mean recent return) or an update count."""
    episodes: int = 10
    """Episodes per trained seed (played in parallel)."""
    seed: int = 0
    """Seed of the evaluation environments and any sampled actions."""
    greedy: bool = True
    """Take the most likely action (--no-greedy samples as in training)."""
    seed_index: int | None = None
    """Evaluate only this trained seed (0-based index into the run's seeds); default all."""
    video: str | None = None
    """Write one episode as an animated GIF here."""
    fps: int = 30
    """Frames per second of the video."""
    max_steps: int = 10_000
    """Give up on an episode after this many steps."""


def main(args: EvalArgs) -> int:
    if args.episodes < 1 or args.max_steps < 1:
        raise ConfigError("--episodes and --max-steps must be positive")
    run = load_run(Path(args.run_dir), args.checkpoint)
    num_seeds = run.cfg.num_seeds
    if args.seed_index is not None and not 0 <= args.seed_index < num_seeds:
        raise ConfigError(f"--seed-index must lie in [0, {num_seeds}), got {args.seed_index}")
    policy = "greedy" if args.greedy else "sampled"
    print(
        f"{run.algo_name} on {run.cfg.env}, checkpoint {run.step} ({args.checkpoint}): "
        f"{args.episodes} episodes per seed, {policy} policy"
    )
    episodes = evaluate(run, args.episodes, args.seed, args.greedy, args.max_steps)
    returns, finished = np.asarray(episodes.returns), np.asarray(episodes.finished)
    chosen = range(num_seeds) if args.seed_index is None else [args.seed_index]
    print("| seed | episodes | mean | std | min | max |\n|---:|---:|---:|---:|---:|---:|")
    for i in chosen:
        r = returns[i][finished[i]]
        stats = (
            f"{r.mean():.2f} | {r.std():.2f} | {r.min():.2f} | {r.max():.2f}"
            if r.size
            else "- | - | - | -"
        )
        print(f"| {run.cfg.seed + i} | {r.size} | {stats} |")
    pooled = np.concatenate([returns[i][finished[i]] for i in chosen])
    if pooled.size:
        print(f"mean return {pooled.mean():.2f} +- {pooled.std():.2f} over {pooled.size} episodes")
    unfinished = sum(int((~finished[i]).sum()) for i in chosen)
    if unfinished:
        print(f"{unfinished} episode(s) did not finish within --max-steps {args.max_steps}")
    if args.video:
        index = args.seed_index or 0
        recording = record_episode(run, index, args.seed, args.greedy, args.max_steps)
        write_gif(recording.frames, Path(args.video), args.fps)
        ret = (
            "unfinished"
            if recording.episode_return is None
            else f"return {recording.episode_return:g}"
        )
        print(
            f"video: {args.video} ({len(recording.frames)} frames, seed {run.cfg.seed + index}, "
            f"{ret})"
        )
    return 0


if __name__ == "__main__":
    quiet_libraries()
    parsed = tyro.cli(EvalArgs, description=__doc__)
    try:
        sys.exit(main(parsed))
    except (ConfigError, checkpoint.CheckpointError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
