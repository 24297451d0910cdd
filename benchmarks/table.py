"""Benchmark table: train a fixed matrix of presets, graph each run, print a markdown table.

    python -m benchmarks.table --seeds 2
    python -m benchmarks.table --rows ppo-CartPole-v1 --seeds 1 --budget-scale 0.01
    python -m benchmarks.table --seeds 4 --row-seeds ppo-Breakout-MinAtar=2 --write-benchmarks

Every row trains the algorithm's preset for ``env`` with ``--seeds`` vmapped seeds through
the same path as ``purerl train`` (run directory with config.json, metrics.jsonl,
summary.json) under ``--out-dir/<algo>-<env>``, then writes its trial graphs there. The budget
of a row is its preset's ``total_timesteps`` (or a ``--budgets ROW=STEPS`` override) times
``--budget-scale``, rounded down to whole updates. Atari rows are listed as measured on GPU
only and never run here.

The table (stdout) gives per row: frames per seed, seeds (``--seeds``, or a ``--row-seeds
ROW=N`` override), final return (mean +- std across seeds of each seed's mean return over its
last 100 or more finished episodes), a published reference for the same environment and budget
with its source, the run's wall time, training steps/s (all seeds' environment steps over
training time, compile excluded) and a link to the smoothed learning curve. With
``--write-benchmarks`` the table replaces the section between ``<!-- bench-table:start -->``
and ``<!-- bench-table:end -->`` of ``--benchmarks`` (a new ``## Benchmark table`` section at
its end if the markers are missing), and the smoothed curves are copied to ``--plots-dir``
(default ``docs/bench/`` beside that file), which the links name. With ``--reuse`` a row whose
run directory already holds a finished run of the same configuration is read instead of trained
again. Training logs go to stderr. Exit codes: 0 done, 1 training failed, 2 invalid arguments
(or an existing run directory without ``--reuse``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
import platform
import shlex
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import jax
import tyro

from purerl import algos
from purerl.config import ConfigError
from purerl.core.loop import NonFiniteLossError
from purerl.options import hint
from purerl.presets import MINATAR_GAMES
from purerl.run import session
from purerl.run.compare import format_return, markdown_table
from purerl.run.plots import NotARunError, load_run, write_trial_graphs
from purerl.runtime import configure_jax

START_MARKER = "<!-- bench-table:start -->"
END_MARKER = "<!-- bench-table:end -->"


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

    @property
    def name(self) -> str:
        suffix = f"-{self.network}" if self.network else ""
        return f"{self.algo}-{self.env.replace('/', '-')}{suffix}"

    @property
    def preset(self) -> Any:
        """The preset the row trains, with its ``network`` if given."""
        preset = algos.get(self.algo).presets[self.env]
        return dataclasses.replace(preset, network=self.network) if self.network else preset


# References are the figures issue #18 names, at the budget it names, and for PPO on the other
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
    MatrixRow("ppo", "Acrobot-v1", "preset, 16 envs", "-"),
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
        "dqn", "Breakout-MinAtar", "preset, 128 envs, Double DQN, 256x256 relu MLP", "-"
    ),
    *(
        MatrixRow("dqn", env, "preset, the Breakout-MinAtar settings unchanged", "-")
        for env in MINATAR_UNTUNED
    ),
    MatrixRow(
        "pqn", "Breakout-MinAtar", "preset, 128 envs x 32 steps, 256x256 LayerNorm MLP",
        "- (no published PQN figure checked)",
    ),
    *(
        MatrixRow("pqn", env, "preset, the Breakout-MinAtar settings unchanged", "-")
        for env in MINATAR_UNTUNED
    ),
    MatrixRow(
        "ppo", "HalfCheetah-v4", "preset (CleanRL ppo_continuous_action), MuJoCo through EnvPool",
        f"{CLEANRL_PPO_MUJOCO['HalfCheetah-v4']} at 1M steps ({CLEANRL_PPO_SOURCE})",
    ),
    MatrixRow(
        "ppo", "Hopper-v4", "preset (CleanRL ppo_continuous_action), MuJoCo through EnvPool",
        f"{CLEANRL_PPO_MUJOCO['Hopper-v4']} at 1M steps ({CLEANRL_PPO_SOURCE})",
    ),
    MatrixRow(
        "ppo", "brax/inverted_double_pendulum", "preset (128 envs x 32 steps), Brax generalized",
        "no published figure found; about 9,360 is the most a 1,000-step episode pays here",
    ),
    MatrixRow(
        "ppo", "MemoryChain-bsuite", "preset, GRU (64), 16 envs x 32 steps",
        "1 is the most an episode pays; 0 is chance",
    ),
    MatrixRow(
        "ppo", "MemoryChain-bsuite", "the GRU preset with an MLP (64) instead",
        "an MLP cannot see the context it is asked for: 0 expected", network="mlp",
    ),
    MatrixRow(
        "ppo", "CartPole-NoVelocity-v1", "preset, GRU (64), 16 envs x 128 steps, rewards scaled",
        "500 is the most an episode pays",
    ),
    MatrixRow(
        "ppo", "CartPole-NoVelocity-v1", "the GRU preset with an MLP (64) instead",
        "500 is the most an episode pays", network="mlp",
    ),
    MatrixRow(
        "pqn", "MemoryChain-bsuite", "preset, GRU (64), 16 envs x 32 steps, LayerNorm",
        "1 is the most an episode pays; 0 is chance",
    ),
    MatrixRow(
        "pqn", "MemoryChain-bsuite", "the GRU preset with an MLP (64) instead",
        "an MLP cannot see the context it is asked for: 0 expected", network="mlp",
    ),
    MatrixRow(
        "ppo", "Breakout-v5", "Atari (EnvPool, frame skip 4, no sticky actions)",
        "430 +- 8 at 10M steps (CleanRL ppo_atari_envpool)", gpu_only=True,
    ),
    MatrixRow(
        "pqn", "Breakout-v5", "Atari (EnvPool, frame skip 4, no sticky actions)",
        "385 +- 12 at 10M steps (CleanRL pqn_atari_envpool)", gpu_only=True,
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
    """Replace the bench-table section of --benchmarks and copy the plots to --plots-dir."""
    benchmarks: Path = Path("BENCHMARKS.md")
    """The markdown file --write-benchmarks updates."""
    plots_dir: Annotated[Path | None, hint("docs/bench beside --benchmarks", "DIR")] = None
    """Where --write-benchmarks puts the plots."""
    note: str = ""
    """A paragraph for the BENCHMARKS.md section (conditions of the measurement, say)."""
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
        options = spec.options_cls(run_dir=str(run_dir), progress=False, checkpoints=False)
        # Keep stdout for the table: the training log lines go to stderr.
        with contextlib.redirect_stdout(sys.stderr):
            summary = session.run(session.TrainRequest(spec, cfg, options)).summary
    window = args.window or max(1, cfg.num_updates // 20)
    _, smoothed = write_trial_graphs(run_dir, window)
    return RowOutcome(summary, smoothed, cfg, window)


def table_line(row: MatrixRow, outcome: RowOutcome | None, link: str) -> list[str]:
    if outcome is None:
        notes = f"{row.notes}; measured on GPU only, not run on CPU"
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
        format_return(summary.final_mean_return, summary.final_std_return),
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


def replace_section(text: str, section: str) -> str:
    """``text`` with the part between the bench-table markers replaced by ``section``.

    Without both markers, a ``## Benchmark table`` section holding them is appended.
    """
    start, end = text.find(START_MARKER), text.find(END_MARKER)
    block = f"{START_MARKER}\n{section.strip()}\n{END_MARKER}"
    if start < 0 or end < start:
        return text.rstrip("\n") + f"\n\n## Benchmark table\n\n{block}\n"
    return text[:start] + block + text[end + len(END_MARKER) :]


def section_text(table: str, argv: list[str], args: BenchTableArgs) -> str:
    shown = list(argv)
    if "--note" in shown:  # documentation, not part of the measurement: shown as text below
        index = shown.index("--note")
        del shown[index : index + 2]
    command = shlex.join([".venv/bin/python", "-m", "benchmarks.table", *shown])
    reused = (
        " (`--reuse`: rows with a finished run of the same configuration in the output directory "
        "were read back, not trained again; drop it to measure afresh)"
        if args.reuse
        else ""
    )
    header = (
        f"Written {datetime.date.today().isoformat()} on {platform.machine()} with "
        f"{os.cpu_count()} CPU cores (jax {jax.__version__}, {jax.default_backend()} backend) "
        f"by{reused}:"
    )
    legend = (
        "Final return: mean +- std across seeds of each seed's mean return over its last 100 "
        "or more finished episodes. Wall: the run's whole time, compile included (rows read "
        "back with --reuse keep the time of the run that trained them). "
        "Steps/s: all seeds' environment steps over training time, "
        "compile excluded (frames = steps x frame skip). Plots: per-seed curves smoothed by "
        "a trailing moving average, mean +- std across seeds, against frames per seed."
    )
    prose = [textwrap.fill(text, 100) for text in [args.note, legend] if text]
    return "\n\n".join([textwrap.fill(header, 100), f"```\n{command}\n```", *prose, table])


def publish(
    args: BenchTableArgs, rows: list[MatrixRow], outcomes: list[RowOutcome | None], argv: list[str]
) -> str:
    """Copies the plots beside ``--benchmarks`` and rewrites its section; returns the table."""
    plots_dir = args.plots_dir or args.benchmarks.parent / "docs" / "bench"
    plots_dir.mkdir(parents=True, exist_ok=True)
    links = []
    for row, outcome in zip(rows, outcomes, strict=True):
        if outcome is None:
            links.append("-")
            continue
        target = plots_dir / f"{row.name}.png"
        shutil.copyfile(outcome.plot, target)
        links.append(f"[png]({os.path.relpath(target, args.benchmarks.parent)})")
    table = build_table(rows, outcomes, links)
    text = args.benchmarks.read_text(encoding="utf-8") if args.benchmarks.exists() else ""
    args.benchmarks.write_text(replace_section(text, section_text(table, argv, args)), "utf-8")
    return table


def main(argv: list[str]) -> int:
    try:
        args = tyro.cli(BenchTableArgs, args=argv, description=__doc__)
        rows = select_rows(args)
        budgets = parse_budgets(args.budgets, {row.name for row in MATRIX})
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        out_dir = args.out_dir or Path("runs") / f"bench-{stamp}"
        outcomes = [None if r.gpu_only else run_row(r, args, out_dir, budgets) for r in rows]
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except NonFiniteLossError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.write_benchmarks:
        table = publish(args, rows, outcomes, argv)
    else:
        links = ["-" if o is None else f"[png]({o.plot})" for o in outcomes]
        table = build_table(rows, outcomes, links)
    print(table)
    return 0


if __name__ == "__main__":
    configure_jax()
    sys.exit(main(sys.argv[1:]))
