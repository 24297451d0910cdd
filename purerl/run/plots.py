"""Learning curves as PNGs: trial graphs of one run, and several runs overlaid.

Figures are drawn with matplotlib's object-oriented API on an Agg canvas, so importing this
module changes no global matplotlib state (no backend switch, no pyplot). A run being trained
draws its graphs from its history in memory (``Curves``); finished runs and runs still going are
read with ``purerl.run.rundir`` (re-exported here: ``load_run``, ``Run``, ``NotARunError``).
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from purerl.run.capacity import check_output_file
from purerl.run.compare import moving_average, run_table_row, seed_mean_std
from purerl.run.rundir import Evaluations, NotARunError, Run, graph_paths, load_run
from purerl.run.writes import replace_file, require_file_or_absent

__all__ = [
    "NotARunError",
    "Curves",
    "Run",
    "compare_runs",
    "draw_trial_graphs",
    "load_run",
    "moving_average",
    "write_trial_graphs",
]

FIGURE_SIZE_IN = (8.0, 5.0)
DPI = 100
"""Figures are ``FIGURE_SIZE_IN`` x ``DPI`` = 800 x 500 pixels."""


class Curves(NamedTuple):
    """What a run's trial graphs show."""

    algo: str
    env: str
    status: str
    """``finished``, ``interrupted`` or ``in progress`` (``Run.status``)."""
    first_seed: int
    frames: np.ndarray
    """``[U]`` frames per seed after each update."""
    returns: np.ndarray
    """``[S, U]`` mean return of the episodes each update finished; NaN where none did."""
    evaluations: Evaluations | None = None
    """The greedy policy's evaluations during training (``--eval-every``), drawn as points."""

    @classmethod
    def of_run(cls, run: Run) -> Curves:
        first_seed = int(run.record.config.get("seed", 0))
        return cls(
            run.algo, run.env, run.status, first_seed, run.frames, run.returns, run.evaluations
        )


def draw_band(ax: Axes, x: np.ndarray, values: np.ndarray, label: str, color: Any) -> None:
    """Across-seed mean of ``values`` ``[S, U]`` as a line, with a shaded +- std band."""
    mean, std = seed_mean_std(values)
    ok = np.isfinite(mean)
    ax.plot(x[ok], mean[ok], color=color, linewidth=2.0, label=label)
    ax.fill_between(x[ok], (mean - std)[ok], (mean + std)[ok], color=color, alpha=0.2)


def new_figure() -> tuple[Figure, Axes]:
    fig = Figure(figsize=FIGURE_SIZE_IN, dpi=DPI)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def finish_figure(fig: Figure, ax: Axes, title: str) -> None:
    ax.set_title(title)
    ax.set_xlabel("frames per seed (environment steps x frame skip)")
    ax.set_ylabel("episode return")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize="small")
    fig.tight_layout()


def png_bytes(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=DPI, format="png")
    return buffer.getvalue()


def trial_graph(curves: Curves, values: np.ndarray, subtitle: str, path: Path) -> None:
    """Per-seed curves of ``values`` ``[S, U]`` plus their across-seed mean +- std."""
    fig, ax = new_figure()
    num_seeds = values.shape[0]
    colors = [f"C{(i % 9) + 1}" for i in range(num_seeds)]
    for seed_index, (curve, color) in enumerate(zip(values, colors, strict=True)):
        # Join the updates that have a value: a gap means no episode ended, not a zero return.
        ok = np.isfinite(curve)
        label = f"seed {curves.first_seed + seed_index}" if num_seeds <= 8 else None
        ax.plot(curves.frames[ok], curve[ok], color=color, linewidth=0.8, alpha=0.6, label=label)
    draw_band(ax, curves.frames, values, "mean ± std across seeds", "C0")
    if curves.evaluations is not None:
        draw_evaluations(ax, curves.evaluations)
    seeds = f"{num_seeds} seed{'s' if num_seeds != 1 else ''}"
    status = "" if curves.status == "finished" else f", {curves.status}"
    title = f"{curves.algo.upper()} on {curves.env}, {seeds}{status}\n{subtitle}"
    finish_figure(fig, ax, title)
    # Replaced whole (a viewer refreshing the file never reads half a PNG), never through a link.
    replace_file(path, png_bytes(fig))


