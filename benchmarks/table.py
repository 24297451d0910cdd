"""Benchmark table: train the preset matrix, keep one record per row, render BENCHMARKS.md.

Every learning row and the page, regenerated (trains each row: hours on a CPU):

    python -m benchmarks.table --seeds 4 --out-dir runs/bench --write-benchmarks

The page alone, from the committed records in ``benchmarks/results/`` (trains nothing):

    python -m benchmarks.table --render

More:

    python -m benchmarks.table --rows ppo-CartPole-v1 --seeds 1 --budget-scale 0.01
    python -m benchmarks.table --seeds 4 --rows ppo-Pendulum-v1 --write-benchmarks
    python -m benchmarks.table --import-run ppo-Pendulum-v1=runs/pendulum --write-benchmarks

Every row trains the algorithm's preset for ``env`` with ``--seeds`` vmapped seeds through
the same path as ``purerl train`` (run directory with config.json, metrics.jsonl,
summary.json) under ``--out-dir/<algo>-<env>``, then writes its trial graphs there. The budget
of a row is its preset's ``total_timesteps`` (or a ``--budgets ROW=STEPS`` override) times
``--budget-scale``, rounded down to whole updates. Atari rows are listed as measured on GPU
only and never run here. ``--import-run ROW=DIR`` reads a finished run of the row's algorithm
and environment instead of training.

The table (stdout) gives per row: frames per seed, seeds (``--seeds``, or a ``--row-seeds
ROW=N`` override), final return (mean +- std across seeds of each seed's mean return over its
last 100 or more finished episodes), a published reference for the same environment and budget
with its source, the run's wall time, training steps/s (all seeds' environment steps over
training time, compile excluded) and a link to the smoothed learning curve. With
``--write-benchmarks`` each row's record (``benchmarks.results``: figures, machine, versions,
date, command) goes to ``--results-dir``, its smoothed curve to ``--plots-dir``, and the whole of
``--benchmarks`` is rendered again from every record there (``benchmarks.page``). With
``--reuse`` a row whose run directory already holds a finished run of the same configuration is
read instead of trained again. Training logs go to stderr. Exit codes: 0 done, 1 training
failed, 2 invalid arguments (or an existing run directory without ``--reuse``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import importlib.util
import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import jax
import tyro

from benchmarks import page, results
from purerl import algos
from purerl.config import ConfigError
from purerl.core.loop import NonFiniteLossError
from purerl.options import hint, options_for
from purerl.presets import MINATAR_GAMES
from purerl.run import session
from purerl.run.compare import format_return, markdown_table
from purerl.run.plots import NotARunError, load_run, write_trial_graphs
from purerl.run.rundir import SUMMARY_FILE
from purerl.run.setup import TrainRequest
from purerl.runtime import configure_jax


@dataclasses.dataclass(frozen=True)
class MatrixRow:
    algo: str
    env: str
    notes: str
    reference: str = "-"
    """A published result for the same algorithm, environment and budget, with its source."""
    gpu_only: bool = False
    """Listed in the table but not run on CPU."""
    network: str | None = None
    """Another torso than the preset's (``--network``): the row's name ends in it."""
    memory: bool = False
    """A task that needs memory: the page shows it with the recurrent rows."""
    suite: bool = False
    """A Jumanji or XLand-MiniGrid task: the page shows it with the suites' rows."""
    extra: str | None = None
    """The optional dependency the row's environment needs (``pip install 'purerl[EXTRA]'``,
    imported as EXTRA): without it the row is listed, not run."""

    @property
    def runnable(self) -> bool:
        """Run here: not a GPU-only row, and its extra (if any) is installed."""
        return not self.gpu_only and (
            self.extra is None or importlib.util.find_spec(self.extra) is not None
        )

    preset_name: str | None = None
    """A named preset (``--preset``) instead of the env's own: the row's name is built on it."""
    command: str | None = None
    """What measures the row where ``benchmarks.table`` does not (a GPU script)."""

    @property
    def name(self) -> str:
        suffix = f"-{self.network}" if self.network else ""
        return f"{self.algo}-{(self.preset_name or self.env).replace('/', '-')}{suffix}"

    @property
    def section(self) -> str:
        """The page's section for the row (``benchmarks.results.SECTIONS``)."""
        return "memory" if self.memory else "suites" if self.suite else self.algo

    @property
    def preset(self) -> Any:
        """The preset the row trains, with its ``network`` if given."""
        preset = algos.get(self.algo).presets[self.preset_name or self.env]
        return dataclasses.replace(preset, network=self.network) if self.network else preset


