"""``purerl eval RUN_DIR``: returns of a trained run's policy, and a video of one episode.

Loads a checkpoint of the run (``--checkpoint latest``, ``best`` or an update count), plays
``--episodes`` fresh episodes per trained seed with the greedy policy (``--no-greedy`` acts as
in training: sampled actions, or epsilon-greedy at the final epsilon), and prints mean / std /
min / max return per seed. ``--video out.mp4`` (or ``out.gif``) also records one episode of
``--seed-index`` (default the first seed). Reading a run never changes it, and works while it
trains. Nor does it run the run's code: a run on a module:factory environment needs ``--env``
naming that factory again, one with a module:attr network ``--network`` naming it again, or
``--trust-run-code``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import numpy as np
import tyro

from purerl.cli.parsing import parse
from purerl.config import ConfigError
from purerl.options import hint
from purerl.run.capacity import check_output_file
from purerl.run.trust import COMMAND, TRUST_HELP
from purerl.run.video import FORMATS, require_writer, write_video
from purerl.runtime import enable_compilation_cache

MAX_EPISODES = 100_000
MAX_STEPS = 10_000_000


@dataclasses.dataclass(frozen=True)
class EvalArgs:
    run_dir: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="RUN_DIR")]
    """Run directory (runs/<algo>-<env>-<timestamp>)."""
    checkpoint: str = "latest"
    """Which checkpoint: latest, best (highest mean recent return) or an update count."""
    episodes: int = 10
    """Episodes per trained seed (played in parallel)."""
    seed: int = 0
    """Seed of the evaluation environments and any sampled actions."""
    greedy: bool = True
    """Take the most likely action (--no-greedy acts as in training)."""
    seed_index: Annotated[int | None, hint("all seeds", "INDEX")] = None
    """Evaluate only this trained seed (0-based index into the run's seeds)."""
    video: Annotated[str | None, hint("none", "PATH.mp4")] = None
    """Write one episode here: H.264 MP4 (.mp4, needs purerl[video]) or animated GIF (.gif)."""
    fps: int = 30
    """Frames per second of the video."""
    max_steps: int = 10_000
    """Give up on an episode after this many steps."""
    env: Annotated[str | None, hint("the run's", "MODULE:FACTORY")] = None
    """A run trained on your module:factory environment: name that factory again to import and
    call it (looked for on PYTHONPATH and in the current directory)."""
    network: Annotated[str | None, hint("the run's", "MODULE:ATTR")] = None
    """A run trained with your module:attr network: name it again to import it (looked for on
    PYTHONPATH and in the current directory)."""
    trust_run_code: Annotated[bool, tyro.conf.arg(help=TRUST_HELP)] = False

    def __post_init__(self):
        if not 1 <= self.episodes <= MAX_EPISODES:
            raise ConfigError(f"--episodes must lie in [1, {MAX_EPISODES}], got {self.episodes}")
        if not 1 <= self.max_steps <= MAX_STEPS:
            raise ConfigError(f"--max-steps must lie in [1, {MAX_STEPS}], got {self.max_steps}")
        if not 1 <= self.fps <= 1000:
            raise ConfigError(f"--fps must lie in [1, 1000], got {self.fps}")
        if self.seed < 0:
            raise ConfigError(f"--seed must be non-negative, got {self.seed}")
        if self.video is not None and Path(self.video).suffix.lower() not in FORMATS:
            raise ConfigError(
                f"--video writes MP4 or GIF; give a path ending in .mp4 or .gif, not {self.video}"
            )


def main(argv: Sequence[str], prog: str) -> int:
    args = parse(EvalArgs, argv, prog, __doc__)
    if args.video:  # a missing writer or a path that cannot be written is found before
        # minutes of evaluation, not after
        require_writer(args.video, f"--video {args.video}")
        check_output_file(args.video, "--video")
    if args.video and sys.platform.startswith("linux") and not os.environ.get("DISPLAY"):
        # MuJoCo (Brax's frames) picks its OpenGL backend once, when first imported; without a
        # display its default (GLFW) cannot start, while EGL renders headless.
        os.environ.setdefault("MUJOCO_GL", "egl")
    enable_compilation_cache()
    from purerl.run.evaluate import evaluate, load_agents

    run = load_agents(
        Path(args.run_dir), args.checkpoint, args.env, args.trust_run_code, COMMAND, args.network
    )
    for err in run.skipped:
        print(f"skipped checkpoint {err.step}: {err.reason}", file=sys.stderr, flush=True)
    num_seeds = run.cfg.num_seeds
    if args.seed_index is not None and not 0 <= args.seed_index < num_seeds:
        raise ConfigError(f"--seed-index must lie in [0, {num_seeds}), got {args.seed_index}")
    policy = "greedy" if args.greedy else "sampled"
    print(
        f"{run.spec.name} on {run.cfg.env}, checkpoint {run.step} ({args.checkpoint}): "
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
        record_video(run, args)
    return 0


def record_video(run, args: EvalArgs) -> None:
    from purerl.run.evaluate import record_episode

    index = args.seed_index or 0
    recording = record_episode(run, index, args.seed, args.greedy, args.max_steps)
    write_video(recording.frames, Path(args.video), args.fps)
    ret = (
        "unfinished" if recording.episode_return is None else f"return {recording.episode_return:g}"
    )
    print(
        f"video: {args.video} ({len(recording.frames)} frames, seed {run.cfg.seed + index}, {ret})"
    )
