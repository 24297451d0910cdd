"""How a run is carried out and reported: options that never change what an agent learns.

``RunOptions`` is saved in ``config.json`` with the run. A resumed run starts from the saved
options; the fields in ``RESUMABLE`` may be given again to change them (a change is recorded in
the run directory), any other field is fixed for the life of the run.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Annotated, Any, Literal

import tyro

from purerl.config import MAX_UPDATES, ConfigError, check_field_types, flag

DeviceChoice = Literal["auto", "cpu", "gpu"] | int
ParallelMode = Literal["seeds", "data"]


def hint(text: str, metavar: str | None = None) -> Any:
    """A tyro marker that shows ``text`` as the default in ``--help`` (for None defaults that
    stand for a computed value)."""
    return tyro.conf.arg(help_behavior_hint=f"(default: {text})", metavar=metavar)


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """Run options: where and how a run goes. Nothing here changes what it learns."""

    run_dir: Annotated[str | None, hint("runs/<algo>-<env>-<time>", "DIR")] = None
    """Run directory; an existing non-empty one is refused, never overwritten."""
    updates_per_chunk: Annotated[int | None, hint("about 20 chunks per run", "INT")] = None
    """Updates per compiled chunk, i.e. between log points."""
    progress: bool = True
    """Show a progress bar (a plain line per chunk when stdout is not a terminal)."""
    stream: bool = False
    """Also advance the progress bar from inside each chunk (a JAX callback per update)."""
    checkpoints: bool = True
    """Save checkpoints into <run-dir>/checkpoints/<updates>/ (orbax); one is always saved at
    the end and when stopped by Ctrl-C or SIGTERM."""
    checkpoint_minutes: float = 10.0
    """Wall-clock minutes between checkpoints."""
    checkpoint_every: Annotated[int | None, hint("by time only", "INT")] = None
    """Also save a checkpoint every this many updates."""
    keep_checkpoints: int = 3
    """How many of the latest checkpoints to keep."""
    keep_best: int = 1
    """How many of the best checkpoints (by mean recent return over seeds) to keep as well."""
    tensorboard: bool = False
    """Also write TensorBoard event files to <run-dir>/tensorboard (pip install
    'purerl[tensorboard]')."""
    wandb_project: Annotated[str | None, hint("off", "NAME")] = None
    """Also log to this Weights & Biases project (pip install 'purerl[wandb]')."""
    plot_window: int = 100
    """Moving-average window (updates) of the smoothed learning curve written at the end."""
    curves: bool = True
    """Draw the learning curves (returns.png, returns_smoothed.png) into the run directory at
    the end; `purerl plot RUN_DIR` draws a run's curve any time. PURERL_CURVES=0 turns them off
    too."""
    eval_every: int = 0
    """Every this many updates, play --eval-episodes episodes per seed with the greedy policy on
    fresh environments and log their mean return as eval/return (0: never). Training is
    unchanged by it."""
    eval_episodes: int = 10
    """Episodes per seed of each --eval-every evaluation: one per fresh environment, played in
    parallel; their first episodes count."""
    init_from: Annotated[str | None, hint("fresh parameters", "RUN[:UPDATE]")] = None
    """Start from the parameters of this run's checkpoint (newest readable, or UPDATE or best);
    the optimizer, environments and update count start fresh (fine-tuning)."""
    stop_at_return: Annotated[float | None, hint("never", "X")] = None
    """Stop early (saving a checkpoint, resumable) once the return reaches X: the evaluation
    return when --eval-every is on, else the mean over seeds of the recent training return."""
    stop_on_plateau: Annotated[int | None, hint("never", "K")] = None
    """Stop early once that return has not improved for K reports in a row (evaluations with
    --eval-every, else chunks)."""
    compilation_cache: bool = True
    """Keep compiled programs in JAX's persistent cache (in $PURERL_CACHE_DIR, else
    $XDG_CACHE_HOME/purerl/jax), so a second run of a configuration skips most of its
    compile. PURERL_COMPILATION_CACHE=0 turns it off too."""
    device: DeviceChoice = "auto"
    """Devices to train on: auto (GPUs if JAX sees any, else CPU), cpu, gpu, or a device
    index."""
    num_devices: Annotated[int | None, hint("all of that kind", "INT")] = None
    """How many devices of that kind. On a CPU purerl starts that many CPU devices, each
    running its share of the seeds as its own program, one per core."""
    parallel: ParallelMode = "seeds"
    """With several devices: seeds (independent agents, seeds split across devices) or data (each
    agent's environments split across devices, gradients averaged)."""
    distributed: bool = False
    """Join a multi-process run (jax.distributed); coordinator, process count and id come from
    the flags below or, under SLURM and similar launchers, from the environment."""
    coordinator_address: Annotated[str | None, hint("from the launcher", "HOST:PORT")] = None
    """Address of process 0, for --distributed."""
    num_processes: Annotated[int | None, hint("from the launcher", "INT")] = None
    """Processes in the run, for --distributed."""
    process_id: Annotated[int | None, hint("from the launcher", "INT")] = None
    """This process's index, for --distributed."""

    def __post_init__(self):
        check_field_types(self)  # values read back from config.json, or given in Python
        for name, (low, high) in BOUNDS.items():
            value = getattr(self, name)
            if value is not None and not low <= value <= high:
                raise ConfigError(f"{flag(name)} must lie in [{low}, {high:,}], got {value}")
        minutes = self.checkpoint_minutes
        if not (math.isfinite(minutes) and 0 < minutes <= MAX_CHECKPOINT_MINUTES):
            raise ConfigError(
                f"--checkpoint-minutes must be a positive number of at most "
                f"{MAX_CHECKPOINT_MINUTES:,} (a year), got {minutes}"
            )
        if self.run_dir is not None and not self.run_dir.strip():
            raise ConfigError(
                "--run-dir is empty; name a directory, or leave the flag out for "
                "runs/<algo>-<env>-<time>"
            )
        if isinstance(self.device, int) and self.device < 0:
            raise ConfigError(
                f"--device must be auto, cpu, gpu or an index >= 0, got {self.device}"
            )
        processes, index = self.num_processes, self.process_id
        if processes is not None and index is not None and index >= processes:
            raise ConfigError(f"--process-id {index} is not below --num-processes {processes}")

    def excluded_state(self) -> tuple[str, ...]:
        """Algorithm state fields the user chose to leave out of checkpoints."""
        return ()


@dataclasses.dataclass(frozen=True)
class ReplayRunOptions(RunOptions):
    """Run options, and whether checkpoints hold the replay buffer (algorithms whose state has
    an excludable ``buffer``: DQN, SAC, TD3)."""

    checkpoint_buffer: bool = True
    """Include the replay buffer in checkpoints (exact resume; off saves space, and a resumed
    run then refills an empty buffer)."""

    def excluded_state(self) -> tuple[str, ...]:
        return () if self.checkpoint_buffer else ("buffer",)


EXCLUDABLE_OPTIONS: dict[tuple[str, ...], type[RunOptions]] = {
    (): RunOptions,
    ("buffer",): ReplayRunOptions,
}
"""The run options of an algorithm, by the state fields it lets checkpoints leave out
(``AlgoSpec.excludable``): each such field has its flag."""


def options_for(spec: Any) -> type[RunOptions]:
    """The run options class of an algorithm (an ``AlgoSpec``): ``RunOptions``, with a flag for
    each state field its checkpoints may leave out.

    Raises:
        ConfigError: the algorithm declares excludable fields no run option covers.
    """
    excludable = tuple(spec.excludable)
    if excludable not in EXCLUDABLE_OPTIONS:
        raise ConfigError(
            f"algorithm {spec.name!r} lets checkpoints leave out {', '.join(excludable)}, which "
            f"no run option covers; purerl knows {sorted(EXCLUDABLE_OPTIONS)}"
        )
    return EXCLUDABLE_OPTIONS[excludable]


MAX_CHECKPOINTS_KEPT = 100_000
"""More checkpoints than any disk holds for a run; the bound keeps the number meaningful."""
MAX_PROCESSES = 1 << 16
MAX_CHECKPOINT_MINUTES = 366 * 24 * 60
MAX_EVAL_EPISODES = 100_000

BOUNDS = {
    "updates_per_chunk": (1, MAX_UPDATES),
    "checkpoint_every": (1, MAX_UPDATES),
    "keep_checkpoints": (1, MAX_CHECKPOINTS_KEPT),
    "keep_best": (0, MAX_CHECKPOINTS_KEPT),
    "plot_window": (1, MAX_UPDATES),
    "eval_every": (0, MAX_UPDATES),
    "eval_episodes": (1, MAX_EVAL_EPISODES),
    "stop_on_plateau": (1, MAX_UPDATES),
    "num_devices": (1, MAX_PROCESSES),
    "num_processes": (1, MAX_PROCESSES),
    "process_id": (0, MAX_PROCESSES - 1),
}
"""Inclusive ``(low, high)`` of the counting run options; checked before anything is made."""


RESUMABLE = frozenset(
    {
        "updates_per_chunk",
        "progress",
        "stream",
        "checkpoint_minutes",
        "checkpoint_every",
        "keep_checkpoints",
        "keep_best",
        "tensorboard",
        "wandb_project",
        "plot_window",
        "curves",
        "eval_every",
        "eval_episodes",
        "stop_at_return",
        "stop_on_plateau",
        "compilation_cache",
        "checkpoints",
        "device",
        "distributed",
        "coordinator_address",
        "num_processes",
        "process_id",
    }
)
"""Run options a resumed run may change: reporting, cadence and where this process runs.
Chunking never changes results (update ``u`` draws ``fold_in(key, u)``), nor does evaluating."""