# References are published figures at the budget they name, and for PPO on the other
# MinAtar games the returns gymnax's README lists for the gymnax-blines PPO checkpoints (the same
# gymnax environments; 10M steps, 64 envs x 128 steps, lr 5e-4, gamma 0.999); where none is
# listed the column says what bounds the return instead. The Atari rows follow CleanRL's EnvPool
# protocol (no sticky actions) and budget (10M agent steps = 40M frames).
GYMNAX_BLINES_PPO = {"Asterix-MinAtar": 15, "Freeway-MinAtar": 58, "SpaceInvaders-MinAtar": 131}
MINATAR_UNTUNED = tuple(game for game in MINATAR_GAMES if game != "Breakout-MinAtar")
"""MinAtar games whose presets carry Breakout-MinAtar's settings over (PPO's Asterix lr aside)."""


CLEANRL_PPO_MUJOCO = {
    "HalfCheetah-v4": "1442.64 +- 46.03",
    "Hopper-v4": "2382.86 +- 271.74",
    "Walker2d-v4": "2287.95 +- 571.78",
}
CLEANRL_PPO_SOURCE = "CleanRL docs, ppo_continuous_action.py, MuJoCo v4 results"
# Episodes cut by the 1,000-step limit bootstrap from their last observation here, where CleanRL's
# script treats them as ended (every HalfCheetah episode ends so); the effect was not measured.
CLEANRL_MUJOCO_NOTES = (
    "preset (CleanRL ppo_continuous_action, but time-limit cuts bootstrap), MuJoCo through EnvPool"
)


# SLM Lab's clock ticks num_envs per vector step, so its max_frame of 10M counts agent steps.
SLM_LAB_NOTES = (
    "SLM Lab's GPU-guide protocol (preset Breakout-v5-slm: 16 envs, lambda 0.70, sticky actions "
    "0.25, Nature CNN), 10M frames = 2.5M agent steps, one seed on one GPU"
)
SLM_LAB_BREAKOUT = (
    "327 (SLM Lab ppo_atari, 4 sessions, 'a few hours on a GPU'), at its max_frame of 10M "
    "vector-env steps: 10M agent steps, 4x this budget"
)
NONE_FOUND = "no published figure found"
PENDULUM_SAC = "no published figure at this budget found; random actions score about -1,200"
BRAX_PENDULUM = "no published figure found; about 9,360 is the most a 1,000-step episode pays here"
SNAKE = "purerl's own game: a return is food eaten, minus 1 for a death; random play scores -0.91"


XMINIGRID_NONE = (
    "no published figure found (XLand-MiniGrid publishes no single-task results); reaching the "
    "goal pays 1 - 0.9 x steps / {limit}, else 0"
)
SUITE_NOTES = "preset, 256 envs x 32 steps, relu 256x256{what}"
KNAPSACK = (
    "20.07 optimal, 19.24 greedy on 1,000 instances of the same distribution (Bello et al. 2016, "
    "Table 5); on Jumanji's own: {optimum} optimal, {greedy} greedy, {random} random play "
    "(benchmarks/jumanji_bounds.py)"
)
GAME2048 = (
    "no published figure found; random legal play scores {random} (benchmarks/jumanji_bounds.py)"
)
FLAT_VIEW = ", the 7x7x2 view flattened"


def gymnax_blines_ppo(env: str) -> str:
    return f"about {GYMNAX_BLINES_PPO[env]} at 10M steps (gymnax-blines PPO, gymnax README)"


