"""``metrics.jsonl``: one row per update written as chunks end, read back (also while a run
writes it), repaired from a checkpoint on resume; and a whole run read back for plots and
tables (``load_run``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import IO, Any, NamedTuple

import numpy as np

from purerl.core.report import ChunkReport
from purerl.run import writes
from purerl.run.rundir.layout import (
    METRICS_FILE,
    NotARunError,
)
from purerl.run.rundir.records import (
    ConfigRecord,
    Summary,
    read_config,
    read_summary,
    read_text,
)


def report_rows(report: ChunkReport, env_steps_per_update: int, frame_skip: int) -> list[dict]:
    """One ``metrics.jsonl`` row per update of a chunk.

    ``update`` counts updates done; ``env_steps`` and ``frames`` are per agent; ``wall_time_s``
    is the time since the process started the run at the end of the chunk (compile included).
    Top-level metric values are means over the seeds where they are defined (null where no
    seed's is); ``per_seed`` lists every seed's value. The chunk's evaluation, if the run
    evaluated after its last update (``eval/return``, ``eval/length``), joins that update's row.
    """
    names = sorted(report.metrics)
    length = report.metrics[names[0]].shape[1]
    rows = []
    for offset in range(length):
        update = report.first_update + offset + 1
        row: dict[str, Any] = {
            "update": update,
            "env_steps": update * env_steps_per_update,
            "frames": update * env_steps_per_update * frame_skip,
            "wall_time_s": round(report.wall_time_s, 3),
        }
        per_seed = {}
        for name in names:
            values = report.metrics[name][:, offset].astype(np.float64)
            finite = values[np.isfinite(values)]
            row[name] = json_number(finite.mean()) if finite.size else None
            per_seed[name] = [json_number(v) for v in values]
        row["per_seed"] = per_seed
        rows.append(row)
    for name, values in sorted((report.evals or {}).items()):
        row, values = rows[-1], np.asarray(values, np.float64)
        finite = values[np.isfinite(values)]
        row[name] = json_number(finite.mean()) if finite.size else None
        row["per_seed"][name] = [json_number(v) for v in values]
    return rows


def json_number(x: Any) -> float | int | None:
    x = x.item() if hasattr(x, "item") else x
    if isinstance(x, bool | int):
        return int(x)
    return float(x) if math.isfinite(x) else None


class MetricsWriter:
    """A sink appending ``metrics.jsonl`` rows, flushed after every chunk so readers see
    progress."""

    def __init__(self, run_dir: Path, env_steps_per_update: int, frame_skip: int = 1):
        path = Path(run_dir) / METRICS_FILE
        self.file: IO[str] = writes.open_for_writing(path)  # closed in close()
        self.env_steps_per_update = env_steps_per_update
        self.frame_skip = frame_skip
        self.last_rows: list[dict[str, Any]] = []
        """The rows of the latest chunk, which a checkpoint carries (``restore_metrics``)."""

    def write(self, report: ChunkReport) -> None:
        self.last_rows = report_rows(report, self.env_steps_per_update, self.frame_skip)
        for row in self.last_rows:
            self.file.write(json.dumps(row) + "\n")
        self.file.flush()

    def sync(self) -> list[dict[str, Any]]:
        """Makes the rows written so far durable (a checkpoint is saved only after its rows);
        returns the latest chunk's rows for the checkpoint to carry."""
        self.file.flush()
        os.fsync(self.file.fileno())
        return self.last_rows

    def close(self, summary: Any = None) -> None:
        self.file.close()


def read_metrics_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of ``metrics.jsonl``; a last line cut short by a running writer is dropped.

    Raises:
        NotARunError: a line other than the last one is not valid JSON.
    """
    lines = read_text(path).split("\n")
    rows = []
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as err:
            # The writer appends whole lines, so only the one being written can be partial.
            if index == len(lines) - 1:
                break
            raise NotARunError(f"{path}: line {index + 1} is not valid JSON ({err})") from err
        if not isinstance(row, dict):
            raise NotARunError(f"{path}: line {index + 1} is not a metrics row (a JSON object)")
        rows.append(row)
    return rows


class MetricsRepair(NamedTuple):
    restored: list[int]
    """Updates whose rows were missing or cut short and came back from the checkpoint."""
    missing: list[int]
    """Updates up to the checkpoint whose rows are gone for good."""


def restore_metrics(
    run_dir: Path, updates_done: int, carried: list[dict[str, Any]]
) -> MetricsRepair:
    """Makes ``metrics.jsonl`` hold the rows of updates 1 to ``updates_done`` of a resumed run.

    Rows past ``updates_done`` (written after the checkpoint) and lines that are not whole rows
    (cut short by a killed process) are dropped; rows the file lacks are restored from
    ``carried``, the rows of the checkpoint's last chunk (``MetricsWriter.sync``). The file is
    replaced atomically.
    """
    path = Path(run_dir) / METRICS_FILE
    writes.require_file_or_absent(path)  # before reading it too: a FIFO would block the read
    lines: dict[int, str] = {}
    text = read_text(path) if path.exists() else ""
    for line in text.splitlines():
        try:
            update = json.loads(line)["update"]
        except (ValueError, TypeError, KeyError, RecursionError):
            continue
        if isinstance(update, int) and 1 <= update <= updates_done:
            lines.setdefault(update, line)
    restored = []
    for row in carried:
        update = row.get("update")
        if isinstance(update, int) and 1 <= update <= updates_done and update not in lines:
            lines[update] = json.dumps(row)
            restored.append(update)
    missing = [u for u in range(1, updates_done + 1) if u not in lines]
    new_text = "".join(lines[u] + "\n" for u in sorted(lines))
    if new_text != text and (path.exists() or new_text):
        writes.replace_file(path, new_text.encode("utf-8"))
    return MetricsRepair(sorted(restored), missing)


class Evaluations(NamedTuple):
    """The evaluations of a run (``--eval-every``), ``E`` of them, ``S`` seeds."""

    updates: np.ndarray
    """``[E]`` int64, updates done before each."""
    frames: np.ndarray
    """``[E]`` int64, frames per agent at each."""
    returns: np.ndarray
    """``[S, E]`` float64, each seed's mean return over the evaluation's episodes (NaN: none
    finished)."""
    lengths: np.ndarray
    """``[S, E]`` float64, their mean length."""


EVAL_RETURN = "eval/return"


EVAL_LENGTH = "eval/length"


def evaluations_of_rows(rows: list[dict[str, Any]], num_seeds: int) -> Evaluations | None:
    """The evaluations recorded in ``metrics.jsonl`` rows, or None if there are none."""
    rows = [row for row in rows if EVAL_RETURN in row["per_seed"]]
    if not rows:
        return None
    return Evaluations(
        updates=np.asarray([row["update"] for row in rows], np.int64),
        frames=np.asarray([row["frames"] for row in rows], np.int64),
        returns=per_seed_column(rows, EVAL_RETURN, num_seeds),
        lengths=per_seed_column(rows, EVAL_LENGTH, num_seeds),
    )


def read_evaluations(run_dir: Path, num_seeds: int) -> Evaluations | None:
    """The evaluations a run's ``metrics.jsonl`` holds (None: none, or no file)."""
    path = Path(run_dir) / METRICS_FILE
    return evaluations_of_rows(read_metrics_rows(path), num_seeds) if path.exists() else None


@dataclasses.dataclass(frozen=True)
class Run:
    """One run directory, read as far as it has been written. ``S`` seeds, ``U`` updates."""

    path: Path
    record: ConfigRecord
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
    summary: Summary | None
    """``summary.json``, or None while the run is in progress."""
    evaluations: Evaluations | None = None
    """The run's evaluations (``--eval-every``); None: it made none."""

    @property
    def status(self) -> str:
        """``finished``, ``interrupted`` (stopped by a signal, resumable) or ``in progress``."""
        if self.summary is None:
            return "in progress"
        return "interrupted" if self.summary.interrupted else "finished"

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def algo(self) -> str:
        return self.record.algo

    @property
    def env(self) -> str:
        return str(self.record.config["env"])

    @property
    def num_seeds(self) -> int:
        return int(self.returns.shape[0])


def load_run(path: str | Path) -> Run:
    """Reads a run directory, finished or in progress.

    Raises:
        NotARunError: ``path`` has no readable ``config.json`` of a purerl run, or its
            ``metrics.jsonl`` has a corrupt line before the last or rows of another format.
    """
    run_dir = Path(path)
    if not run_dir.is_dir():
        raise NotARunError(f"{run_dir} is not a run directory: no such directory")
    record = read_config(run_dir)
    metrics_path = run_dir / METRICS_FILE
    # A run that is still compiling may not have created metrics.jsonl yet: no updates.
    rows = read_metrics_rows(metrics_path) if metrics_path.exists() else []
    summary = read_summary(run_dir)
    # An interrupted run that was resumed keeps its old summary until it ends again.
    if summary is not None and rows and summary.num_updates != rows[-1].get("update"):
        summary = None
    try:
        return run_from_rows(run_dir, record, rows, summary)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as err:
        raise NotARunError(
            f"{metrics_path} does not hold purerl metrics rows ({type(err).__name__}: {err})"
        ) from err


def run_from_rows(
    run_dir: Path, record: ConfigRecord, rows: list[dict[str, Any]], summary: Summary | None
) -> Run:
    """Assembles a ``Run`` from parsed ``metrics.jsonl`` rows (any may be malformed)."""
    if rows:
        num_seeds = len(rows[0]["per_seed"]["episode/return"])
    else:
        num_seeds = int(record.config.get("num_seeds", 1))

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
        evaluations=evaluations_of_rows(rows, num_seeds),
    )


def per_seed_column(rows: list[dict[str, Any]], metric: str, num_seeds: int) -> np.ndarray:
    """``[S, U]`` float64 values of ``metric`` from each row's ``per_seed``; null -> NaN."""
    out = np.full((num_seeds, len(rows)), np.nan)
    for column, row in enumerate(rows):
        values = row["per_seed"].get(metric, [None] * num_seeds)
        out[:, column] = [np.nan if v is None else v for v in values]
    return out