def draw_evaluations(
    ax: Axes,
    evaluations: Evaluations,
    color: Any = "black",
    label: str = "greedy evaluation (mean ± std across seeds)",
) -> None:
    """Each evaluation's across-seed mean return as a point, with a +- std bar across seeds."""
    mean, std = seed_mean_std(evaluations.returns)
    ok = np.isfinite(mean)
    ax.errorbar(
        evaluations.frames[ok],
        mean[ok],
        yerr=np.nan_to_num(std[ok]),
        fmt="D",
        color=color,
        markersize=5,
        capsize=3,
        linewidth=1.0,
        label=label,
        zorder=3,
    )


def draw_trial_graphs(run_dir: str | Path, curves: Curves, window: int = 100) -> list[Path]:
    """Writes a run's learning curves as PNGs (800 x 500 px) into its directory.

    ``returns.png``: each seed's per-update mean episode return against frames per seed,
    with the across-seed mean and a +- std band, and the evaluations of the greedy policy
    (``--eval-every``) as points. ``returns_smoothed.png``: the same after a
    trailing ``moving_average`` over ``window`` updates of each seed's curve.

    Returns:
        The paths written (``rundir.graph_paths``).
    """
    raw_path, smooth_path = graph_paths(run_dir)
    for path in (raw_path, smooth_path):  # both refused before either is written
        require_file_or_absent(path)
    returns = np.asarray(curves.returns, np.float64)
    trial_graph(curves, returns, "episode return per update", raw_path)
    subtitle = f"moving average over {window} updates"
    trial_graph(curves, moving_average(returns, window), subtitle, smooth_path)
    return [raw_path, smooth_path]


def write_trial_graphs(run_dir: str | Path, window: int = 100) -> list[Path]:
    """``draw_trial_graphs`` of a run directory as it is on disk (finished or in progress)."""
    return draw_trial_graphs(run_dir, Curves.of_run(load_run(run_dir)), window)


def compare_runs(
    run_dirs: Sequence[str | Path], out_path: str | Path, window: int = 100
) -> list[dict[str, Any]]:
    """Overlays several runs' smoothed curves (across-seed mean +- std) in one PNG.

    Each run's seeds are smoothed with ``moving_average`` over ``window`` updates before the
    mean and std across seeds are taken; the x axis is frames per seed. A run's evaluations of
    its greedy policy (``--eval-every``), unsmoothed, are points in its colour.

    Returns:
        One dict per run, in order: ``run`` (directory name), ``algo``, ``env``, ``seeds``,
        ``final_mean_return`` and ``final_std_return`` (across seeds of each seed's mean over
        its last 100 or more episodes; from summary.json when present), ``best_mean_return``
        (the maximum over updates of the across-seed mean of the smoothed curves),
        ``frames`` (per seed), ``wall_time_s`` (compile included), ``steps_per_second`` (all
        seeds' environment steps per second of training), ``status``. Undefined values
        are None.

    Raises:
        NotARunError: a directory is not a run (checked for all before anything is drawn).
        ConfigError: ``out_path`` cannot be written (``check_output_file``).
    """
    runs = [load_run(path) for path in run_dirs]
    out_path = Path(out_path)
    check_output_file(out_path, "--out")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = new_figure()
    for index, run in enumerate(runs):
        seeds = f"{run.num_seeds} seed{'s' if run.num_seeds != 1 else ''}"
        label = f"{run.name} ({run.algo} {run.env}, {seeds})"
        if run.status != "finished":
            label += f", {run.status}"
        color = f"C{index % 10}"
        draw_band(ax, run.frames, moving_average(run.returns, window), label, color)
        if run.evaluations is not None:
            draw_evaluations(ax, run.evaluations, color, f"{run.name}, greedy evaluation")
    title = f"Episode return, mean ± std across seeds, moving average over {window} updates"
    finish_figure(fig, ax, title)
    # Written aside and renamed, so a viewer refreshing the file never reads half a PNG
    # (``out_path`` is the user's to choose, not a run directory's file); a failed write (a full
    # disk) leaves nothing behind.
    tmp = Path(out_path).with_name(Path(out_path).name + ".tmp")
    try:
        fig.savefig(tmp, dpi=DPI, format="png")
        os.replace(tmp, out_path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return [run_table_row(run, window) for run in runs]