MATRIX = (
    MatrixRow(
        "ppo", "CartPole-v1", "preset (Huang et al. 2022 classic-control PPO)",
        "500 is the most an episode pays",
    ),
    MatrixRow(
        "dqn", "CartPole-v1", "preset (PureJaxRL CartPole DQN)", "500 is the most an episode pays"
    ),
    MatrixRow(
        "pqn", "CartPole-v1", "preset, 32 envs x 32 steps", "500 is the most an episode pays"
    ),
    MatrixRow("ppo", "Acrobot-v1", "preset, 16 envs", NONE_FOUND),
    MatrixRow(
        "ppo", "Pendulum-v1", "preset, gamma 0.99, observation normalisation, no value clipping",
        "about -130 at 1M steps (PPO on gymnax, gymnax-blines); the best policy averages -137.8 "
        "over random starts and -143.3 on the episodes seeds 0-3 are scored on "
        "(benchmarks/pendulum_ceiling.py --run-seeds 0 1 2 3)",
    ),
    MatrixRow(
        "ppo", "Breakout-MinAtar", "preset, 64 envs, 256x256 relu MLP",
        "about 28 at 10M steps (gymnax-blines); about 40 (PureJaxRL's plot)",
    ),
    MatrixRow(
        "ppo", "Asterix-MinAtar",
        "preset, the Breakout-MinAtar settings with lr 2.5e-3 (chosen on seeds 100-101), for "
        "the reference's 10M steps",
        gymnax_blines_ppo("Asterix-MinAtar"),
    ),
    MatrixRow(
        "ppo", "Freeway-MinAtar",
        "preset, the Breakout-MinAtar settings for the reference's 10M steps",
        gymnax_blines_ppo("Freeway-MinAtar"),
    ),
    MatrixRow(
        "ppo", "SpaceInvaders-MinAtar", "preset, the Breakout-MinAtar settings unchanged",
        gymnax_blines_ppo("SpaceInvaders-MinAtar"),
    ),
    MatrixRow(
        "dqn", "Breakout-MinAtar", "preset, 128 envs, Double DQN, 256x256 relu MLP", NONE_FOUND
    ),
    *(
        MatrixRow("dqn", env, "preset, the Breakout-MinAtar settings unchanged", NONE_FOUND)
        for env in MINATAR_UNTUNED
    ),
    MatrixRow(
        "pqn", "Breakout-MinAtar", "preset, 128 envs x 32 steps, 256x256 LayerNorm MLP",
        NONE_FOUND,
    ),
    *(
        MatrixRow("pqn", env, "preset, the Breakout-MinAtar settings unchanged", NONE_FOUND)
        for env in MINATAR_UNTUNED
    ),
    MatrixRow(
        "ppo", "HalfCheetah-v4", CLEANRL_MUJOCO_NOTES,
        f"{CLEANRL_PPO_MUJOCO['HalfCheetah-v4']} at 1M steps ({CLEANRL_PPO_SOURCE})",
    ),
    MatrixRow(
        "ppo", "Hopper-v4", CLEANRL_MUJOCO_NOTES,
        f"{CLEANRL_PPO_MUJOCO['Hopper-v4']} at 1M steps ({CLEANRL_PPO_SOURCE})",
    ),
    MatrixRow(
        "ppo", "brax/inverted_double_pendulum", "preset (128 envs x 32 steps), Brax generalized",
        BRAX_PENDULUM,
    ),
    MatrixRow(
        "ppo", "Snake-v0", "preset, 10x10 grid observation, 256 envs x 32 steps, relu 64x64",
        SNAKE,
    ),
    MatrixRow(
        "dqn", "Snake-v0",
        "preset, 256 envs, a gradient step of 512 per vector step, Double DQN, relu 256x256",
        SNAKE,
    ),
    MatrixRow(
        "pqn", "Snake-v0", "preset, 256 envs x 16 steps, relu 256x256 with LayerNorm", SNAKE
    ),
    MatrixRow(
        "sac", "Pendulum-v1",
        "preset, 16 envs, 4 gradient steps of 256 per vector step, 64x64 relu, 2e3 random steps "
        "first",
        PENDULUM_SAC,
    ),
    MatrixRow(
        "sac", "brax/inverted_double_pendulum",
        "preset, Brax generalized, 16 envs x 125 steps, 16 gradient steps of 128 per vector "
        "step, 64x64 relu",
        BRAX_PENDULUM,
    ),
    MatrixRow(
        "td3", "Pendulum-v1",
        "preset, 16 envs, 8 gradient steps of 256 per vector step, 64x64 relu, 2e3 random steps "
        "first",
        PENDULUM_SAC,
    ),
    MatrixRow(
        "td3", "brax/inverted_double_pendulum",
        "preset, Brax generalized, 16 envs x 125 steps, 16 gradient steps of 128 per vector "
        "step, 64x64 relu",
        BRAX_PENDULUM,
    ),
    MatrixRow(
        "ppo", "MemoryChain-bsuite", "preset, GRU (64), 16 envs x 32 steps",
        "1 is the most an episode pays; 0 is chance", memory=True,
    ),
    MatrixRow(
        "ppo", "MemoryChain-bsuite", "the GRU preset with an MLP (64) instead",
        "an MLP cannot see the context it is asked for: 0 expected", network="mlp",
        memory=True,
    ),
    MatrixRow(
        "ppo", "CartPole-NoVelocity-v1", "preset, GRU (64), 16 envs x 128 steps, rewards scaled",
        "500 is the most an episode pays", memory=True,
    ),
    MatrixRow(
        "ppo", "CartPole-NoVelocity-v1", "the GRU preset with an MLP (64) instead",
        "500 is the most an episode pays", network="mlp", memory=True,
    ),
    MatrixRow(
        "pqn", "MemoryChain-bsuite", "preset, GRU (64), 16 envs x 32 steps, LayerNorm",
        "1 is the most an episode pays; 0 is chance", memory=True,
    ),
    MatrixRow(
        "pqn", "MemoryChain-bsuite", "the GRU preset with an MLP (64) instead",
        "an MLP cannot see the context it is asked for: 0 expected", network="mlp",
        memory=True,
    ),
    MatrixRow(
        "ppo", "xminigrid/MiniGrid-DoorKey-8x8", SUITE_NOTES.format(what=FLAT_VIEW),
        XMINIGRID_NONE.format(limit=640), suite=True, extra="xminigrid",
    ),
    MatrixRow(
        "ppo", "xminigrid/MiniGrid-FourRooms", SUITE_NOTES.format(what=FLAT_VIEW),
        XMINIGRID_NONE.format(limit=100), suite=True, extra="xminigrid",
    ),
    MatrixRow(
        "ppo", "jumanji/Knapsack-v1", SUITE_NOTES.format(what=", items that do not fit masked"),
        KNAPSACK.format(optimum="20.25", greedy="20.19", random="13.66"), suite=True,
        extra="jumanji",
    ),
    MatrixRow(
        "ppo", "jumanji/Game2048-v1",
        SUITE_NOTES.format(what=", the 4x4 board of tile exponents flattened, rewards scaled"),
        GAME2048.format(random="1,100 +- 536"), suite=True, extra="jumanji",
    ),
    MatrixRow(
        "ppo", "Breakout-v5", "Atari (EnvPool, frame skip 4, no sticky actions)",
        "430 +- 8 at 10M steps (CleanRL ppo_atari_envpool)", gpu_only=True,
    ),
    MatrixRow(
        "pqn", "Breakout-v5", "Atari (EnvPool, frame skip 4, no sticky actions)",
        "385 +- 12 at 10M steps (CleanRL pqn_atari_envpool)", gpu_only=True,
    ),
    MatrixRow(
        "ppo", "Breakout-v5", SLM_LAB_NOTES, SLM_LAB_BREAKOUT, gpu_only=True,
        preset_name="Breakout-v5-slm", command="python -m benchmarks.device.atari_run --out DIR",
    ),
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class BenchTableArgs:
    rows: tuple[str, ...] = ()
    """Rows to run, by name (e.g. ppo-CartPole-v1); default: every row."""
    seeds: int = 2
    """Seeds per row (vmapped)."""
    row_seeds: tuple[str, ...] = ()
    """ROW=SEEDS overrides of --seeds for single rows (fewer seeds for a long row, say)."""
    budget_scale: float = 1.0
    """Multiplies every row's budget (use a small value for a smoke run)."""
    budgets: tuple[str, ...] = ()
    """ROW=STEPS overrides of a row's preset budget (steps per seed), before --budget-scale."""
    window: Annotated[int | None, hint("a 20th of the run", "INT")] = None
    """Moving-average window of the smoothed curves in updates."""
    out_dir: Annotated[Path | None, hint("runs/bench-<timestamp>", "DIR")] = None
    """Where run directories go."""
    write_benchmarks: bool = False
    """Write each row's record to --results-dir and its plot to --plots-dir, then render the
    whole of --benchmarks from every record there."""
    render: bool = False
    """Only render --benchmarks from the records in --results-dir: trains nothing."""
    import_run: tuple[str, ...] = ()
    """ROW=DIR: read a finished run directory of the row's algorithm and environment instead of
    training the row (its figures, configuration and curve)."""
    benchmarks: Path = Path("BENCHMARKS.md")
    """The page --write-benchmarks and --render write (at the repository root)."""
    results_dir: Annotated[Path | None, hint("benchmarks/results beside --benchmarks", "DIR")] = (
        None
    )
    """The records the page is rendered from."""
    plots_dir: Annotated[Path | None, hint("docs/bench beside --benchmarks", "DIR")] = None
    """Where --write-benchmarks puts the plots."""
    reuse: bool = False
    """Rows whose run directory holds a finished run of the same configuration are not trained
    again (their figures are re-read), e.g. to redo the table after a failed row."""


class RowOutcome(NamedTuple):
    """What one trained row leaves for the table."""

    summary: dict[str, Any]
    """The run's summary.json."""
    plot: Path
    """Its smoothed learning curve (PNG in the run directory)."""
    cfg: Any
    """The configuration it ran."""
    window: int
    """Moving-average window of the plot, in updates."""


def parse_row_values(flag: str, unit: str, specs: tuple[str, ...], names: set[str]) -> dict:
    """``ROW=N`` pairs of ``flag`` as a dict; N a positive integer."""
    values = {}
    for spec in specs:
        name, _, value = spec.partition("=")
        if name not in names or not value.isdigit() or int(value) < 1:
            raise ConfigError(f"{flag} takes ROW={unit} with a row of {sorted(names)}: {spec!r}")
        values[name] = int(value)
    return values


def parse_budgets(specs: tuple[str, ...], names: set[str]) -> dict[str, int]:
    return parse_row_values("--budgets", "STEPS", specs, names)


def select_rows(args: BenchTableArgs) -> list[MatrixRow]:
    names = [row.name for row in MATRIX]
    unknown = [name for name in args.rows if name not in names]
    if unknown:
        raise ConfigError(f"unknown row(s) {unknown}; rows are {names}")
    if args.seeds < 1 or args.budget_scale <= 0:
        raise ConfigError("--seeds and --budget-scale must be positive")
    parse_row_values("--row-seeds", "SEEDS", args.row_seeds, set(names))
    return [row for row in MATRIX if not args.rows or row.name in args.rows]


def row_config(row: MatrixRow, args: BenchTableArgs, budgets: dict[str, int]):
    """The row's preset with the bench's seeds and budget: the preset's own ``total_timesteps``
    unless scaled or overridden (schedules such as PQN's epsilon read it, so a row then trains
    exactly what ``purerl train`` does), else that budget in whole updates (at least one)."""
    preset = row.preset
    steps = budgets.get(row.name, preset.total_timesteps) * args.budget_scale
    per_update = preset.env_steps_per_update
    total = max(1, int(steps // per_update)) * per_update
    if steps == preset.total_timesteps:
        total = preset.total_timesteps
    seeds = parse_row_values("--row-seeds", "SEEDS", args.row_seeds, {r.name for r in MATRIX})
    changes = {"num_seeds": seeds.get(row.name, args.seeds), "total_timesteps": total}
    if hasattr(preset, "learning_starts"):
        # DQN must take a gradient step within the run: a shrunk budget shrinks the warm-up.
        changes["learning_starts"] = min(preset.learning_starts, total // 2)
    return dataclasses.replace(preset, **changes)


def finished_summary(run_dir: Path, cfg: Any):
    """The summary of a finished run of exactly ``cfg`` in ``run_dir``; None if there is none.

    Raises:
        ConfigError: ``run_dir`` holds a finished run of another configuration.
    """
    try:
        run = load_run(run_dir)
    except NotARunError:
        return None
    if run.status != "finished":
        return None
    # Rebuilt as the configuration class, so fields added since the run read as their defaults.
    if run.record.make_config(type(cfg), run_dir) != cfg:
        raise ConfigError(f"{run_dir} holds a run of another configuration; pick another --out-dir")
    return run.summary


def run_row(
    row: MatrixRow, args: BenchTableArgs, out_dir: Path, budgets: dict[str, int]
) -> RowOutcome:
    """Trains one row into ``out_dir/<row>`` (unless reused) and writes its trial graphs."""
    cfg = row_config(row, args, budgets)
    run_dir = out_dir / row.name
    summary = finished_summary(run_dir, cfg) if args.reuse else None
    if summary is None:
        # No checkpoints: their saves would count in the training time the table reports.
        spec = algos.get(row.algo)
        options = options_for(spec)(run_dir=str(run_dir), progress=False, checkpoints=False)
        # Keep stdout for the table: the training log lines go to stderr.
        with contextlib.redirect_stdout(sys.stderr):
            summary = session.run(TrainRequest(spec, cfg, options)).summary
    window = args.window or max(1, cfg.num_updates // 20)
    _, smoothed = write_trial_graphs(run_dir, window)
    return RowOutcome(summary, smoothed, cfg, window)


def shown_return(mean: float | None, std: float | None) -> str:
    """A row's return as its record keeps it and the page shows it; ``-`` without episodes."""
    if mean is None or mean != mean:
        return format_return(mean, std)
    places = results.return_places(mean)
    return results.show_return(round(mean, places), round(std, places))


def table_line(row: MatrixRow, outcome: RowOutcome | None, link: str) -> list[str]:
    if outcome is None:
        why = "measured on GPU only, not run on CPU" if row.gpu_only else "extra not installed"
        notes = f"{row.notes}; {why}"
        return [row.algo.upper(), row.env, notes, "-", "-", "-", row.reference, "-", "-", "-"]
    summary, cfg = outcome.summary, outcome.cfg
    preset = row.preset
    preset_steps = preset.num_updates * preset.env_steps_per_update  # whole updates, as run
    run_steps = cfg.num_updates * cfg.env_steps_per_update
    budget = f"{run_steps:,} steps"
    if run_steps != preset_steps:
        budget += f" (preset {preset_steps:,})"
    updates = "update" if outcome.window == 1 else "updates"
    return [
        row.algo.upper(),
        row.env,
        f"{row.notes}; {budget}; plot smoothed over {outcome.window} {updates}",
        f"{summary.total_frames // summary.num_seeds:,}",
        str(summary.num_seeds),
        shown_return(summary.final_mean_return, summary.final_std_return),
        row.reference,
        f"{summary.wall_time_s / 60:.1f} min",
        f"{summary.steps_per_second:,.0f}",
        link,
    ]


def build_table(rows: list[MatrixRow], outcomes: list[RowOutcome | None], links: list[str]) -> str:
    header = ["algo", "env", "protocol / notes", "frames per seed", "seeds"]
    header += ["final return (mean +- std)", "published reference", "wall", "steps/s", "plot"]
    lines = [table_line(r, o, link) for r, o, link in zip(rows, outcomes, links, strict=True)]
    return markdown_table(header, lines)


def results_dir(args: BenchTableArgs) -> Path:
    return args.results_dir or args.benchmarks.parent / "benchmarks" / "results"


def row_command(row: MatrixRow, cfg: Any) -> str:
    """The command that trains ``row`` again at ``cfg``'s seeds and budget."""
    if row.command:
        return row.command
    command = [
        "python",
        "-m",
        "benchmarks.table",
        "--seeds",
        str(cfg.num_seeds),
        "--rows",
        row.name,
    ]
    if cfg.total_timesteps != row.preset.total_timesteps:
        command += ["--budgets", f"{row.name}={cfg.total_timesteps}"]
    return shlex.join(command)


def this_machine(origin: str | None = None) -> results.Machine:
    """This process's machine, or for a run a device script brought back (a ``report.json``
    with a ``header`` beside its folder, as ``benchmarks.device.atari_run`` writes) that one's."""
    report = Path(origin).parent / "report.json" if origin else None
    if report is not None and report.is_file():
        header = json.loads(report.read_text(encoding="utf-8")).get("header", {})
        devices = header.get("devices") or []
        kind = devices[0].split(" (", 1)[-1].rstrip(")") if devices else None
        versions = {name: header[name] for name in ("python", "jax") if header.get(name)}
        return results.Machine(
            kind or "unknown device",
            f"{kind}, {header.get('cpu_cores')} CPU cores (a lent GPU machine)",
            versions,
        )
    backend = jax.default_backend()
    kind = None if backend == "cpu" else jax.devices()[0].device_kind
    return results.this_machine(os.cpu_count(), backend, kind)


def row_record(
    row: MatrixRow, outcome: RowOutcome, plot: str, measured: str, origin: str
) -> results.LearningRecord:
    summary, cfg = outcome.summary, outcome.cfg
    first = int(cfg.seed)
    places = results.return_places(summary.final_mean_return)
    per_seed = summary.per_seed_final_return
    return results.LearningRecord(
        name=row.name, section=row.section, order=MATRIX.index(row), algo=row.algo,
        env=row.env, network=row.network, protocol=row.notes,
        steps_per_seed=summary.env_steps_per_seed,
        seeds=list(range(first, first + summary.num_seeds)),
        final_mean=round(summary.final_mean_return, places),
        final_std=round(summary.final_std_return, places),
        per_seed_final=[None if r is None else round(r, places) for r in per_seed],
        reference=row.reference, wall_time_s=round(summary.wall_time_s, 1),
        steps_per_s=round(summary.steps_per_second), plot=plot,
        plot_window_updates=outcome.window, command=row_command(row, cfg), measured=measured,
        where=this_machine(origin), origin=origin,
    )  # fmt: skip


def render_page(args: BenchTableArgs) -> None:
    text = page.render(args.benchmarks.parent, results_dir(args))
    args.benchmarks.write_text(text, encoding="utf-8")


def publish(
    args: BenchTableArgs,
    rows: list[MatrixRow],
    outcomes: list[RowOutcome | None],
    origins: list[str],
) -> str:
    """Copies the plots beside ``--benchmarks``, writes each row's record and renders the page
    from every record; returns the table."""
    plots_dir = args.plots_dir or args.benchmarks.parent / "docs" / "bench"
    plots_dir.mkdir(parents=True, exist_ok=True)
    links = []
    for row, outcome, origin in zip(rows, outcomes, origins, strict=True):
        if outcome is None:
            links.append("-")
            continue
        target = plots_dir / f"{row.name}.png"
        shutil.copyfile(outcome.plot, target)
        plot = os.path.relpath(target, args.benchmarks.parent)
        links.append(f"[png]({plot})")
        # The day the run finished: its summary is written last (a reused run keeps its day).
        finished = (outcome.plot.parent / SUMMARY_FILE).stat().st_mtime
        measured = datetime.date.fromtimestamp(finished).isoformat()
        results.write(row_record(row, outcome, plot, measured, origin), results_dir(args))
    render_page(args)
    return build_table(rows, outcomes, links)


def import_runs(args: BenchTableArgs) -> tuple[list[MatrixRow], list[RowOutcome]]:
    """The rows named by ``--import-run`` and their finished runs, read, not trained."""
    by_name = {row.name: row for row in MATRIX}
    rows, outcomes = [], []
    for spec in args.import_run:
        name, _, folder = spec.partition("=")
        if name not in by_name or not folder:
            raise ConfigError(
                f"--import-run takes ROW=DIR with a row of {sorted(by_name)}: {spec!r}"
            )
        row, run = by_name[name], load_run(Path(folder))
        if run.status != "finished" or (run.algo, run.env) != (row.algo, row.env):
            raise ConfigError(
                f"{folder} holds a {run.status} {run.algo} run on {run.env}; --import-run "
                f"{name} needs a finished {row.algo} run on {row.env}"
            )
        cfg = run.record.make_config(type(row.preset), Path(folder))
        # An algorithm registered from outside purerl may have no torso field to tell apart.
        torso, wanted = getattr(cfg, "network", None), getattr(row.preset, "network", None)
        if torso != wanted:
            raise ConfigError(f"{folder} trained a {torso} torso; {name} needs {wanted}")
        window = args.window or max(1, cfg.num_updates // 20)
        _, smoothed = write_trial_graphs(Path(folder), window)
        rows.append(row)
        outcomes.append(RowOutcome(run.summary, smoothed, cfg, window))
    return rows, outcomes


def main(argv: list[str]) -> int:
    try:
        args = tyro.cli(BenchTableArgs, args=argv, description=__doc__)
        if args.render:
            render_page(args)
            print(f"wrote {args.benchmarks}")
            return 0
        if args.import_run:
            rows, outcomes = import_runs(args)
            origins = [spec.partition("=")[2] for spec in args.import_run]
        else:
            rows = select_rows(args)
            budgets = parse_budgets(args.budgets, {row.name for row in MATRIX})
            stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
            out_dir = args.out_dir or Path("runs") / f"bench-{stamp}"
            outcomes = [run_row(r, args, out_dir, budgets) if r.runnable else None for r in rows]
            origins = [str(out_dir / row.name) for row in rows]
    except (ConfigError, results.RecordError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except NonFiniteLossError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.write_benchmarks:
        table = publish(args, rows, outcomes, origins)
    else:
        links = ["-" if o is None else f"[png]({o.plot})" for o in outcomes]
        table = build_table(rows, outcomes, links)
    print(table)
    return 0


if __name__ == "__main__":
    configure_jax()
    sys.exit(main(sys.argv[1:]))
