"""Comparing runs: smoothed learning curves, final returns and the comparison table.

Works on ``purerl.run.rundir.Run`` records, so runs still in progress compare too.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from purerl.core.stats import FINAL_WINDOW_EPISODES, recent_mean_return
from purerl.run.rundir import Run


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
    # A window longer than the series averages all of it; clamping keeps the index arithmetic
    # below in range for any window a user types.
    window = min(window, max(values.shape[-1], 1))
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
        return run.summary.steps_per_second
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
        return run.summary.final_mean_return, run.summary.final_std_return
    final = recent_mean_return(run.returns, run.episode_counts, FINAL_WINDOW_EPISODES)
    if not np.isfinite(final).any():
        return None, None
    return float(np.nanmean(final)), float(np.nanstd(final))


def run_table_row(run: Run, window: int) -> dict[str, Any]:
    """One run's line of the comparison table (see ``compare_runs`` for the fields)."""
    mean, std = final_return(run)
    smoothed_mean, _ = seed_mean_std(moving_average(run.returns, window))
    best = float(np.nanmax(smoothed_mean)) if np.isfinite(smoothed_mean).any() else None
    if mean is not None and (best is None or mean > best):
        # The final return averages the last episodes, the curve whole updates: the best of the
        # run is at least its final return.
        best = mean
    if run.summary is not None:
        frames = run.summary.total_frames // run.summary.num_seeds
        wall = run.summary.wall_time_s
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
    """``"mean +- std"`` with one decimal, ``"-"`` when no episode finished (None or NaN)."""
    return "-" if mean is None or not math.isfinite(mean) else f"{mean:.1f} +- {std:.1f}"


def markdown_table(
    header: Sequence[str],
    lines: Sequence[Sequence[str]],
    left_columns: int = 3,
    right_columns: Collection[int] | None = None,
) -> str:
    """A GitHub markdown table.

    Args:
        header: the column names.
        lines: one list of cells per line.
        left_columns: with ``right_columns`` None, the columns after the first
            ``left_columns`` are right-aligned.
        right_columns: the positions of the right-aligned columns; the others are left-aligned.
    """
    if right_columns is None:
        right_columns = range(left_columns, len(header))
    align = ["---:" if i in right_columns else "---" for i in range(len(header))]
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
