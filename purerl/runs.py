"""Reading run directories, finished or in progress, and the statistics tables show.

A run directory holds ``config.json``, ``metrics.jsonl`` and, once finished, ``summary.json``
(README, "What a run writes"). Everything here reads those files only, so it works on a run
that is still going: ``summary.json`` absent and the last line of ``metrics.jsonl`` possibly
cut short by the writer. ``purerl.plots`` draws from what this module reads.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


class NotARunError(Exception):
    """A directory is not a (readable) purerl run; the message names it and what is missing."""


@dataclasses.dataclass(frozen=True)
class Run:
    """One run directory, read as far as it has been written. ``S`` seeds, ``U`` updates."""

    path: Path
    record: dict[str, Any]
    """``config.json``: ``algo``, ``config`` (the algorithm's fields), ``run``, ``versions``."""
    updates: np.ndarray
    """``[U]`` int64, updates done at each row (1-based)."""
    env_steps: np.ndarray
    """``[U]`` int64, environment steps per agent after each update."""
    frames: np.ndarray
    """``[U]`` int64, frames per agent (steps x frame skip) after each update."""
    wall_time_s: np.ndarray
    """``[U]`` float64, seconds since the run started (compile included) at each row."""
    returns: np.ndarray
    """``[S, U]`` float64 mean return of the episodes each update finished; NaN where none did."""
    episode_counts: np.ndarray
    """``[S, U]`` float64 number of episodes each update finished."""
    summary: dict[str, Any] | None
    """``summary.json``, or None while the run is in progress."""

    @property
    def status(self) -> str:
        """``finished``, ``interrupted`` (stopped by a signal, resumable) or ``in progress``."""
        if self.summary is None:
            return "in progress"
        return "interrupted" if self.summary.get("interrupted") else "finished"

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def algo(self) -> str:
        return str(self.record["algo"])

    @property
    def env(self) -> str:
        return str(self.record["config"]["env"])

    @property
    def num_seeds(self) -> int:
        return int(self.returns.shape[0])


def read_metrics_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of ``metrics.jsonl``; a last line cut short by a running writer is dropped.

    Raises:
        NotARunError: a line other than the last one is not valid JSON.
    """
    lines = path.read_text(encoding="utf-8").split("\n")
    rows = []
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            # The writer appends whole lines, so only the one being written can be partial.
            if index == len(lines) - 1:
                break
            raise NotARunError(f"{path}: line {index + 1} is not valid JSON ({err})") from err
    return rows


def read_record(run_dir: Path) -> dict[str, Any]:
    """``config.json`` of ``run_dir``, checked to be a purerl run record."""
    config_path = run_dir / "config.json"
    if not run_dir.is_dir():
        raise NotARunError(f"{run_dir} is not a run directory: no such directory")
    if not config_path.is_file():
        raise NotARunError(f"{run_dir} is not a run directory: it has no config.json")
    try:
        record = json.loads(config_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise NotARunError(f"{config_path} is not valid JSON ({err})") from err
    if (
        not isinstance(record, dict)
        or "algo" not in record
        or "env" not in record.get("config", {})
    ):
        raise NotARunError(f"{config_path} is not a purerl run config (no 'algo' or 'config.env')")
    return record


def per_seed_column(rows: list[dict[str, Any]], metric: str, num_seeds: int) -> np.ndarray:
    """``[S, U]`` float64 values of ``metric`` from each row's ``per_seed``; null -> NaN."""
    out = np.full((num_seeds, len(rows)), np.nan)
    for column, row in enumerate(rows):
        values = row["per_seed"].get(metric, [None] * num_seeds)
        out[:, column] = [np.nan if v is None else v for v in values]
    return out


def load_run(path: str | Path) -> Run:
    """Reads a run directory, finished or in progress.

    Raises:
        NotARunError: ``path`` has no readable ``config.json`` of a purerl run, or its
            ``metrics.jsonl`` has a corrupt line before the last or rows of another format.
    """
    run_dir = Path(path)
    record = read_record(run_dir)
    metrics_path = run_dir / "metrics.jsonl"
    # A run that is still compiling may not have created metrics.jsonl yet: no updates.
    rows = read_metrics_rows(metrics_path) if metrics_path.is_file() else []
    summary_path = run_dir / "summary.json"
    summary = None
    if summary_path.is_file():  # written atomically: present means complete
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        # An interrupted run that was resumed keeps its old summary until it ends again.
        if rows and summary.get("num_updates") != rows[-1].get("update"):
            summary = None
    try:
        return run_from_rows(run_dir, record, rows, summary)
    except (KeyError, TypeError, ValueError) as err:
        raise NotARunError(
            f"{metrics_path} does not hold purerl metrics rows ({type(err).__name__}: {err})"
        ) from err


def run_from_rows(
    run_dir: Path, record: dict[str, Any], rows: list[dict[str, Any]], summary: dict | None
) -> Run:
    """Assembles a ``Run`` from parsed ``metrics.jsonl`` rows (any may be malformed)."""
    if rows:
        num_seeds = len(rows[0]["per_seed"]["episode/return"])
    else:
        num_seeds = int(record["config"].get("num_seeds", 1))

    def column(key: str, dtype: type) -> np.ndarray:
        return np.asarray([row[key] for row in rows], dtype)

    return Run(
        path=run_dir,
        record=record,
        updates=column("update", np.int64),
        env_steps=column("env_steps", np.int64),
        frames=column("frames", np.int64),
        wall_time_s=column("wall_time_s", np.float64),
        returns=per_seed_column(rows, "episode/return", num_seeds),
        episode_counts=np.nan_to_num(per_seed_column(rows, "episode/count", num_seeds)),
        summary=summary,
    )


def moving_average(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing moving average along the last axis, skipping NaNs.

    ``out[..., t]`` is the mean of the finite values among ``values[..., t-window+1 : t+1]``
    (fewer at the start, where fewer points exist), and NaN if there are none. Each point
    (one update's mean return) weighs the same, however many episodes it averages.

    Args:
        values: ``[..., U]`` float array, NaN where undefined.
        window: points per window, at least 1.

    Returns:
        ``[..., U]`` float64.
    """
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    values = np.asarray(values, np.float64)
    finite = np.isfinite(values)
    pad = [(0, 0)] * (values.ndim - 1) + [(1, 0)]
    sums = np.pad(np.cumsum(np.where(finite, values, 0.0), axis=-1), pad)
    counts = np.pad(np.cumsum(finite, axis=-1), pad)
    # Window sums as differences of prefix sums: index t+1 minus index max(0, t+1-window).
    end = np.arange(1, values.shape[-1] + 1)
    start = np.maximum(end - window, 0)
    total = sums[..., end] - sums[..., start]
    count = counts[..., end] - counts[..., start]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def seed_mean_std(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``[U]`` mean and standard deviation over the seeds of ``[S, U]`` with a finite value."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns give NaN, as wanted
        return np.nanmean(values, axis=0), np.nanstd(values, axis=0)


def steps_per_second(run: Run) -> float | None:
    """All seeds' environment steps per second of training, compile excluded.

    From ``summary.json`` when the run finished. In progress, measured from the end of the
    first chunk (whose ``wall_time_s`` includes compilation) to the latest row; None until a
    second chunk has been written.
    """
    if run.summary is not None:
        return run.summary["steps_per_second"]
    if run.wall_time_s.size == 0:
        return None
    first_chunk = run.wall_time_s == run.wall_time_s[0]
    elapsed = run.wall_time_s[-1] - run.wall_time_s[0]
    if elapsed <= 0:
        return None
    steps = run.env_steps[-1] - run.env_steps[first_chunk][-1]
    return float(steps * run.num_seeds / elapsed)


def final_return(run: Run) -> tuple[float | None, float | None]:
    """Mean and std across seeds of each seed's final return (``summary.json``'s definition).

    A seed's final return is its mean over at least its last ``FINAL_WINDOW_EPISODES``
    finished episodes (``recent_mean_return``); (None, None) if no seed finished an episode.
    """
    if run.summary is not None:
        return run.summary["final_mean_return"], run.summary["final_std_return"]
    # Imported here: purerl.envs loads gymnax (seconds of start-up), and only runs in progress
    # need the definition recomputed.
    from purerl.envs.stats import recent_mean_return
    from purerl.train import FINAL_WINDOW_EPISODES

    final = recent_mean_return(run.returns, run.episode_counts, FINAL_WINDOW_EPISODES)
    if not np.isfinite(final).any():
        return None, None
    return float(np.nanmean(final)), float(np.nanstd(final))


def run_table_row(run: Run, window: int) -> dict[str, Any]:
    """One run's line of the comparison table (see ``compare_runs`` for the fields)."""
    mean, std = final_return(run)
    smoothed_mean, _ = seed_mean_std(moving_average(run.returns, window))
    best = float(np.nanmax(smoothed_mean)) if np.isfinite(smoothed_mean).any() else None
    if run.summary is not None:
        frames = run.summary["total_frames"] // run.summary["num_seeds"]
        wall = run.summary["wall_time_s"]
    else:
        frames = int(run.frames[-1]) if run.frames.size else 0
        wall = float(run.wall_time_s[-1]) if run.wall_time_s.size else None
    return {
        "run": run.name,
        "algo": run.algo,
        "env": run.env,
        "seeds": run.num_seeds,
        "final_mean_return": mean,
        "final_std_return": std,
        "best_mean_return": best,
        "frames": frames,
        "wall_time_s": wall,
        "steps_per_second": steps_per_second(run),
        "status": run.status,
    }


def format_number(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def format_return(mean: float | None, std: float | None) -> str:
    """``"mean +- std"`` with one decimal, ``"-"`` when no episode finished."""
    return "-" if mean is None else f"{mean:.1f} +- {std:.1f}"


def markdown_table(
    header: Sequence[str], lines: Sequence[Sequence[str]], left_columns: int = 3
) -> str:
    """A GitHub markdown table; columns after the first ``left_columns`` are right-aligned."""
    align = ["---" if i < left_columns else "---:" for i in range(len(header))]
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return "\n".join(out)


def comparison_table(rows: Sequence[dict[str, Any]]) -> str:
    """``compare_runs`` rows as a markdown table, one line per run."""
    header = ["run", "algo", "env", "seeds", "final return", "best return", "frames/seed"]
    header += ["wall s", "steps/s"]
    lines = [
        [
            row["run"] + ("" if row["status"] == "finished" else f" ({row['status']})"),
            row["algo"],
            row["env"],
            str(row["seeds"]),
            format_return(row["final_mean_return"], row["final_std_return"]),
            format_number(row["best_mean_return"]),
            f"{row['frames']:,}",
            format_number(row["wall_time_s"]),
            format_number(row["steps_per_second"], 0),
        ]
        for row in rows
    ]
    return markdown_table(header, lines)
